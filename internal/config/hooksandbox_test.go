package config

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestLoad_HooksSandbox(t *testing.T) {
	cfg, dir := mustLoad(t, minimalWith("hooks:\n  after_run: git push\n  sandbox:\n"+
		"    read_paths: [~/.ssh/deploy_key, $KEYS/known_hosts, keys]\n    write_paths: [/srv/mirror.git]\n"),
		map[string]string{"HOME": "/home/op", "KEYS": "/etc/sortie"})
	sb := cfg.Hooks.Sandbox
	if want := []string{"/home/op/.ssh/deploy_key", "/etc/sortie/known_hosts", filepath.Join(dir, "keys")}; !slices.Equal(sb.ReadPaths, want) {
		t.Errorf("hooks.sandbox.read_paths = %q, want %q (~, $VAR and relative paths as agent.sandbox's)", sb.ReadPaths, want)
	}
	if want := []string{"/srv/mirror.git"}; !slices.Equal(sb.WritePaths, want) {
		t.Errorf("hooks.sandbox.write_paths = %q, want %q", sb.WritePaths, want)
	}
}

func TestLoad_HooksSandboxProblems(t *testing.T) {
	for _, tc := range []struct{ yaml, severity, want string }{
		{"hooks:\n  sandbox: {read_paths: [$NOPE/key]}\n", SeverityError, "hooks.sandbox.read_paths[0]"},
		{"hooks:\n  sandbox: {write_paths: /srv/x}\n", SeverityError, "config: hooks.sandbox.write_paths: must be a list of strings"},
		{"hooks:\n  sandbox: {mode: off}\n", SeverityWarning, "hooks.sandbox.mode"},
	} {
		_, problems, _ := checkFrontMatter(t, minimalWith(tc.yaml), nil)
		if !hasProblemContaining(problems, tc.severity, tc.want) {
			t.Errorf("%q: want a %s naming %q, got:\n%s", tc.yaml, tc.severity, tc.want, problemLines(problems))
		}
	}
}

// hasProblemContaining reports whether ps holds a problem of severity whose text
// contains want.
func hasProblemContaining(ps []Problem, severity, want string) bool {
	return slices.ContainsFunc(ps, func(p Problem) bool { return p.Severity == severity && strings.Contains(p.String(), want) })
}
