package copilot

// Contract tests: the real copilot CLI, at the version pinned in scripts/clis, driven
// through the adapter in BYOK mode against the fake Anthropic API in
// internal/testkit/fakemodel, offline.
//
// Every scripted conversation ends with a task_complete tool call: in autopilot mode
// the CLI keeps asking the model to continue (up to --max-autopilot-continues) until
// the model calls it.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"sortie/internal/agent"
	"sortie/internal/agent/proc/proctest"
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

// rig is one contract test's world: a fake model, a HOME for the CLI's own files, a
// workspace, and the adapter running the real CLI through a wrapper that logs argv.
type rig struct {
	model   *fakemodel.Server
	home    string
	ws      string
	cli     string
	argvLog string
	env     []string
	adapter *adapter
}

func newRig(t *testing.T, opts map[string]any, script ...fakemodel.Reply) *rig {
	t.Helper()
	cli := copilotCLI(t)
	r := &rig{model: fakemodel.Start(t, script...), home: t.TempDir(), ws: t.TempDir(), cli: cli}
	r.argvLog = filepath.Join(t.TempDir(), "argv.log")
	// One record per turn: NUL-terminated arguments, then a lone \001. The canary and
	// the --help probe are not turns.
	wrapper := writeScript(t, "copilot-wrapper", fmt.Sprintf("#!/bin/sh\n"+
		"case \"$1\" in --version|--help) ;; *) printf '%%s\\0' \"$@\" >> %[1]s; printf '\\001\\0' >> %[1]s;; esac\n"+
		"exec %[2]s \"$@\"\n", shellQuote(r.argvLog), shellQuote(cli)))
	r.env = clis.CopilotEnv(os.Environ(), r.model.URL, r.home, cliCache)
	// The canary (`copilot --version`, 5 s by the spec) and --help get agent.read_timeout_ms
	// when that is longer: a loaded CI machine running several real CLIs at once can take
	// more than 5 s to start the 235 MB binary.
	a, err := New(agent.Config{Kind: Kind, Command: wrapper, Options: opts, ReadTimeout: 60 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	r.adapter = a.(*adapter)
	dialectOf(r.adapter).gh = filepath.Join(t.TempDir(), "no-gh") // never the machine's gh login
	return r
}

func writeScript(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func (r *rig) start(t *testing.T, p agent.StartParams) *agent.Session {
	t.Helper()
	if p.Workspace == "" {
		p.Workspace = r.ws
	}
	if p.Env == nil {
		p.Env = r.env
	}
	s, err := r.adapter.StartSession(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.adapter.StopSession(context.Background(), s) })
	return s
}

// turnOutcome is what one RunTurn produced.
type turnOutcome struct {
	events []agent.Event
	res    agent.TurnResult
	err    error
}

func (o turnOutcome) of(typ agent.EventType) []agent.Event { return ofType(o.events, typ) }

func (r *rig) turn(t *testing.T, ctx context.Context, s *agent.Session, n int, prompt string) turnOutcome {
	t.Helper()
	var out turnOutcome
	out.res, out.err = r.adapter.RunTurn(ctx, s, agent.TurnParams{Prompt: prompt, TurnNumber: n,
		OnEvent: func(e agent.Event) { out.events = append(out.events, e) }})
	return out
}

// argvs returns the argument lists the CLI was started with, one per turn.
func (r *rig) argvs(t *testing.T) [][]string {
	t.Helper()
	data, err := os.ReadFile(r.argvLog)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]string
	var cur []string
	for _, a := range strings.Split(strings.TrimSuffix(string(data), "\x00"), "\x00") {
		if a == "\x01" {
			out = append(out, cur)
			cur = nil
			continue
		}
		cur = append(cur, a)
	}
	return out
}

func flagValue(argv []string, name string) (string, bool) {
	for i, a := range argv {
		if a == name && i+1 < len(argv) {
			return argv[i+1], true
		}
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v, true
		}
	}
	return "", false
}

func mustComplete(t *testing.T, o turnOutcome) {
	t.Helper()
	if o.err != nil || o.res.ExitReason != agent.EventTurnCompleted {
		t.Fatalf("turn = %s, %v; events: %v", o.res.ExitReason, o.err, types(o.events))
	}
	if last := o.events[len(o.events)-1]; last.Type != agent.EventTurnCompleted {
		t.Fatalf("last event = %s, want turn_completed", last.Type)
	}
	if first := o.events[0]; first.Type != agent.EventSessionStarted {
		t.Fatalf("first event = %s, want session_started", first.Type)
	}
}

func TestContract_TwoTurnsResumeTheSessionTheResultNamed(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil,
		fakemodel.Reply{Text: "Noted: PAPAYA.", ToolUses: []fakemodel.ToolUse{done("noted the word")}},
		fakemodel.Reply{Text: "The word was PAPAYA.", ToolUses: []fakemodel.ToolUse{done("recalled the word")}},
	)
	s := r.start(t, agent.StartParams{})
	if s.ID != "" {
		t.Fatalf("new session id = %q, want none before the first result", s.ID)
	}
	ctx := context.Background()

	one := r.turn(t, ctx, s, 1, "Remember the word PAPAYA.")
	mustComplete(t, one)
	id := s.ID
	if len(id) != 36 || one.res.SessionID != id {
		t.Fatalf("after turn 1: session id %q, result %q; want the CLI's UUID from the result event", id, one.res.SessionID)
	}
	if last := one.events[len(one.events)-1]; last.SessionID != id {
		t.Errorf("turn_completed session id = %q, want %q", last.SessionID, id)
	}
	two := r.turn(t, ctx, s, 2, "Which word did I ask you to remember?")
	mustComplete(t, two)
	if s.ID != id || two.events[0].SessionID != id {
		t.Errorf("turn 2: session %q, session_started %q; want %q throughout", s.ID, two.events[0].SessionID, id)
	}

	argvs := r.argvs(t)
	if len(argvs) != 2 {
		t.Fatalf("CLI started %d times, want 2", len(argvs))
	}
	for _, f := range []string{"--resume", "--continue"} {
		if slices.Contains(argvs[0], f) {
			t.Errorf("turn 1 argv %q has %s; a new session has neither --resume nor --continue", argvs[0], f)
		}
	}
	if v, ok := flagValue(argvs[1], "--resume"); !ok || v != id {
		t.Errorf("turn 2 argv %q: want --resume %s", argvs[1], id)
	}
	for _, want := range []string{"--output-format", "json", "-s", "--autopilot", "--no-ask-user", "--allow-all"} {
		if !slices.Contains(argvs[0], want) {
			t.Errorf("turn 1 argv %q lacks %s", argvs[0], want)
		}
	}
	// The CLI really continued: turn 2's request carries turn 1's exchange.
	reqs := r.model.Messages()
	if len(reqs) != 2 {
		t.Fatalf("model requests = %d, want 2", len(reqs))
	}
	tr := reqs[1].Transcript()
	for _, want := range []string{"Remember the word PAPAYA.", "Noted: PAPAYA.", "Which word did I ask you to remember?"} {
		if !strings.Contains(tr, want) {
			t.Errorf("turn 2 request lacks %q; transcript:\n%s", want, tr)
		}
	}
	if reqs[0].Model != model {
		t.Errorf("model requested = %q, want %q", reqs[0].Model, model)
	}
}

func TestContract_ContinueFallbackResumesTheWorkspacesLastSession(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil,
		fakemodel.Reply{Text: "Noted: MANGO.", ToolUses: []fakemodel.ToolUse{done("noted")}},
		fakemodel.Reply{Text: "It was MANGO.", ToolUses: []fakemodel.ToolUse{done("recalled")}},
	)
	s := r.start(t, agent.StartParams{})
	mustComplete(t, r.turn(t, context.Background(), s, 1, "Remember MANGO."))
	id := s.ID
	s.ID = "" // as if turn 1's result had named no session
	two := r.turn(t, context.Background(), s, 2, "Which fruit?")
	mustComplete(t, two)

	argv := r.argvs(t)[1]
	if !slices.Contains(argv, "--continue") || slices.Contains(argv, "--resume") {
		t.Errorf("turn 2 argv %q: want --continue and no --resume", argv)
	}
	if s.ID != id {
		t.Errorf("session after --continue = %q, want turn 1's %q", s.ID, id)
	}
	if tr := r.model.Messages()[1].Transcript(); !strings.Contains(tr, "Noted: MANGO.") {
		t.Errorf("--continue did not resume the conversation; turn 2 transcript:\n%s", tr)
	}
}

func TestContract_ToolCallsBecomeToolResultsWithDurationAndErrorFlag(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil,
		fakemodel.Reply{Text: "Writing the file.", ToolUses: []fakemodel.ToolUse{{Name: "bash",
			Input: map[string]any{"command": "printf sortie > out.txt", "description": "write out.txt"}}}},
		fakemodel.Reply{ToolUses: []fakemodel.ToolUse{{Name: "no_such_tool", Input: map[string]any{}}}},
		fakemodel.Reply{ToolUses: []fakemodel.ToolUse{done("wrote out.txt")}},
	)
	s := r.start(t, agent.StartParams{})
	o := r.turn(t, context.Background(), s, 1, "Create out.txt.")
	mustComplete(t, o)

	data, err := os.ReadFile(filepath.Join(r.ws, "out.txt"))
	if err != nil || string(data) != "sortie" {
		t.Fatalf("out.txt = %q, %v; the CLI did not run the bash tool in the workspace", data, err)
	}
	tools := o.of(agent.EventToolResult)
	var got []string
	for _, e := range tools {
		got = append(got, fmt.Sprintf("%s error=%t", e.ToolName, e.ToolError))
		if e.ToolDurationMS < 0 {
			t.Errorf("%s duration = %d ms", e.ToolName, e.ToolDurationMS)
		}
	}
	want := []string{"bash error=false", "no_such_tool error=true", "task_complete error=false"}
	if !slices.Equal(got, want) {
		t.Errorf("tool_result events = %q, want %q (one per call, correlated by toolCallId)", got, want)
	}
	reqs := r.model.Messages()
	if len(reqs) != 3 {
		t.Fatalf("model requests = %d, want 3", len(reqs))
	}
	if !slices.Contains(reqs[0].Tools, "bash") || !slices.Contains(reqs[0].Tools, "task_complete") {
		t.Errorf("tools offered = %v, want bash and task_complete among them", reqs[0].Tools)
	}
	if res := reqs[1].ToolResults(); len(res) != 1 || !strings.Contains(res[0].Text, "exit code 0") {
		t.Errorf("bash result sent back = %+v", res)
	}
	for _, e := range o.events {
		if e.PID != o.res.PID || e.PID == 0 {
			t.Fatalf("event %s has pid %d, turn pid %d", e.Type, e.PID, o.res.PID)
		}
	}
}

func TestContract_OutputTokensAccumulateAcrossTurns(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil,
		fakemodel.Reply{Text: "one", Usage: fakemodel.Usage{InputTokens: 900, OutputTokens: 11}},
		fakemodel.Reply{ToolUses: []fakemodel.ToolUse{done("one")}, Usage: fakemodel.Usage{InputTokens: 900, OutputTokens: 4}},
		fakemodel.Reply{Text: "two", ToolUses: []fakemodel.ToolUse{done("two")}, Usage: fakemodel.Usage{InputTokens: 950, OutputTokens: 9}},
	)
	dialectOf(r.adapter).opts.MaxAutopilotContinues = 1 // turn 1: "one", then one continuation
	s := r.start(t, agent.StartParams{})
	one := r.turn(t, context.Background(), s, 1, "first")
	mustComplete(t, one)
	two := r.turn(t, context.Background(), s, 2, "second")
	mustComplete(t, two)

	// Output tokens only: the adapter reports no input tokens (spec), total = output.
	for _, c := range []struct {
		o    turnOutcome
		want agent.Usage
	}{{one, agent.Usage{Output: 15, Total: 15}}, {two, agent.Usage{Output: 24, Total: 24}}} {
		if c.o.res.Usage != c.want {
			t.Errorf("turn usage = %+v, want %+v", c.o.res.Usage, c.want)
		}
		usage := c.o.of(agent.EventTokenUsage)
		if len(usage) != 1 || usage[0].Usage != c.want || usage[0].Model != model {
			t.Errorf("token_usage events = %+v, want one with %+v for %s", usage, c.want, model)
		}
		if last := c.o.events[len(c.o.events)-1]; last.Usage != c.want {
			t.Errorf("terminal event usage = %+v, want %+v", last.Usage, c.want)
		}
	}
	// The result's API time is the CLI session's running total; each turn carries its
	// own share of it.
	api1 := one.events[len(one.events)-1].APIDurationMS
	if api1 <= 0 {
		t.Errorf("turn 1 API time = %d ms, want the result's totalApiDurationMs", api1)
	}
	if api2 := two.events[len(two.events)-1].APIDurationMS; api2 < 0 || api2 >= api1+1000 {
		t.Errorf("turn 2 API time = %d ms (turn 1: %d), want only turn 2's share", api2, api1)
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
			s := r.start(t, agent.StartParams{})
			o := r.turn(t, context.Background(), s, 1, "write out.txt")
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
			_, err := os.Stat(filepath.Join(r.ws, "out.txt"))
			if wrote := err == nil; wrote != c.wrote {
				t.Errorf("bash ran = %t, want %t", wrote, c.wrote)
			}
			if bash := o.of(agent.EventToolResult)[0]; bash.ToolName != "bash" || bash.ToolError == c.wrote {
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
	agents := filepath.Join(r.ws, ".github", "agents")
	os.MkdirAll(agents, 0o755)
	agentFile := "---\nname: fixer\ndescription: Fixes issues\n---\nYou are the FIXER-PERSONA. Fix the issue.\n"
	if err := os.WriteFile(filepath.Join(agents, "fixer.agent.md"), []byte(agentFile), 0o644); err != nil {
		t.Fatal(err)
	}
	s := r.start(t, agent.StartParams{})
	mustComplete(t, r.turn(t, context.Background(), s, 1, "fix it"))
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

func TestContract_MCPConfigIsPassedWithAtAndLoaded(t *testing.T) {
	t.Parallel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	server := func(name string) string {
		return fmt.Sprintf(`%q:{"type":"stdio","command":%q,"args":[],"env":{%q:%q}}`, name, self, mcpServerEnv, name)
	}
	operator := filepath.Join(t.TempDir(), "operator-mcp.json")
	if err := os.WriteFile(operator, []byte(`{"mcpServers":{`+server("ops")+`}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	r := newRig(t, map[string]any{"mcp_config": operator},
		fakemodel.Reply{ToolUses: []fakemodel.ToolUse{{Name: "sortie-tools-ping", Input: map[string]any{"text": "hi"}}}},
		fakemodel.Reply{ToolUses: []fakemodel.ToolUse{done("pinged")}},
	)
	// As the daemon writes it: the operator's servers merged with sortie-tools.
	generated := filepath.Join(r.ws, ".sortie", "mcp.json")
	os.MkdirAll(filepath.Dir(generated), 0o755)
	if err := os.WriteFile(generated, []byte(`{"mcpServers":{`+server("ops")+`,`+server("sortie-tools")+`}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	s := r.start(t, agent.StartParams{MCPConfigPath: generated})
	o := r.turn(t, context.Background(), s, 1, "ping the sortie tools")
	mustComplete(t, o)

	argv := r.argvs(t)[0]
	var configs []string
	for i, a := range argv {
		if a == "--additional-mcp-config" {
			configs = append(configs, argv[i+1])
		}
	}
	if want := []string{"@" + generated}; !slices.Equal(configs, want) {
		t.Errorf("--additional-mcp-config values = %q, want %q (the generated file holds the operator's servers)", configs, want)
	}
	reqs := r.model.Messages()
	for _, tool := range []string{"ops-ping", "sortie-tools-ping"} {
		if !slices.Contains(reqs[0].Tools, tool) {
			t.Errorf("tools offered lack %s (the server did not load): %v", tool, reqs[0].Tools)
		}
	}
	if res := reqs[1].ToolResults(); len(res) != 1 || !strings.Contains(res[0].Text, "pong from sortie-tools: hi") {
		t.Errorf("MCP tool result = %+v, want pong from sortie-tools", res)
	}
	if tools := o.of(agent.EventToolResult); len(tools) != 2 || tools[0].ToolName != "sortie-tools-ping" || tools[0].ToolError {
		t.Errorf("tool_result events = %+v", tools)
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

func TestContract_PromptsReachTheModelWhole(t *testing.T) {
	t.Parallel()
	dash := "- fix it's \"bug\" $(touch PWNED) `touch PWNED`\n- then * the rest; é 🚀"
	big := strings.Repeat("All work and no play makes Jack a dull boy. ", 4000) + "END-OF-BIG-PROMPT"
	r := newRig(t, nil, fakemodel.Reply{ToolUses: []fakemodel.ToolUse{done("one")}},
		fakemodel.Reply{ToolUses: []fakemodel.ToolUse{done("two")}})
	s := r.start(t, agent.StartParams{})
	mustComplete(t, r.turn(t, context.Background(), s, 1, dash))
	mustComplete(t, r.turn(t, context.Background(), s, 2, big))

	argvs := r.argvs(t)
	if v, ok := flagValue(argvs[0], "--prompt"); !ok || v != dash {
		t.Errorf("turn 1 argv %q: want --prompt=<the prompt> (a prompt starting with '-' must not be a separate argument)", argvs[0])
	}
	if _, ok := flagValue(argvs[1], "--prompt"); ok || len(strings.Join(argvs[1], " ")) > maxArg {
		t.Errorf("turn 2: a %d-byte prompt must go to standard input, not argv", len(big))
	}
	reqs := r.model.Messages()
	if !strings.Contains(reqs[0].Transcript(), dash) {
		t.Errorf("turn 1 request lacks the prompt byte for byte:\n%s", reqs[0].Transcript())
	}
	if last := reqs[1].Messages[len(reqs[1].Messages)-1].Text(); !strings.Contains(last, big) {
		t.Errorf("turn 2 request lacks the %d-byte prompt (got %d bytes)", len(big), len(last))
	}
	if _, err := os.Stat(filepath.Join(r.ws, "PWNED")); err == nil {
		t.Errorf("the prompt was run by a shell")
	}
}

func TestContract_ModelErrors(t *testing.T) {
	t.Parallel()
	t.Run("500 that is final fails the turn", func(t *testing.T) {
		t.Parallel()
		r := newRig(t, nil, fakemodel.Reply{Status: 500, NoRetry: true, ErrorMessage: "model is down"})
		s := r.start(t, agent.StartParams{})
		o := r.turn(t, context.Background(), s, 1, "hello")
		if agent.KindOf(o.err) != agent.ErrTurnFailed || o.res.ExitReason != agent.EventTurnFailed {
			t.Fatalf("turn = %s, %v; want turn_failed (the CLI exits 1 with a failed result)", o.res.ExitReason, o.err)
		}
		if !strings.Contains(o.err.Error(), "model is down") || !strings.Contains(o.err.Error(), "status 500") {
			t.Errorf("error %q does not carry the API's message and status", o.err)
		}
		if o.res.SessionID == "" {
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
		s := r.start(t, agent.StartParams{})
		o := r.turn(t, context.Background(), s, 1, "hello")
		mustComplete(t, o)
		var retried bool
		for _, e := range o.of(agent.EventNotification) {
			retried = retried || strings.HasPrefix(e.Message, "model call retried")
		}
		if !retried {
			t.Errorf("notifications %v: want the retry", o.of(agent.EventNotification))
		}
	})
}

func TestContract_CommandNotFound(t *testing.T) {
	t.Parallel()
	a, err := New(agent.Config{Kind: Kind, Command: filepath.Join(t.TempDir(), "no-such-copilot")})
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.StartSession(context.Background(), agent.StartParams{Workspace: t.TempDir()})
	if agent.KindOf(err) != agent.ErrNotFound {
		t.Fatalf("StartSession = %v, want agent_not_found", err)
	}
	if _, err := a.(agent.Versioner).Version(context.Background()); agent.KindOf(err) != agent.ErrNotFound {
		t.Fatalf("Version = %v, want agent_not_found", err)
	}
}

func TestContract_NoCredentialIsAgentNotFound(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	var env []string
	for _, kv := range r.env {
		if !strings.HasPrefix(kv, "COPILOT_PROVIDER_") && !strings.HasPrefix(kv, "COPILOT_OFFLINE") {
			env = append(env, kv)
		}
	}
	_, err := r.adapter.StartSession(context.Background(), agent.StartParams{Workspace: r.ws, Env: env})
	if agent.KindOf(err) != agent.ErrNotFound {
		t.Fatalf("StartSession = %v, want agent_not_found", err)
	}
	for _, v := range []string{"COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN", "gh auth login", "COPILOT_PROVIDER_BASE_URL"} {
		if !strings.Contains(err.Error(), v) {
			t.Errorf("error %q does not name %s", err, v)
		}
	}
	if n := len(r.model.Requests()); n != 0 {
		t.Errorf("model requests = %d, want none", n)
	}
}

func TestContract_VersionIsThePinnedCLI(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	v, err := r.adapter.Version(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(v, "GitHub Copilot CLI 1.") || strings.HasSuffix(v, ".") {
		t.Errorf("version = %q, want \"GitHub Copilot CLI <semver>\"", v)
	}
}

func TestContract_CancelMidTurnLeavesNoProcess(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil, fakemodel.Reply{Stall: true})
	s := r.start(t, agent.StartParams{})
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan turnOutcome, 1)
	go func() { out <- r.turn(t, ctx, s, 1, "hello") }()

	r.model.WaitStall(t, patience)
	cancel()
	o := <-out
	if agent.KindOf(o.err) != agent.ErrTurnCancelled || o.res.ExitReason != agent.EventTurnCancelled {
		t.Fatalf("turn = %s, %v; want turn_cancelled", o.res.ExitReason, o.err)
	}
	if o.res.PID == 0 {
		t.Fatal("no pid recorded for the turn")
	}
	proctest.RequireGroupGone(t, o.res.PID)
}
