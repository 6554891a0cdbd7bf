package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	// config checks agent.kind and the codex: block against the agent registry, which
	// the adapters fill when they are linked in, as in cmd/sortie.
	_ "sortie/internal/agent/all"
)

// fakeEnv is an injected environment; tests never read or change the real one.
func fakeEnv(vars map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
}

// baseEnv is the environment every test gets unless it says otherwise.
func baseEnv() map[string]string {
	return map[string]string{"HOME": "/home/op", "TMPDIR": "/scratch"}
}

// minimal is the smallest valid front matter: the file tracker and the mock agent.
const minimal = `tracker:
  kind: file
  path: issues.json
  active_states: [Todo]
agent:
  kind: mock
`

// writeFile writes content to dir/name and returns the absolute path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// checkFrontMatter writes a WORKFLOW.md with the given front matter in a temp dir and
// runs Check with env layered over baseEnv.
func checkFrontMatter(t *testing.T, frontMatter string, env map[string]string) (*Config, []Problem, string) {
	t.Helper()
	dir := t.TempDir()
	path := writeFile(t, dir, "WORKFLOW.md", "---\n"+frontMatter+"---\nDo {{ .issue.title }}\n")
	vars := baseEnv()
	for k, v := range env {
		vars[k] = v
	}
	cfg, problems := Check(path, Options{Env: fakeEnv(vars)})
	return cfg, problems, dir
}

// mustLoad is checkFrontMatter for files that must load; it fails on any error.
func mustLoad(t *testing.T, frontMatter string, env map[string]string) (*Config, string) {
	t.Helper()
	cfg, problems, dir := checkFrontMatter(t, frontMatter, env)
	if cfg == nil {
		t.Fatalf("Check failed:\n%s", problemLines(problems))
	}
	return cfg, dir
}

func problemLines(ps []Problem) string {
	var b strings.Builder
	for _, p := range ps {
		b.WriteString("  " + p.Severity + ": " + p.String() + "\n")
	}
	return b.String()
}

// hasProblem reports whether ps contains a problem of severity rendering exactly as want.
func hasProblem(ps []Problem, severity, want string) bool {
	return slices.ContainsFunc(ps, func(p Problem) bool { return p.Severity == severity && p.String() == want })
}
