package workspace

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestGitEnv_AppendsAfterTheOperatorsEntries(t *testing.T) {
	for _, tc := range []struct {
		name  string
		env   []string
		first int // the index of core.hooksPath
	}{
		{"none", []string{"PATH=/bin"}, 0},
		{"two of the operator's", []string{"GIT_CONFIG_COUNT=2", "GIT_CONFIG_KEY_0=a.b", "GIT_CONFIG_VALUE_0=1", "GIT_CONFIG_KEY_1=c.d", "GIT_CONFIG_VALUE_1=2"}, 2},
		{"a count that is not a number", []string{"GIT_CONFIG_COUNT=x"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := GitEnv(tc.env)
			idx := strconv.Itoa
			if !slices.Contains(env, "GIT_CONFIG_KEY_"+idx(tc.first)+"=core.hooksPath") ||
				!slices.Contains(env, "GIT_CONFIG_VALUE_"+idx(tc.first)+"=/dev/null") {
				t.Errorf("core.hooksPath=/dev/null is not entry %d: %v", tc.first, env)
			}
			if !slices.Contains(env, "GIT_CONFIG_COUNT="+strconv.Itoa(tc.first+len(gitNeutralConfig))) || !slices.Contains(env, "GIT_CONFIG_NOSYSTEM=1") {
				t.Errorf("GIT_CONFIG_COUNT or GIT_CONFIG_NOSYSTEM wrong: %v", env)
			}
			for _, kv := range tc.env {
				if !strings.HasPrefix(kv, "GIT_CONFIG_COUNT=") && !slices.Contains(env, kv) {
					t.Errorf("lost %s", kv)
				}
			}
		})
	}
}

// TestRunHook_PlantedGitTriggersDoNotRun is the git half of the hook door: an agent
// writes every trigger git offers under a known name (a .git/hooks script,
// core.hooksPath, core.fsmonitor, diff.external, commit signing with its own gpg
// program, the ext:: transport, core.sshCommand, core.gitProxy), and an operator's
// after_run that commits, diffs, pushes and lists a git:// remote runs none of them,
// while its commit lands.
func TestRunHook_PlantedGitTriggersDoNotRun(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	m, ws := hookWorkspace(t, 0)
	ran := filepath.Join(t.TempDir(), "ran")
	evil := filepath.Join(ws.Path, "evil.sh")
	write := func(path, body string, mode os.FileMode) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
	}
	write(evil, "#!/bin/sh\necho \"$0 $*\" >> "+ran+"\ncat\n", 0o755)
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = ws.Path
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q")
	git("-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "base")
	for _, h := range []string{"pre-commit", "commit-msg", "post-commit", "pre-push", "post-checkout"} {
		write(filepath.Join(ws.Path, ".git", "hooks", h), "#!/bin/sh\n"+evil+" hook-"+h+"\n", 0o755)
		write(filepath.Join(ws.Path, "planted-hooks", h), "#!/bin/sh\n"+evil+" hookspath-"+h+"\n", 0o755)
	}
	for _, kv := range [][2]string{
		{"core.fsmonitor", evil},
		{"diff.external", evil},
		{"commit.gpgSign", "true"},
		{"gpg.program", evil},
		{"protocol.ext.allow", "always"},
		{"remote.x.url", "ext::" + evil + " ext"},
		{"core.sshCommand", evil},
		{"remote.s.url", "ssh://example.invalid/r.git"},
		{"core.gitProxy", evil},
	} {
		git("config", kv[0], kv[1])
	}

	script := `set -e
git add -A
git -c user.name=op -c user.email=op@example.com commit -qm wip
echo change >> f && git diff >/dev/null && git diff --quiet || true
git push x HEAD 2>/dev/null || true
git push s HEAD 2>/dev/null || true
git ls-remote git://127.0.0.1:1/r 2>/dev/null || true
git checkout -q -B other`
	// First .git/hooks, then core.hooksPath, which hides .git/hooks.
	for _, hooksPath := range []bool{false, true} {
		if hooksPath {
			git("config", "core.hooksPath", filepath.Join(ws.Path, "planted-hooks"))
		}
		if err := m.RunHook(t.Context(), HookAfterRun, script, ws, testIssue, nil); err != nil {
			t.Errorf("the hook failed (core.hooksPath set: %v): %v", hooksPath, err)
		}
	}
	if got, err := os.ReadFile(ran); err == nil {
		t.Errorf("planted git configuration ran:\n%s", got)
	}
	out, err := exec.Command("git", "-C", ws.Path, "log", "--format=%s").Output()
	if err != nil || !strings.HasPrefix(string(out), "wip\nwip\nbase") {
		t.Errorf("the hook's commit did not land: git log = %q, %v", out, err)
	}
}
