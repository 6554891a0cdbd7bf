package claude

// The dialect against a fake CLI (clis.Fake) printing chosen stream-json lines: how a
// turn's result line and exit decide its outcome, the session flags of each turn, and
// what carries across turns. The runner's own lifecycle is tested in package cli.

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sortie/internal/agent"
	"sortie/internal/agent/agenttest"
	"sortie/internal/agent/cli"
	"sortie/internal/testkit/clis"
)

const (
	initLine    = `{"type":"system","subtype":"init","session_id":"cli-session","model":"m"}`
	textLine    = `{"type":"assistant","message":{"id":"a1","model":"m","content":[{"type":"text","text":"hi"}],"usage":{"input_tokens":10,"output_tokens":4}}}`
	successLine = `{"type":"result","subtype":"success","is_error":false,"result":"all done","session_id":"cli-session","total_cost_usd":0.01,"usage":{"input_tokens":10,"output_tokens":4}}`
	errorLine   = `{"type":"result","subtype":"error_max_turns","is_error":true,"result":"","session_id":"cli-session","usage":{"input_tokens":10,"output_tokens":4}}`
)

// fakeCLI is a fake claude whose runs 1..len(runs) print runs[i] and exit 0, and the
// adapter running it with options opts.
func fakeCLI(t *testing.T, opts map[string]any, runs ...[]string) (*clis.Fake, agent.Adapter) {
	t.Helper()
	f := clis.NewFake(t, "claude")
	for i, lines := range runs {
		f.Run(t, i+1, 0, lines...)
	}
	a, err := New(agent.Config{Kind: Kind, Command: f.Path, Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	a.(*cli.Runner[state]).Grace = time.Second
	return f, a
}

// fakeSession starts a session of a in a new workspace, with HOME below the test's.
func fakeSession(t *testing.T, a agent.Adapter, p agent.StartParams) *agent.Session {
	t.Helper()
	p.Workspace = t.TempDir()
	p.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	return agenttest.StartSession(t, a, p)
}

// TestRunTurn_ResultLineDecides pins the spec's exit code mapping as Claude Code's
// stream needs it: the result line, not the exit status alone, says how a turn ended.
func TestRunTurn_ResultLineDecides(t *testing.T) {
	cases := []struct {
		name   string
		code   int
		stderr string
		lines  []string
		reason agent.EventType
		kind   agent.ErrorKind
		text   string // in the error
	}{
		{"result success", 0, "", []string{initLine, textLine, successLine}, agent.EventTurnCompleted, "", ""},
		{"result error, exit 0", 0, "", []string{initLine, textLine, errorLine}, agent.EventTurnFailed, agent.ErrTurnFailed, "claude: error_max_turns"},
		{"output but no result", 0, "", []string{initLine, textLine}, agent.EventTurnCompleted, "", ""},
		{"no output, no result", 0, "auth went wrong", []string{initLine}, agent.EventTurnFailed, agent.ErrTurnFailed,
			"exited 0 without a result line or any output; stderr: auth went wrong"},
		{"exit 1 with error result", 1, "", []string{initLine, errorLine}, agent.EventTurnFailed, agent.ErrPortExit, "exit status 1; error_max_turns"},
		{"not logged in", 1, "Invalid API key · Please run /login", []string{initLine}, agent.EventTurnFailed, agent.ErrPortExit, authHint},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, a := fakeCLI(t, nil)
			f.Run(t, 1, c.code, c.lines...)
			f.Set(t, "stderr.1", c.stderr)
			o := agenttest.RunTurn(context.Background(), a, fakeSession(t, a, agent.StartParams{}), 1, "do it")
			if o.Result.ExitReason != c.reason || agent.KindOf(o.Err) != c.kind {
				t.Fatalf("turn = %s, %v; want %s, kind %q", o.Result.ExitReason, o.Err, c.reason, c.kind)
			}
			if c.text != "" && !strings.Contains(o.Err.Error(), c.text) {
				t.Errorf("error %q lacks %q", o.Err, c.text)
			}
		})
	}
}

// A new session's first turn names its id (--session-id), later ones resume the id the
// CLI announced; a resumed session resumes from its first turn; without persistence
// every turn is new. The prompt goes to standard input: -p takes no argument.
func TestRunTurn_SessionFlags(t *testing.T) {
	lines := []string{initLine, textLine, successLine}
	t.Run("new session: --session-id, then --resume", func(t *testing.T) {
		f, a := fakeCLI(t, nil, lines, lines)
		s := fakeSession(t, a, agent.StartParams{})
		first := s.ID
		for i := 1; i <= 2; i++ {
			agenttest.MustComplete(t, agenttest.RunTurn(context.Background(), a, s, i, "Remember PAPAYA."))
		}
		argvs := f.Argvs(t)
		if id, _ := clis.FlagValue(argvs[0], "--session-id"); id != first || slices.Contains(argvs[0], "--resume") {
			t.Errorf("turn 1 argv %q: want --session-id %s and no --resume", argvs[0], first)
		}
		if id, _ := clis.FlagValue(argvs[1], "--resume"); id != "cli-session" || slices.Contains(argvs[1], "--session-id") {
			t.Errorf("turn 2 argv %q: want --resume with the CLI's id", argvs[1])
		}
		if s.ID != "cli-session" {
			t.Errorf("session id = %q, want the one system/init announced", s.ID)
		}
		if argvs[0][0] != "-p" || strings.Contains(strings.Join(argvs[0], " "), "PAPAYA") || f.Stdin(t, 1) != "Remember PAPAYA." {
			t.Errorf("argv %q, stdin %q: want the prompt on stdin only", argvs[0], f.Stdin(t, 1))
		}
	})
	t.Run("resumed session: --resume from the first turn", func(t *testing.T) {
		f, a := fakeCLI(t, nil, []string{strings.Replace(initLine, "cli-session", "old", 1), textLine, successLine})
		s := fakeSession(t, a, agent.StartParams{ResumeSessionID: "old"})
		agenttest.MustComplete(t, agenttest.RunTurn(context.Background(), a, s, 1, "p"))
		argv := f.Argvs(t)[0]
		if id, _ := clis.FlagValue(argv, "--resume"); id != "old" || slices.Contains(argv, "--session-id") {
			t.Errorf("argv = %q, want --resume old", argv)
		}
	})
	t.Run("without session persistence every turn is new", func(t *testing.T) {
		f, a := fakeCLI(t, map[string]any{"session_persistence": false}, lines[1:], lines[1:]) // no init line: ids stay ours
		s := fakeSession(t, a, agent.StartParams{})
		for i := 1; i <= 2; i++ {
			agenttest.MustComplete(t, agenttest.RunTurn(context.Background(), a, s, i, "p"))
		}
		for i, argv := range f.Argvs(t) {
			if slices.Contains(argv, "--resume") || !slices.Contains(argv, "--session-id") || !slices.Contains(argv, "--no-session-persistence") {
				t.Errorf("turn %d argv = %q, want a fresh --session-id", i+1, argv)
			}
		}
	})
}

func TestRunTurn_UsageAndCostAccumulateAcrossTurns(t *testing.T) {
	lines := []string{initLine, textLine,
		`{"type":"result","subtype":"success","is_error":false,"result":"ok","usage":{"input_tokens":10,"output_tokens":4},"model_usage_since_last_result":{"m":{"costUSD":0.25}}}`}
	_, a := fakeCLI(t, nil, lines, lines, lines)
	s := fakeSession(t, a, agent.StartParams{})
	var o agenttest.Outcome
	for i := 1; i <= 3; i++ {
		o = agenttest.RunTurn(context.Background(), a, s, i, "p")
		agenttest.MustComplete(t, o)
	}
	if want := (agent.Usage{Input: 30, Output: 12, Total: 42}); o.Result.Usage != want || o.Result.CostUSD != 0.75 {
		t.Errorf("after 3 turns: usage %+v cost %v, want %+v and 0.75", o.Result.Usage, o.Result.CostUSD, want)
	}
}

// The daemon's generated .sortie/mcp.json, which holds the operator's servers, is the
// only --mcp-config; without it, the operator's mcp_config is passed as it is.
func TestStartSession_MCPConfigs(t *testing.T) {
	operator := filepath.Join(t.TempDir(), "operator-mcp.json")
	if err := os.WriteFile(operator, []byte(`{"mcpServers":{}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name      string
		operator  string
		generated string
		want      []string
	}{
		{"none", "", "", nil},
		{"the operator's alone", operator, "", []string{operator}},
		{"the generated file", operator, "/ws/.sortie/mcp.json", []string{"/ws/.sortie/mcp.json"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, a := fakeCLI(t, map[string]any{"mcp_config": c.operator}, []string{initLine, textLine, successLine})
			s := fakeSession(t, a, agent.StartParams{MCPConfigPath: c.generated})
			agenttest.MustComplete(t, agenttest.RunTurn(context.Background(), a, s, 1, "p"))
			if got := clis.FlagValues(f.Argvs(t)[0], "--mcp-config"); !slices.Equal(got, c.want) {
				t.Errorf("--mcp-config values = %q, want %q", got, c.want)
			}
		})
	}
}

func TestRegistration(t *testing.T) {
	meta, ok := agent.Lookup(Kind)
	if !ok || !meta.RequiresCommand {
		t.Fatalf("claude-code registered = %v, meta %+v; want RequiresCommand", ok, meta)
	}
}
