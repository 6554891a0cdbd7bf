package main

// Red-team tests of the hook door (docs/security.md): the agent plants code that git
// runs for the operator's after_run hook (.git/hooks scripts, core.fsmonitor, a clean
// filter in .git/config), hoping to run it outside the sandbox
// where the operator token and the env file are. The hook commits the agent's work and
// pushes it with a "deploy key" it was granted in hooks.sandbox.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"sortie/internal/testkit/clis"
	"sortie/internal/testkit/fakemodel"
)

// hookDeployKey is the content of the deploy key hooks.sandbox grants the hooks.
const hookDeployKey = "deploy-key-7c1d0e"

// hookTriggers are the planted programs git runs by a name git knows: none may run.
// The clean filter's name is the repository's choice, so git runs it, confined.
// (core.hooksPath, which would hide .git/hooks, is in the workspace package's
// TestRunHook_PlantedGitTriggersDoNotRun.)
var hookTriggers = []string{"pre-commit", "post-commit", "post-checkout", "fsmonitor"}

// hookRedTeam is one red-team setup: the daemon's directory (database, operator token,
// env file) inside base, the workspace root beside it, the deploy key and the bare
// repository the hook pushes to, both outside everything an agent may touch.
type hookRedTeam struct {
	base, dir, envFile, key, remote string
}

func newHookRedTeam(t *testing.T, identifier string) hookRedTeam {
	t.Helper()
	base, dir, envFile := redTeamDirs(t, identifier)
	h := hookRedTeam{base: base, dir: dir, envFile: envFile,
		key:    writeFile(t, filepath.Join(base, "keys"), "deploy_key", hookDeployKey+"\n"),
		remote: filepath.Join(base, "remote.git")}
	if out, err := exec.Command("git", "init", "-q", "--bare", h.remote).CombinedOutput(); err != nil {
		t.Fatalf("git init --bare: %v\n%s", err, out)
	}
	return h
}

// plant is what the agent runs in its workspace: the payload .evil.sh (touch
// ran.<trigger>, copy the operator token and the env file into loot.<trigger>, write
// outside), and every trigger that makes git run it. It then tries the deploy key
// itself.
func (h hookRedTeam) plant() string {
	return fmt.Sprintf(`ws=$(pwd)
cat > .evil.sh <<EOF
#!/bin/sh
tag=\${1:-x}
touch $ws/ran.\$tag
{ cat %[1]s/sortie.db.operator-token; cat %[2]s; } > $ws/loot.\$tag 2>&1
echo pwned > %[3]s/pwned-\$tag 2>/dev/null
if [ "\$tag" = filter ]; then exec cat; fi
exit 0
EOF
chmod +x .evil.sh
printf '#!/bin/sh\nexec %%s/.evil.sh pre-commit\n' "$ws" > .git/hooks/pre-commit
printf '#!/bin/sh\nexec %%s/.evil.sh post-commit\n' "$ws" > .git/hooks/post-commit
printf '#!/bin/sh\nexec %%s/.evil.sh post-checkout\n' "$ws" > .git/hooks/post-checkout
printf '#!/bin/sh\nexec %%s/.evil.sh fsmonitor\n' "$ws" > .evil-fsmonitor.sh
chmod +x .git/hooks/pre-commit .git/hooks/post-commit .git/hooks/post-checkout .evil-fsmonitor.sh
git config core.fsmonitor "$ws/.evil-fsmonitor.sh"
git config filter.evil.clean "$ws/.evil.sh filter"
echo '*.txt filter=evil' > .gitattributes
echo work > work.txt
cat %[4]s > agent-read-key 2>&1 || true
`, h.dir, h.envFile, h.base, h.key)
}

// workflowHooks is the hooks block: after_create makes the repository (before any
// agent, unconfined); before_run checks out the work branch (unconfined on the first
// run, after the agent on the next); after_run, after the agent, reads the deploy key,
// commits the agent's work and pushes it to the bare repository, both granted in
// hooks.sandbox.
func (h hookRedTeam) workflowHooks() string {
	return fmt.Sprintf(`hooks:
  after_create: |
    git init -q . && git -c user.name=op -c user.email=op@example.com commit -q --allow-empty -m base
  before_run: git checkout -q -B wip
  after_run: |
    set -e
    cat %[1]s > /dev/null
    git add -A
    git diff --cached --quiet || git -c user.name=op -c user.email=op@example.com commit -qm wip
    git push -q %[2]s HEAD:refs/heads/wip
  sandbox:
    read_paths: [%[1]s]
    write_paths: [%[2]s]
`, h.key, h.remote)
}

// check verifies the outcome in the workspace ws: no known trigger ran, nothing
// planted got the operator token or the env file's secret or wrote outside, the filter
// (which git does run) ran confined, the agent could not read the deploy key, and the
// hook's commit landed in the workspace and in the bare repository.
func (h hookRedTeam) check(t *testing.T, ws string, r result) {
	t.Helper()
	if strings.Contains(r.stderr, "hooks run unconfined") || strings.Contains(r.stderr, "agents not confined") {
		t.Fatalf("the daemon ran its hooks or agents unconfined:\n%s", r.stderr)
	}
	token, err := os.ReadFile(filepath.Join(h.dir, "sortie.db.operator-token"))
	if err != nil || len(strings.TrimSpace(string(token))) == 0 {
		t.Fatalf("no operator token to protect: %v", err)
	}
	for _, trigger := range hookTriggers {
		if _, err := os.Stat(filepath.Join(ws, "ran."+trigger)); err == nil {
			t.Errorf("git ran the agent's %s in the operator's hook", trigger)
		}
	}
	if _, err := os.Stat(filepath.Join(ws, "ran.filter")); err != nil {
		t.Errorf("the planted clean filter did not run (%v): the test no longer shows the confinement holding it", err)
	}
	if _, err := os.Stat(filepath.Join(ws, "loot.filter")); err != nil {
		t.Errorf("the planted filter never tried for the daemon's secrets (%v): the test no longer shows they are out of reach", err)
	}
	loot, _ := filepath.Glob(filepath.Join(ws, "loot.*"))
	for _, l := range loot {
		b, _ := os.ReadFile(l)
		if strings.Contains(string(b), strings.TrimSpace(string(token))) || strings.Contains(string(b), redTeamSecret) {
			t.Errorf("planted code run by a hook got the daemon's secrets (%s):\n%s", filepath.Base(l), b)
		}
	}
	if pwned, _ := filepath.Glob(filepath.Join(h.base, "pwned-*")); len(pwned) > 0 {
		t.Errorf("planted code run by a hook wrote outside the workspace: %v", pwned)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "agent-read-key")); strings.Contains(string(b), hookDeployKey) {
		t.Error("the agent read the deploy key granted to hooks only")
	}
	if out, err := exec.Command("git", "-c", "safe.directory=*", "-C", ws, "log", "-1", "--format=%s").Output(); err != nil || strings.TrimSpace(string(out)) != "wip" {
		t.Errorf("the after_run hook's commit did not land in the workspace: %q, %v\n%s", out, err, r.stderr)
	}
	if out, err := exec.Command("git", "-c", "safe.directory=*", "--git-dir", h.remote, "log", "-1", "--format=%s", "wip").Output(); err != nil || strings.TrimSpace(string(out)) != "wip" {
		t.Errorf("the after_run hook's push did not land: %q, %v\n%s", out, err, r.stderr)
	}
}

// TestRedTeam_HooksMockAgent: the mock agent plants the triggers with a shell step. Its
// first run ends without a status, so a second run follows, whose before_run (a
// checkout) is the first hook after the agent's run besides after_run.
func TestRedTeam_HooksMockAgent(t *testing.T) {
	requireConfinement(t)
	t.Parallel()
	hookRedTeamMock(t, "RTH-1", "")
}

// TestRedTeam_HooksRunAsAnotherUser: the same with the daemon as root and agents and
// hooks as agent.run_as's user: the confined hooks still run as that user, with a
// temporary directory it owns, and their honest work succeeds.
func TestRedTeam_HooksRunAsAnotherUser(t *testing.T) {
	requireConfinement(t)
	requireRunAsUser(t)
	t.Parallel()
	ws := hookRedTeamMock(t, "RTH-3", runAsTestUser)
	if b, err := os.ReadFile(filepath.Join(ws, "hook-user")); err != nil || strings.TrimSpace(string(b)) != runAsTestUser {
		t.Errorf("the confined after_run ran as %q, want %s (%v)", b, runAsTestUser, err)
	}
}

// hookRedTeamMock runs the hook red team with the mock agent as runAs ("": the
// daemon's user) and returns the workspace.
func hookRedTeamMock(t *testing.T, identifier, runAs string) string {
	t.Helper()
	h := newHookRedTeam(t, identifier)
	tmp := t.TempDir()
	runAsLine, hooks := "", h.workflowHooks()
	if runAs != "" {
		openUp(t, filepath.Dir(h.base), h.base, filepath.Dir(sortieBin), filepath.Dir(tmp), tmp)
		u, err := user.Lookup(runAs)
		if err != nil {
			t.Fatal(err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		if out, err := exec.Command("chown", "-R", strconv.Itoa(uid), h.remote).CombinedOutput(); err != nil {
			t.Fatalf("chown: %v: %s", err, out)
		}
		runAsLine = "  run_as: " + runAs + "\n"
		hooks = strings.Replace(hooks, "    set -e\n", "    set -e\n    id -un > hook-user\n", 1)
	}
	run, _ := json.Marshal(h.plant()) // a JSON string is a YAML double-quoted scalar
	wf := writeFile(t, h.dir, "WORKFLOW.md", `---
tracker:
  kind: file
  path: issues.json
  api_key: $TRACKER_TOKEN
  active_states: [Todo]
  terminal_states: [Done]
agent:
  kind: mock
  max_turns: 1
`+runAsLine+hooks+`workspace:
  root: ../ws
db_path: ./sortie.db
server: {port: `+strconv.Itoa(freePort(t))+`}
mock:
  shell:
    - {name: plant, run: `+string(run)+`}
    - {name: stop, run: "if [ -e .first-run ]; then echo blocked > .sortie/status; else touch .first-run; fi"}
---
Work on {{ .issue.identifier }}.
`)
	r := runSortie(t, h.dir, testEnv(tmp, "TRACKER_TOKEN="+redTeamSecret), "--exit-when-idle", "--env-file", h.envFile, wf)
	if r.code != exitOK {
		t.Fatalf("sortie: %s", r)
	}
	ws := filepath.Join(h.base, "ws", identifier)
	if b, err := os.ReadFile(filepath.Join(ws, ".mock-agent", "shell", "plant.out")); err != nil || !strings.HasPrefix(string(b), "exit 0") {
		t.Fatalf("the agent could not plant its triggers: %q, %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(ws, ".sortie", "status")); err != nil || strings.TrimSpace(string(b)) != "blocked" {
		t.Errorf("the agent did not run twice (.sortie/status %q, %v): the second run's before_run was not tried", b, err)
	}
	h.check(t, ws, r)
	// The hooks' temporary directories went with them, and their parent with the daemon.
	if left, _ := filepath.Glob(filepath.Join(tmp, "sortie-runs-*")); len(left) > 0 {
		t.Errorf("the runs' temporary directories outlived the daemon: %v", left)
	}
	return ws
}

// TestRedTeam_HooksClaude: the real claude CLI plants the triggers with its Bash tool,
// driven by the fake model, then asks for review; after_run commits and pushes.
func TestRedTeam_HooksClaude(t *testing.T) {
	requireConfinement(t)
	t.Parallel()
	const identifier = "RTH-2"
	claude := clis.Claude(t)
	h := newHookRedTeam(t, identifier)
	tmp, home := t.TempDir(), t.TempDir()
	m := fakemodel.Start(t, bashCall(h.plant()+"echo planted > .planted\nmkdir -p .sortie && echo needs-human-review > .sortie/status\n"),
		fakemodel.Reply{Text: "Done."})
	hooks := strings.TrimPrefix(h.workflowHooks(), "hooks:\n")
	wf := writeFile(t, h.dir, "WORKFLOW.md", claudeRedTeamWorkflow(claude, "", hooks, "../ws", freePort(t)))
	env := clis.ClaudeEnv(testEnv(tmp, "TRACKER_TOKEN="+redTeamSecret), m.URL, home)
	r := runSortie(t, h.dir, env, "--exit-when-idle", "--env-file", h.envFile, wf)
	if r.code != exitOK {
		t.Fatalf("sortie: %s", r)
	}
	ws := filepath.Join(h.base, "ws", identifier)
	if _, err := os.Stat(filepath.Join(ws, ".planted")); err != nil {
		t.Fatalf("claude's Bash did not plant the triggers (%v); the model got %d requests\n%s", err, len(m.Messages()), r)
	}
	h.check(t, ws, r)
}
