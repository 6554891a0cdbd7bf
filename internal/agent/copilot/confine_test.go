package copilot

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sortie/internal/agent"
	"sortie/internal/agent/sandbox"
	"sortie/internal/testkit/fakemodel"
)

// confineEnv makes the test binary act as `sortie confine` when started with "confine".
const confineEnv = "COPILOT_CONTRACT_CONFINE"

func confineMain(args []string) int {
	p, argv, err := sandbox.ParseArgs(args)
	if err == nil {
		err = sandbox.Exec(p, argv, os.Environ())
	}
	os.Stderr.WriteString("confine: " + err.Error() + "\n")
	return 126
}

// TestContract_ConfinedCLIWorksInItsWorkspaceOnly: the real CLI, confined, runs the
// Bash tool the model asks for: the write in its workspace lands, the read of a hidden
// file and the write outside fail, and the turn still completes with its usage.
func TestContract_ConfinedCLIWorksInItsWorkspaceOnly(t *testing.T) {
	if _, err := sandbox.Available(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI needs Landlock to test confinement: %v", err)
		}
		t.Skipf("skipped: confinement needs Landlock: %v", err)
	}
	state := t.TempDir()
	secret := filepath.Join(state, "sortie.db")
	if err := os.WriteFile(secret, []byte("daemon-secret-4711"), 0o600); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "escaped")
	script := "printf inside > out.txt; (cat " + secret + " > leak.txt) 2>/dev/null; (printf x > " + outside + ") 2>/dev/null; " +
		"echo done > status.txt"
	r := newRig(t, nil,
		fakemodel.Reply{Text: "Trying.", ToolUses: []fakemodel.ToolUse{{Name: "bash",
			Input: map[string]any{"command": script, "description": "try"}}},
			Usage: fakemodel.Usage{InputTokens: 10, OutputTokens: 2}},
		fakemodel.Reply{ToolUses: []fakemodel.ToolUse{done("tried")}, Usage: fakemodel.Usage{InputTokens: 20, OutputTokens: 3}},
	)
	r.env = append(r.env, confineEnv+"=1", "TMPDIR="+t.TempDir())
	tmp := agent.EnvValue(r.env, "TMPDIR")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	policy := sandbox.Policy{
		Write: append([]string{r.ws, tmp, filepath.Dir(r.argvLog)}, sandbox.SystemWrite...),
		// The rig's wrapper script execs the pinned CLI from .tools, which a real
		// agent.command would name itself.
		Read: append(append(append([]string(nil), sandbox.SystemRead...), agent.PathRoots(r.env)...), agent.InstallRoots(r.cli)...),
		Hide: []string{state},
	}
	s := r.start(t, agent.StartParams{Confine: &agent.Confinement{Self: self, Policy: policy}})
	o := r.turn(t, context.Background(), s, 1, "Try things.")
	mustComplete(t, o)

	if b, err := os.ReadFile(filepath.Join(r.ws, "status.txt")); err != nil || strings.TrimSpace(string(b)) != "done" {
		t.Fatalf("status.txt = %q, %v: the confined Bash tool did not run to its end", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(r.ws, "out.txt")); err != nil || string(b) != "inside" {
		t.Errorf("out.txt = %q, %v: a write in the workspace must work confined", b, err)
	}
	if b, _ := os.ReadFile(filepath.Join(r.ws, "leak.txt")); strings.Contains(string(b), "daemon-secret-4711") {
		t.Errorf("leak.txt holds the hidden file's content: confinement let the agent read the daemon's state")
	}
	if _, err := os.Stat(outside); err == nil {
		t.Errorf("%s exists: the confined agent wrote outside its workspace", outside)
	}
	if o.res.Usage.Output != 5 {
		t.Errorf("usage = %+v, want the model's 5 output tokens (from the usage file in its private directory)", o.res.Usage)
	}
}
