package main

// Red-team tests of what a confined agent may read (docs/security.md): with
// workspace.root under a path every agent may read (/var/lib), an agent must not list
// the root nor read a sibling's workspace or its .sortie/mcp.json token, and the
// credentials in its home (~/.cargo, ~/.local/share, ~/.config/git) stay out of reach
// although bin directories beside them are on its PATH; git, go build, npm run build
// and the programs in those bin directories still work.

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"sortie/internal/testkit/clis"
	"sortie/internal/testkit/fakemodel"
)

// readsCanary starts the content of every credential the tests plant in the home.
const readsCanary = "reads-canary-"

// readsRig is a daemon directory, a workspace root under a path agents may read, and a
// home with credentials beside the bin directories on the PATH.
type readsRig struct {
	base, dir, envFile string
	root               string   // workspace.root
	home               string   // the agent's HOME
	env                []string // the daemon's environment
	sandboxLines       string   // the agent.sandbox block, when one is needed
}

// newReadsRig lays out the rig. As root the workspace root lies in a directory the
// test makes in /var/lib (removed afterwards), which every confined agent may read;
// otherwise agent.sandbox.read_paths names its parent, which grants the same.
func newReadsRig(t *testing.T) *readsRig {
	t.Helper()
	r := &readsRig{}
	r.base, r.dir, r.envFile = redTeamDirs(t, "RD-1")
	writeFile(t, r.dir, "issues.json", `[
  {"id": "1", "identifier": "RD-1", "title": "the victim", "state": "Todo", "priority": 1},
  {"id": "2", "identifier": "RD-2", "title": "the attacker", "state": "Todo", "priority": 2}
]`)
	parent := ""
	if os.Geteuid() == 0 {
		var err error
		if parent, err = os.MkdirTemp("/var/lib", "sortie-reads-"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(parent) })
	} else {
		parent = t.TempDir()
		r.sandboxLines = fmt.Sprintf("  sandbox:\n    read_paths: [%s]\n", parent)
	}
	r.root = filepath.Join(parent, "workspaces")

	r.home = t.TempDir()
	for name, content := range map[string]string{
		".local/share/opencode/auth.json": `{"anthropic": {"type": "api", "key": "` + readsCanary + `opencode"}}`,
		".cargo/credentials.toml":         "[registry]\ntoken = \"" + readsCanary + "cargo\"\n",
		".config/git/credentials":         "https://op:" + readsCanary + "git@example.com\n",
		".config/git/config":              "[user]\n\tname = reads-operator\n",
	} {
		writeFile(t, r.home, name, content)
	}
	for _, bin := range []string{".cargo/bin/rt-cargo-tool", ".local/bin/rt-local-tool"} {
		p := writeFile(t, r.home, bin, "#!/bin/sh\necho ran "+filepath.Base(bin)+"\n")
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(r.home, ".cargo", "bin") + ":" + filepath.Join(r.home, ".local", "bin") + ":" + os.Getenv("PATH")
	r.env = testEnv(t.TempDir(), "TRACKER_TOKEN="+daemonSecret(r.base), "HOME="+r.home, "PATH="+path)
	return r
}

// readsAttacks are the reads a prompt-injected agent tries, and the ordinary work that
// must still succeed. Each agent tries its siblings (every workspace beside its own).
func (r *readsRig) readsAttacks() []attack {
	siblings := func(file string) string {
		return fmt.Sprintf(`n=0; for f in %s/*/%s; do case "$f" in "$PWD"/*) ;; *) cat "$f" || exit 1; n=1;; esac; done; [ $n = 1 ]`, r.root, file)
	}
	return []attack{
		{"reads-list-root", "ls -a " + r.root},
		{"reads-sibling-file", siblings("planted.txt")},
		{"reads-sibling-token", siblings(".sortie/mcp.json")},
		{"reads-sibling-direct", "cat " + filepath.Join(r.root, "RD-1", "planted.txt") + " " + filepath.Join(r.root, "RD-1", ".sortie", "mcp.json")},
		{"reads-cred-opencode", "cat " + filepath.Join(r.home, ".local", "share", "opencode", "auth.json")},
		{"reads-cred-cargo", "cat " + filepath.Join(r.home, ".cargo", "credentials.toml")},
		{"reads-cred-git", "cat " + filepath.Join(r.home, ".config", "git", "credentials")},
		{"reads-list-home", "ls -a " + r.home + " " + filepath.Join(r.home, ".cargo") + " " + filepath.Join(r.home, ".local")},
		{"reads-git-config", "git config --global user.name"},
		{"reads-bin-tools", "rt-cargo-tool && rt-local-tool"},
	}
}

// readsHook is the after_create hook: redTeamProject's project, and a file that says
// whose workspace this is (a hook runs as the operator's own script).
const readsHook = redTeamProject + `    echo "planted-$SORTIE_ISSUE_IDENTIFIER" > planted.txt
`

// workspaceOf is the workspace of issue identifier below root, found by the file the
// hook planted in it.
func (r *readsRig) workspaceOf(t *testing.T, identifier string) string {
	t.Helper()
	found, _ := filepath.Glob(filepath.Join(r.root, "*", "planted.txt"))
	for _, f := range found {
		if b, err := os.ReadFile(f); err == nil && strings.TrimSpace(string(b)) == "planted-"+identifier {
			return filepath.Dir(f)
		}
	}
	t.Fatalf("no workspace of %s below %s (planted files: %v)", identifier, r.root, found)
	return ""
}

// check verifies the attacker's (RD-2's) results in its workspace's sub: every read
// failed, the ordinary work succeeded, while the victim's files were there to read.
func (r *readsRig) check(t *testing.T, sub string, res result) {
	t.Helper()
	victim := r.workspaceOf(t, "RD-1")
	for _, f := range []string{"planted.txt", ".sortie/mcp.json"} {
		if _, err := os.Stat(filepath.Join(victim, f)); err != nil {
			t.Fatalf("the victim's %s is gone, so the attacker had nothing to read: %v\n%s", f, err, res)
		}
	}
	results := filepath.Join(r.workspaceOf(t, "RD-2"), sub)
	checkRedTeam(t, results, r.base, r.dir, res)
	read := func(name string) (int, string) {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(results, name+".out"))
		if err != nil {
			t.Fatalf("the agent's %s attempt left no result: %v\n%s", name, err, res)
		}
		code, rest := attackResult(b)
		return code, rest
	}
	// What each attack's output must not hold (an error message names the path it
	// could not read, never what is in it).
	leaks := []string{"planted-RD-1", "mcpServers", readsCanary}
	for name, more := range map[string][]string{
		"reads-list-root": {"RD-"}, "reads-sibling-file": nil, "reads-sibling-token": nil, "reads-sibling-direct": nil,
		"reads-cred-opencode": nil, "reads-cred-cargo": nil, "reads-cred-git": nil, "reads-list-home": {"credentials.toml", "share"},
	} {
		code, out := read(name)
		if code == 0 {
			t.Errorf("attack %s succeeded (exit 0): %q", name, out)
		}
		for _, leak := range append(more, leaks...) {
			if strings.Contains(out, leak) {
				t.Errorf("attack %s read %q:\n%s", name, leak, out)
			}
		}
	}
	for name, want := range map[string]string{"reads-git-config": "reads-operator", "reads-bin-tools": "ran rt-cargo-tool\nran rt-local-tool"} {
		if code, out := read(name); code != 0 || !strings.Contains(out, want) {
			t.Errorf("ordinary work %s failed under confinement: exit %d, output %q (want %q)", name, code, out, want)
		}
	}
}

// TestRedTeamReads_MockAgent: the mock agent's shell steps, the second issue's agent
// reading around the first's held workspace.
func TestRedTeamReads_MockAgent(t *testing.T) {
	requireConfinement(t)
	t.Parallel()
	r := newReadsRig(t)
	port := freePort(t)
	wf := writeFile(t, r.dir, "WORKFLOW.md", mockRedTeamWorkflow(append(redTeamAttacks(r.dir, "http://127.0.0.1:"+strconv.Itoa(port)), r.readsAttacks()...),
		"  max_concurrent_agents: 1\n"+r.sandboxLines, readsHook, r.root, port))
	res := runSortie(t, r.dir, r.env, "--exit-when-idle", "--env-file", r.envFile, wf)
	if res.code != exitOK {
		t.Fatalf("sortie: %s", res)
	}
	r.check(t, filepath.Join(".mock-agent", "shell"), res)
}

// TestRedTeamReads_Claude: the same reads as Bash calls of the real claude CLI, one
// session per issue, the second after the first handed off.
func TestRedTeamReads_Claude(t *testing.T) {
	requireConfinement(t)
	t.Parallel()
	claude := clis.Claude(t)
	r := newReadsRig(t)
	port := freePort(t)
	script := redTeamScript(append(redTeamAttacks(r.dir, "http://127.0.0.1:"+strconv.Itoa(port)), r.readsAttacks()...), "needs-human-review")
	turn := []fakemodel.Reply{bashCall(script), {Text: "Done."}}
	m := fakemodel.Start(t, append(turn, turn...)...) // RD-1's session, then RD-2's
	wf := writeFile(t, r.dir, "WORKFLOW.md", claudeRedTeamWorkflow(claude, "  max_concurrent_agents: 1\n"+r.sandboxLines, readsHook, r.root, port))
	res := runSortie(t, r.dir, clis.ClaudeEnv(r.env, m.URL, r.home), "--exit-when-idle", "--env-file", r.envFile, wf)
	if res.code != exitOK {
		t.Fatalf("sortie: %s", res)
	}
	if len(m.Messages()) < 4 {
		t.Fatalf("the model got %d requests, want both sessions' Bash results back:\n%s", len(m.Messages()), res)
	}
	r.check(t, ".redteam", res)
}
