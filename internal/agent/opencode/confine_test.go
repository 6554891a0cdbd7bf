package opencode

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sortie/internal/agent"
	"sortie/internal/agent/agenttest"
	"sortie/internal/agent/remote"
	"sortie/internal/agent/statedir"
	"sortie/internal/testkit/clis"
	"sortie/internal/testkit/fakemodel"
)

// TestContract_ConfinedCLIWorksInItsWorkspaceOnly: the real CLI, confined, with its
// isolated state directories the only others it may write, runs the bash tool the model
// asks for: the write in its workspace lands, the read of a hidden file and the write
// outside fail, and the turn still completes with its usage.
func TestContract_ConfinedCLIWorksInItsWorkspaceOnly(t *testing.T) {
	r := newRig(t, nil)
	e := clis.NewEscape(t, clis.OpenCode(t), r.WS, &r.Env, filepath.Dir(r.argvFile))
	r.model.Push(
		fakemodel.Reply{Text: "Trying.", ToolUses: []fakemodel.ToolUse{{Name: "bash",
			Input: map[string]any{"command": e.Script, "description": "try"}}},
			Usage: fakemodel.Usage{InputTokens: 10, OutputTokens: 2}},
		fakemodel.Reply{Text: "Done.", Usage: fakemodel.Usage{InputTokens: 20, OutputTokens: 3}},
	)
	s := r.Start(t, agent.StartParams{Confine: e.Confinement})
	o := r.Turn(t, s, 1, "Try things.")
	agenttest.MustComplete(t, o)
	e.Check(t)
	if o.Result.Usage.Output != 5 {
		t.Errorf("usage = %+v, want the model's 5 output tokens", o.Result.Usage)
	}
}

// TestContract_ConfinedAgentReachesOnlyItsIssuesState: the real CLI, confined, runs a
// shell command that tries to plant a git setting hooks would run unconfined, a plugin
// in its configuration directory, a tool in the user's cache, to change the operator's
// credentials, and to read another issue's sessions. All of it fails; reading git's
// configuration works.
func TestContract_ConfinedAgentReachesOnlyItsIssuesState(t *testing.T) {
	r := newRig(t, nil)
	gitCfg := filepath.Join(r.home, ".config", "git", "config")
	writeFile(t, gitCfg, "[user]\n\tname = operator-4711\n")
	auth := filepath.Join(r.home, ".local", "share", "opencode", "auth.json")
	writeFile(t, auth, "{}")
	userCache := filepath.Join(r.home, ".cache", "opencode")
	if err := os.MkdirAll(userCache, 0o700); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(statedir.Dir([]string{"SORTIE_ISSUE_ID=other"}, Kind, r.state, "", "/elsewhere"), "data", "opencode", "session.txt")
	writeFile(t, other, "other-issue-7")

	e := clis.NewEscape(t, clis.OpenCode(t), r.WS, &r.Env, filepath.Dir(r.argvFile))
	r.Env = append(r.Env, "SORTIE_ISSUE_ID=this")
	script := e.Script + "; (printf '[core]\\n\\tfsmonitor = touch /tmp/pwned\\n' >> " + remote.Quote(gitCfg) + ") 2>/dev/null" +
		`; (mkdir -p "$XDG_CONFIG_HOME/opencode/plugin" && printf x > "$XDG_CONFIG_HOME/opencode/plugin/evil.js") 2>/dev/null` +
		"; (printf x > " + remote.Quote(filepath.Join(userCache, "evil")) + ") 2>/dev/null" +
		"; (printf x >> " + remote.Quote(auth) + ") 2>/dev/null" +
		"; (cat " + remote.Quote(other) + " > leak-other.txt) 2>/dev/null" +
		"; git config --global user.name > gitname.txt 2>&1; echo done > status2.txt"
	r.model.Push(
		fakemodel.Reply{Text: "Trying.", ToolUses: []fakemodel.ToolUse{{Name: "bash",
			Input: map[string]any{"command": script, "description": "try"}}}},
		fakemodel.Reply{Text: "Done."},
	)
	s := r.Start(t, agent.StartParams{Confine: e.Confinement})
	agenttest.MustComplete(t, r.Turn(t, s, 1, "Try things."))
	e.Check(t)
	if b, err := os.ReadFile(filepath.Join(r.WS, "status2.txt")); err != nil || strings.TrimSpace(string(b)) != "done" {
		t.Fatalf("status2.txt = %q, %v: the script did not run to its end", b, err)
	}
	if b, _ := os.ReadFile(gitCfg); strings.Contains(string(b), "fsmonitor") {
		t.Errorf("the agent wrote git's configuration, which hooks use outside the confinement:\n%s", b)
	}
	if b, _ := os.ReadFile(filepath.Join(r.WS, "gitname.txt")); strings.TrimSpace(string(b)) != "operator-4711" {
		t.Errorf("git config user.name = %q, want git's configuration readable", b)
	}
	if _, err := os.Stat(filepath.Join(userCache, "evil")); err == nil {
		t.Errorf("the agent wrote the user's ~/.cache/opencode")
	}
	if b, _ := os.ReadFile(auth); string(b) != "{}" {
		t.Errorf("the agent changed the operator's auth.json: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(r.WS, "leak-other.txt")); strings.Contains(string(b), "other-issue-7") {
		t.Errorf("the agent read another issue's OpenCode data")
	}
	planted := filepath.Join(statedir.Dir(r.Env, Kind, r.state, "", r.WS), "config", "opencode", "plugin", "evil.js")
	if _, err := os.Stat(planted); err == nil {
		t.Errorf("the agent planted %s, which the next turn's CLI would load", planted)
	}
}
