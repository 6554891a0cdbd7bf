package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestRedTeam_HookFilterReachesNoSideChannel: the daemon runs inside tmux, with an SSH
// agent and a session bus (startSideChannels). The agent plants a git clean filter, the
// one trigger git still runs in a confined hook (its name is the repository's), that
// connects to those sockets by the paths it can guess; the operator's after_run commits
// the agent's work and so runs it. Confinement alone lets a connect() to a pathname
// socket through (Landlock does not govern it), and a tmux server runs any command it
// is sent outside the sandbox: the hook must get a /tmp of its own, as the agent does.
func TestRedTeam_HookFilterReachesNoSideChannel(t *testing.T) {
	requireConfinement(t)
	t.Parallel()
	sc := startSideChannels(t)
	base, dir, envFile := redTeamDirs(t, "RTH-4")
	tmp := t.TempDir()
	var payload strings.Builder
	payload.WriteString("#!/bin/sh\n")
	for _, name := range []string{"connect-tmux", "connect-dbus", "connect-ssh-agent"} {
		fmt.Fprintf(&payload, "%s%s > \"$WS/filter.%s\" 2>&1\n", connectScript, sc.sockets[name], name)
	}
	payload.WriteString("exec cat\n")
	plant := fmt.Sprintf(`ws=$(pwd)
printf '%%s' %s | sed "s|\$WS|$ws|g" > .filter.sh
chmod +x .filter.sh
git config filter.side.clean "$ws/.filter.sh"
echo '*.txt filter=side' > .gitattributes
echo work > work.txt
`, shellQuote(payload.String()))
	run, _ := json.Marshal(plant)
	wf := writeFile(t, dir, "WORKFLOW.md", `---
tracker:
  kind: file
  path: issues.json
  active_states: [Todo]
  terminal_states: [Done]
agent:
  kind: mock
  max_turns: 1
hooks:
  after_create: git init -q .
  after_run: git add -A && git -c user.name=op -c user.email=op@example.com commit -qm wip
workspace:
  root: ../ws
db_path: ./sortie.db
server: {port: `+strconv.Itoa(freePort(t))+`}
mock:
  status: blocked
  shell:
    - {name: plant, run: `+string(run)+`}
---
Work on {{ .issue.identifier }}.
`)
	r := runSortie(t, dir, testEnv(tmp, sc.env...), "--exit-when-idle", "--env-file", envFile, wf)
	if r.code != exitOK {
		t.Fatalf("sortie: %s", r)
	}
	if strings.Contains(r.stderr, "hooks run unconfined") {
		t.Fatalf("the daemon ran its hooks unconfined:\n%s", r.stderr)
	}
	ws := filepath.Join(base, "ws", "RTH-4")
	if b, err := os.ReadFile(filepath.Join(ws, ".mock-agent", "shell", "plant.out")); err != nil || !strings.HasPrefix(string(b), "exit 0") {
		t.Fatalf("the agent could not plant its filter: %q, %v", b, err)
	}
	ran := false
	for _, name := range []string{"connect-tmux", "connect-dbus", "connect-ssh-agent"} {
		b, err := os.ReadFile(filepath.Join(ws, "filter."+name))
		if err != nil {
			continue
		}
		ran = true
		if strings.Contains(string(b), canaryAnswer) {
			t.Errorf("the planted filter, run by after_run, got an answer from %s: %q", name, b)
		} else if !strings.Contains(string(b), "Error: connect") {
			t.Errorf("the planted filter's connect to %s never ran (node's own refusal is missing): %q", name, b)
		}
	}
	if !ran {
		t.Fatalf("the planted filter did not run in after_run: the test no longer shows the hook's /tmp\n%s", r.stderr)
	}
	for name, n := range sc.answers {
		if got := n.Load(); got > 0 {
			t.Errorf("the canary socket of %s was connected to %d times from a hook", name, got)
		}
	}
}

// shellQuote quotes s for /bin/sh as one word.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
