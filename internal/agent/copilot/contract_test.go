package copilot

// Contract tests of what only Copilot CLI does: the real copilot CLI, at the version
// pinned in scripts/clis, driven through the adapter in BYOK mode against the fake
// Anthropic API in internal/testkit/fakemodel, offline. What every adapter does is the
// agenttest suite's (agenttest_test.go).
//
// Every scripted conversation ends with a task_complete tool call: in autopilot mode
// the CLI keeps asking the model to continue (up to --max-autopilot-continues) until
// the model calls it.

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"sortie/internal/agent"
	"sortie/internal/agent/agenttest"
	"sortie/internal/testkit/clis"
	"sortie/internal/testkit/fakemodel"
)

// model is the model every contract test asks for (CopilotEnv's COPILOT_MODEL), so that
// names are deterministic.
const model = clis.CopilotModel

// patience bounds waits for things already under way (a CLI run, a stall to begin).
const patience = 90 * time.Second

// done is the reply that ends an autopilot turn.
func done(summary string) fakemodel.ToolUse {
	return fakemodel.ToolUse{Name: "task_complete", Input: map[string]any{"summary": summary}}
}

var warmOnce sync.Once

// copilotCLI returns the pinned CLI, its cache unpacked by one run before any test
// times it.
func copilotCLI(t *testing.T) string {
	t.Helper()
	cli := clis.Copilot(t)
	warmOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, cli, "--version")
		cmd.Env = clis.CopilotEnv(os.Environ(), "http://127.0.0.1:9", t.TempDir(), cliCache)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("warming up %s: %v\n%s", cli, err, out)
		}
	})
	return cli
}

// rig is one contract test's world: a fake model, a HOME for the CLI's own files, and
// sessions of the adapter running the real CLI through a wrapper that records argv.
type rig struct {
	agenttest.Rig
	model    *fakemodel.Server
	home     string
	cli      string
	argvFile string
}

func newRig(t *testing.T, opts map[string]any, script ...fakemodel.Reply) *rig {
	t.Helper()
	r := &rig{model: fakemodel.Start(t, script...), home: t.TempDir(), cli: copilotCLI(t)}
	wrapper, argvFile := clis.WrapCLI(t, r.cli)
	r.argvFile = argvFile
	r.WS, r.Env = t.TempDir(), clis.CopilotEnv(os.Environ(), r.model.URL, r.home, cliCache)
	// The canary (`copilot --version`, 5 s by the spec) and --help get agent.read_timeout_ms
	// when that is longer: a loaded CI machine running several real CLIs at once can take
	// more than 5 s to start the 235 MB binary.
	a, err := New(agent.Config{Kind: Kind, Command: wrapper, Options: opts, ReadTimeout: 60 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	dialectOf(a.(*adapter)).gh = filepath.Join(t.TempDir(), "no-gh") // never the machine's gh login
	r.Adapter = a
	return r
}

// argvs returns the argument lists the CLI was started with, one per turn.
func (r *rig) argvs(t *testing.T) [][]string { return clis.ReadArgvs(t, r.argvFile) }

// mustComplete fails t unless the turn completed, starting with session_started.
func mustComplete(t *testing.T, o agenttest.Outcome) {
	t.Helper()
	agenttest.MustComplete(t, o)
	if first := o.Events[0]; first.Type != agent.EventSessionStarted {
		t.Fatalf("first event = %s, want session_started", first.Type)
	}
}

func TestContract_ContinueFallbackResumesTheWorkspacesLastSession(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil,
		fakemodel.Reply{Text: "Noted: MANGO.", ToolUses: []fakemodel.ToolUse{done("noted")}},
		fakemodel.Reply{Text: "It was MANGO.", ToolUses: []fakemodel.ToolUse{done("recalled")}},
	)
	s := r.Start(t, agent.StartParams{})
	mustComplete(t, r.Turn(t, s, 1, "Remember MANGO."))
	id := s.ID
	s.ID = "" // as if turn 1's result had named no session
	two := r.Turn(t, s, 2, "Which fruit?")
	mustComplete(t, two)

	argv := r.argvs(t)[1]
	if !slices.Contains(argv, "--continue") || slices.Contains(argv, "--resume") {
		t.Errorf("turn 2 argv %q: want --continue and no --resume", argv)
	}
	if s.ID != id {
		t.Errorf("session after --continue = %q, want turn 1's %q", s.ID, id)
	}
	reqs := r.model.Messages()
	if tr := reqs[1].Transcript(); !strings.Contains(tr, "Noted: MANGO.") {
		t.Errorf("--continue did not resume the conversation; turn 2 transcript:\n%s", tr)
	}
	if reqs[0].Model != model {
		t.Errorf("model requested = %q, want %q", reqs[0].Model, model)
	}
}

func TestContract_ToolScopingFlagsAreAcceptedAndTakeEffect(t *testing.T) {
	t.Parallel()
	write := fakemodel.ToolUse{Name: "bash", Input: map[string]any{"command": "printf ok > out.txt", "description": "write"}}
	cases := []struct {
		name    string
		opts    map[string]any
		flags   []string // in argv
		allow   bool     // --allow-all present
		wrote   bool     // the bash call ran
		offered func([]string) bool
	}{
		{"no scoping", nil, nil, true, true, nil},
		{"allowed_tools", map[string]any{"allowed_tools": []any{"shell", "write"}},
			[]string{"--allow-tool=shell,write"}, false, true, nil},
		// A redirection makes a shell call a write too: shell alone does not approve it.
		{"allowed_tools without write", map[string]any{"allowed_tools": "shell"},
			[]string{"--allow-tool=shell"}, false, false, nil},
		{"denied_tools", map[string]any{"denied_tools": "shell", "allowed_tools": "write"},
			[]string{"--allow-tool=write", "--deny-tool=shell"}, false, false, nil},
		{"available_tools", map[string]any{"available_tools": "bash, task_complete", "allowed_tools": "shell,write"},
			[]string{"--available-tools=bash,task_complete"}, false, true,
			func(tools []string) bool { return slices.Equal(tools, []string{"bash", "task_complete"}) }},
		{"excluded_tools", map[string]any{"excluded_tools": []any{"bash"}},
			[]string{"--excluded-tools=bash"}, false, false,
			func(tools []string) bool { return !slices.Contains(tools, "bash") && slices.Contains(tools, "view") }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, c.opts, fakemodel.Reply{ToolUses: []fakemodel.ToolUse{write}},
				fakemodel.Reply{ToolUses: []fakemodel.ToolUse{done("tried")}})
			s := r.Start(t, agent.StartParams{})
			o := r.Turn(t, s, 1, "write out.txt")
			mustComplete(t, o)
			argv := r.argvs(t)[0]
			for _, f := range c.flags {
				if !slices.Contains(argv, f) {
					t.Errorf("argv %q lacks %s", argv, f)
				}
			}
			if got := slices.Contains(argv, "--allow-all"); got != c.allow {
				t.Errorf("--allow-all in argv = %t, want %t: %q", got, c.allow, argv)
			}
			_, err := os.Stat(filepath.Join(r.WS, "out.txt"))
			if wrote := err == nil; wrote != c.wrote {
				t.Errorf("bash ran = %t, want %t", wrote, c.wrote)
			}
			if bash := o.Of(agent.EventToolResult)[0]; bash.ToolName != "bash" || bash.ToolError == c.wrote {
				t.Errorf("bash tool_result = %+v, want error=%t", bash, !c.wrote)
			}
			if tools := r.model.Messages()[0].Tools; c.offered != nil && !c.offered(tools) {
				t.Errorf("tools offered = %v", tools)
			}
		})
	}
}

func TestContract_PassThroughFlagsAreAccepted(t *testing.T) {
	t.Parallel()
	r := newRig(t, map[string]any{"model": model, "max_autopilot_continues": 3, "agent": "fixer",
		"disable_builtin_mcps": true, "no_custom_instructions": true, "experimental": true},
		fakemodel.Reply{ToolUses: []fakemodel.ToolUse{done("fixed")}})
	agents := filepath.Join(r.WS, ".github", "agents")
	os.MkdirAll(agents, 0o755)
	agentFile := "---\nname: fixer\ndescription: Fixes issues\n---\nYou are the FIXER-PERSONA. Fix the issue.\n"
	if err := os.WriteFile(filepath.Join(agents, "fixer.agent.md"), []byte(agentFile), 0o644); err != nil {
		t.Fatal(err)
	}
	s := r.Start(t, agent.StartParams{})
	mustComplete(t, r.Turn(t, s, 1, "fix it"))
	argv := strings.Join(r.argvs(t)[0], " ")
	for _, want := range []string{"--model " + model, "--max-autopilot-continues 3", "--agent fixer",
		"--disable-builtin-mcps", "--no-custom-instructions", "--experimental"} {
		if !strings.Contains(argv, want) {
			t.Errorf("argv %q lacks %q", argv, want)
		}
	}
	if sys := r.model.Messages()[0].System; !strings.Contains(sys, "FIXER-PERSONA") {
		t.Errorf("--agent fixer did not select the workspace's agent; system prompt lacks its instructions")
	}
}

// TestContract_MCPConfigWithoutAtIsRejected pins why the adapter writes "@<path>": this
// CLI reads a bare value as JSON text.
func TestContract_MCPConfigWithoutAtIsRejected(t *testing.T) {
	t.Parallel()
	cli := copilotCLI(t)
	m := fakemodel.Start(t)
	conf := filepath.Join(t.TempDir(), "mcp.json")
	os.WriteFile(conf, []byte(`{"mcpServers":{}}`), 0o644)
	cmd := exec.Command(cli, "--prompt=hi", "--output-format", "json", "-s", "--allow-all", "--additional-mcp-config", conf)
	cmd.Dir, cmd.Env = t.TempDir(), clis.CopilotEnv(os.Environ(), m.URL, t.TempDir(), cliCache)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(stderr.String(), "Invalid JSON") {
		t.Fatalf("bare path: %v, stderr %q; want exit 1 with Invalid JSON", err, stderr.String())
	}
	if n := len(m.Messages()); n != 0 {
		t.Errorf("model requests = %d, want none", n)
	}
}

func TestContract_ModelErrors(t *testing.T) {
	t.Parallel()
	t.Run("500 that is final fails the turn", func(t *testing.T) {
		t.Parallel()
		r := newRig(t, nil, fakemodel.Reply{Status: 500, NoRetry: true, ErrorMessage: "model is down"})
		s := r.Start(t, agent.StartParams{})
		o := r.Turn(t, s, 1, "hello")
		if agent.KindOf(o.Err) != agent.ErrTurnFailed || o.Result.ExitReason != agent.EventTurnFailed {
			t.Fatalf("turn = %s, %v; want turn_failed (the CLI exits 1 with a failed result)", o.Result.ExitReason, o.Err)
		}
		if !strings.Contains(o.Err.Error(), "model is down") || !strings.Contains(o.Err.Error(), "status 500") {
			t.Errorf("error %q does not carry the API's message and status", o.Err)
		}
		if o.Result.SessionID == "" {
			t.Errorf("a failed turn's result still names the session; got none")
		}
		if n := len(r.model.Messages()); n != 1 {
			t.Errorf("model requests = %d, want 1 (X-Should-Retry: false)", n)
		}
	})
	t.Run("500 then success is retried", func(t *testing.T) {
		t.Parallel()
		r := newRig(t, nil, fakemodel.Reply{Status: 500, RetryAfter: "0"},
			fakemodel.Reply{ToolUses: []fakemodel.ToolUse{done("recovered")}})
		s := r.Start(t, agent.StartParams{})
		o := r.Turn(t, s, 1, "hello")
		mustComplete(t, o)
		var retried bool
		for _, e := range o.Of(agent.EventNotification) {
			retried = retried || strings.HasPrefix(e.Message, "model call retried")
		}
		if !retried {
			t.Errorf("notifications %v: want the retry", o.Of(agent.EventNotification))
		}
	})
}

func TestContract_VersionIsThePinnedCLI(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	v, err := r.Adapter.(agent.Versioner).Version(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(v, "GitHub Copilot CLI 1.") || strings.HasSuffix(v, ".") {
		t.Errorf("version = %q, want \"GitHub Copilot CLI <semver>\"", v)
	}
}
