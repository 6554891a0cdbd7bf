package opencode

// Contract tests: the real opencode CLI, at the version pinned in scripts/clis, driven
// through the adapter against the fake Anthropic API in internal/testkit/fakemodel,
// which OpenCode's anthropic provider reaches through a baseURL in the adapter's
// inline configuration.

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
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

var update = flag.Bool("update", false, "re-capture testdata/*.jsonl from the real CLI")

// model is the model the fake sees requested (clis.OpenCodeModel without the provider).
const model = "claude-sonnet-4-5"

// rig is one contract test's world: a fake model, a HOME, a workspace, an isolated
// OpenCode state directory, and the adapter running the real CLI through a wrapper that
// logs argv.
type rig struct {
	model   *fakemodel.Server
	home    string
	ws      string
	state   string
	argvLog string
	env     []string
	opts    map[string]any
	adapter agent.Adapter
}

func newRig(t *testing.T, opts map[string]any, script ...fakemodel.Reply) *rig {
	t.Helper()
	cli := clis.OpenCode(t)
	r := &rig{model: fakemodel.Start(t, script...), home: t.TempDir(), ws: t.TempDir(), state: t.TempDir()}
	r.argvLog = filepath.Join(t.TempDir(), "argv.log")
	wrapper := writeScript(t, "opencode-wrapper", fmt.Sprintf(
		"#!/bin/sh\nprintf '%%s\\n' \"$@\" '--' >> %s\nexec %s \"$@\"\n", shellQuote(r.argvLog), shellQuote(cli)))
	r.env = clis.OpenCodeEnv(os.Environ(), r.home, sharedCache)
	if opts == nil {
		opts = map[string]any{}
	}
	cfg := clis.OpenCodeConfig(r.model.URL)
	if extra, ok := opts["config"].(map[string]any); ok {
		for k, v := range extra {
			cfg[k] = v
		}
	}
	opts["config"] = cfg
	if _, ok := opts["state_dir"]; !ok {
		opts["state_dir"] = r.state
	}
	r.opts = opts
	a, err := New(agent.Config{Kind: Kind, Command: wrapper, Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	r.adapter = a
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
	var (
		mu  sync.Mutex
		out turnOutcome
	)
	out.res, out.err = r.adapter.RunTurn(ctx, s, agent.TurnParams{Prompt: prompt, TurnNumber: n, OnEvent: func(e agent.Event) {
		mu.Lock()
		out.events = append(out.events, e)
		mu.Unlock()
	}})
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
	for _, l := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		if l == "--" {
			out = append(out, cur)
			cur = nil
			continue
		}
		cur = append(cur, l)
	}
	return out
}

func flagValue(argv []string, name string) (string, bool) {
	for i, a := range argv {
		if a == name && i+1 < len(argv) {
			return argv[i+1], true
		}
	}
	return "", false
}

func mustComplete(t *testing.T, o turnOutcome) {
	t.Helper()
	if o.err != nil || o.res.ExitReason != agent.EventTurnCompleted {
		t.Fatalf("turn = %s, %v; events: %v", o.res.ExitReason, o.err, describe(o.events))
	}
	if last := o.events[len(o.events)-1]; last.Type != agent.EventTurnCompleted {
		t.Fatalf("last event = %s, want turn_completed", last.Type)
	}
}

func TestContract_TwoTurnsInOneSession(t *testing.T) {
	r := newRig(t, nil,
		fakemodel.Reply{Text: "Noted: PAPAYA.", Usage: fakemodel.Usage{InputTokens: 120, OutputTokens: 11}},
		fakemodel.Reply{Text: "The word was PAPAYA.", Usage: fakemodel.Usage{InputTokens: 150, OutputTokens: 9}},
	)
	s := r.start(t, agent.StartParams{})
	if s.ID != "" {
		t.Fatalf("a new session has id %q before its first turn", s.ID)
	}
	ctx := context.Background()

	first := r.turn(t, ctx, s, 1, "Remember the word PAPAYA.")
	mustComplete(t, first)
	id := s.ID
	if !strings.HasPrefix(id, "ses_") || first.res.SessionID != id {
		t.Fatalf("session id after turn 1 = %q (result %q), want the CLI's ses_ id", id, first.res.SessionID)
	}
	if started := first.of(agent.EventSessionStarted); len(started) != 1 || started[0].SessionID != id {
		t.Errorf("session_started = %+v, want one naming %s", started, id)
	}
	second := r.turn(t, ctx, s, 2, "Which word did I ask you to remember?")
	mustComplete(t, second)
	if s.ID != id {
		t.Errorf("session id changed from %s to %s", id, s.ID)
	}

	argvs := r.argvs(t)
	if len(argvs) != 2 {
		t.Fatalf("CLI started %d times, want 2", len(argvs))
	}
	if _, ok := flagValue(argvs[0], "--session"); ok {
		t.Errorf("turn 1 must start a new session: %q", argvs[0])
	}
	if got, ok := flagValue(argvs[1], "--session"); !ok || got != id {
		t.Errorf("turn 2 argv %q: want --session %s", argvs[1], id)
	}
	for i, argv := range argvs {
		if !slices.Contains(argv, "--auto") {
			t.Errorf("turn %d argv %q: want --auto without a permission configuration", i+1, argv)
		}
		if strings.Contains(strings.Join(argv, " "), "PAPAYA") || strings.Contains(strings.Join(argv, " "), "remember?") {
			t.Errorf("turn %d: the prompt leaked into argv: %q", i+1, argv)
		}
	}
	// The CLI really continued, and made no title request of its own: two requests.
	reqs := r.model.Messages()
	if len(reqs) != 2 {
		t.Fatalf("model requests = %d, want 2 (one per turn, no title generation)", len(reqs))
	}
	tr := reqs[1].Transcript()
	for _, want := range []string{"Remember the word PAPAYA.", "Noted: PAPAYA.", "Which word did I ask you to remember?"} {
		if !strings.Contains(tr, want) {
			t.Errorf("turn 2 request lacks %q; transcript:\n%s", want, tr)
		}
	}
	if reqs[0].Model != model || reqs[1].Model != model {
		t.Errorf("models requested = %q, %q; want %q", reqs[0].Model, reqs[1].Model, model)
	}
	// Usage is cumulative over the session and never goes down.
	want := agent.Usage{Input: 270, Output: 20, Total: 290}
	if second.res.Usage != want {
		t.Errorf("session usage after turn 2 = %+v, want %+v", second.res.Usage, want)
	}
	checkGrowing(t, append(first.events, second.events...))
}

// checkGrowing fails t if a token_usage event's figures or cost are below an earlier
// one's.
func checkGrowing(t *testing.T, events []agent.Event) {
	t.Helper()
	var last agent.Usage
	var cost float64
	for _, e := range events {
		if e.Type != agent.EventTokenUsage {
			continue
		}
		u := e.Usage
		if u.Input < last.Input || u.Output < last.Output || u.Total < last.Total || u.CacheRead < last.CacheRead || e.CostUSD < cost {
			t.Fatalf("token_usage went down: %+v (cost %v) after %+v (cost %v)", u, e.CostUSD, last, cost)
		}
		last, cost = u, e.CostUSD
	}
}

func TestContract_BashToolCallAndTokenUsage(t *testing.T) {
	r := newRig(t, nil,
		fakemodel.Reply{Text: "Writing the file.", ToolUses: []fakemodel.ToolUse{{Name: "bash",
			Input: map[string]any{"command": "printf sortie > out.txt", "description": "write out.txt"}}},
			Usage: fakemodel.Usage{InputTokens: 100, OutputTokens: 20, CacheReadInputTokens: 7}},
		fakemodel.Reply{ToolUses: []fakemodel.ToolUse{{Name: "bash",
			Input: map[string]any{"command": "echo boom >&2; exit 3", "description": "fail"}}},
			Usage: fakemodel.Usage{InputTokens: 150, OutputTokens: 10}},
		fakemodel.Reply{Text: "Done.", Usage: fakemodel.Usage{InputTokens: 200, OutputTokens: 30, CacheReadInputTokens: 3}},
	)
	s := r.start(t, agent.StartParams{})
	o := r.turn(t, context.Background(), s, 1, "Create out.txt.")
	mustComplete(t, o)

	data, err := os.ReadFile(filepath.Join(r.ws, "out.txt"))
	if err != nil || string(data) != "sortie" {
		t.Fatalf("out.txt = %q, %v; the CLI did not run the bash tool in the workspace", data, err)
	}
	tools := o.of(agent.EventToolResult)
	if len(tools) != 2 {
		t.Fatalf("tool_result events = %+v, want two", tools)
	}
	if ok := tools[0]; ok.ToolName != "bash" || ok.ToolError || ok.ToolDurationMS <= 0 {
		t.Errorf("first tool_result = %+v, want a successful bash call with its duration", ok)
	}
	if bad := tools[1]; bad.ToolName != "bash" || !bad.ToolError || !strings.Contains(bad.Message, "exit status 3") || bad.ToolDurationMS <= 0 {
		t.Errorf("second tool_result = %+v, want a failed bash call (exit status 3) with its duration", bad)
	}
	reqs := r.model.Messages()
	if len(reqs) != 3 {
		t.Fatalf("model requests = %d, want 3", len(reqs))
	}
	if res, ok := reqs[1].LastToolResult(); !ok || strings.TrimSpace(res.Text) == "" {
		t.Errorf("tool result sent back = %+v", res)
	}
	if !slices.Contains(reqs[0].Tools, "bash") {
		t.Errorf("tools offered = %v, want bash among them", reqs[0].Tools)
	}

	// Totals equal what the model reported: 100+150+200 in, 20+10+30 out, 7+3 cache reads.
	want := agent.Usage{Input: 450, Output: 60, Total: 510, CacheRead: 10}
	if o.res.Usage != want {
		t.Errorf("turn usage = %+v, want %+v", o.res.Usage, want)
	}
	usage := o.of(agent.EventTokenUsage)
	if len(usage) != 3 || usage[2].Usage != want {
		t.Errorf("token_usage events = %+v, want three ending at %+v", usage, want)
	}
	checkGrowing(t, o.events)
	if o.res.CostUSD <= 0 || usage[2].CostUSD != o.res.CostUSD {
		t.Errorf("cost = %v (last token_usage %v), want the CLI's step costs summed", o.res.CostUSD, usage[len(usage)-1].CostUSD)
	}
	for _, e := range o.events {
		if e.PID != o.res.PID || e.PID == 0 {
			t.Fatalf("event %s has pid %d, turn pid %d", e.Type, e.PID, o.res.PID)
		}
	}
}

func TestContract_ModelErrorFailsTheTurn(t *testing.T) {
	r := newRig(t, nil, fakemodel.Reply{Status: 400, ErrorMessage: "temperature: must be at most 1"})
	s := r.start(t, agent.StartParams{})
	o := r.turn(t, context.Background(), s, 1, "hello")
	if agent.KindOf(o.err) != agent.ErrTurnFailed || o.res.ExitReason != agent.EventTurnFailed {
		t.Fatalf("turn = %s, %v; want turn_failed with kind turn_failed", o.res.ExitReason, o.err)
	}
	for _, want := range []string{"status 400", "temperature: must be at most 1"} {
		if !strings.Contains(o.err.Error(), want) {
			t.Errorf("error %q does not say %q", o.err, want)
		}
	}
	if n := len(r.model.Messages()); n != 1 {
		t.Errorf("model requests = %d, want 1 (a 400 is not retried)", n)
	}
	if s.ID == "" {
		t.Errorf("the session id the CLI reported before failing was not kept")
	}
}

func TestContract_CommandNotFound(t *testing.T) {
	a, err := New(agent.Config{Kind: Kind, Command: filepath.Join(t.TempDir(), "no-such-opencode")})
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

func TestContract_VersionIsThePinnedCLI(t *testing.T) {
	r := newRig(t, nil)
	v, err := r.adapter.(agent.Versioner).Version(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if v != "1.18.33" {
		t.Errorf("version = %q, want the pinned 1.18.33", v)
	}
}

func TestContract_CancelMidTurnLeavesNoProcess(t *testing.T) {
	r := newRig(t, nil, fakemodel.Reply{Stall: true})
	s := r.start(t, agent.StartParams{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan turnOutcome, 1)
	go func() { done <- r.turn(t, ctx, s, 1, "hello") }()

	r.model.WaitStall(t, time.Minute)
	cancel()
	o := <-done
	if agent.KindOf(o.err) != agent.ErrTurnCancelled || o.res.ExitReason != agent.EventTurnCancelled {
		t.Fatalf("turn = %s, %v; want turn_cancelled", o.res.ExitReason, o.err)
	}
	if left := proctest.GroupMembers(t, o.res.PID); len(left) > 0 {
		t.Fatalf("processes of group %d left behind: %v", o.res.PID, left)
	}
}

func TestContract_PromptArrivesWhole(t *testing.T) {
	long := "- a list item first, then quotes \"x\" 'y' $(no) and\nlines\n" + strings.Repeat("0123456789abcdef", 210<<10/16) + "\nend"
	cases := map[string]string{
		"dash":  "--help me fix \"this\" bug",
		"large": long,
	}
	for name, prompt := range cases {
		t.Run(name, func(t *testing.T) {
			r := newRig(t, nil, fakemodel.Reply{Text: "read it"})
			s := r.start(t, agent.StartParams{})
			mustComplete(t, r.turn(t, context.Background(), s, 1, prompt))
			reqs := r.model.Messages()
			if len(reqs) != 1 || len(reqs[0].Messages) == 0 {
				t.Fatalf("model requests = %d", len(reqs))
			}
			if got := reqs[0].Messages[0].Text(); got != prompt {
				t.Errorf("the model got a prompt of %d bytes starting %q, want the %d bytes sent, starting %q",
					len(got), agent.Truncate(got, 40), len(prompt), agent.Truncate(prompt, 40))
			}
		})
	}
}

func TestContract_MCPSidecarReachable(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The operator's own OpenCode MCP server, inline, beside the daemon's generated file.
	opsServer := map[string]any{"type": "local", "command": []any{self}, "environment": map[string]any{mcpServerEnv: "1", "PING_TAG": "ops"}}
	r := newRig(t, map[string]any{"config": map[string]any{"mcp": map[string]any{"ops": opsServer}}},
		fakemodel.Reply{ToolUses: []fakemodel.ToolUse{{Name: "sortie-tools_ping", Input: map[string]any{"text": "hi"}}}},
		fakemodel.Reply{Text: "pinged"},
	)
	generated := filepath.Join(r.ws, ".sortie", "mcp.json")
	if err := os.MkdirAll(filepath.Dir(generated), 0o755); err != nil {
		t.Fatal(err)
	}
	def := map[string]any{"mcpServers": map[string]any{ToolsServer: map[string]any{
		"type": "stdio", "command": self, "args": []string{}, "env": map[string]string{mcpServerEnv: "1", "PING_TAG": "sortie"}}}}
	b, _ := json.Marshal(def)
	if err := os.WriteFile(generated, b, 0o644); err != nil {
		t.Fatal(err)
	}
	s := r.start(t, agent.StartParams{MCPConfigPath: generated})
	o := r.turn(t, context.Background(), s, 1, "ping the sortie tools")
	mustComplete(t, o)

	reqs := r.model.Messages()
	if len(reqs) != 2 {
		t.Fatalf("model requests = %d, want 2", len(reqs))
	}
	for _, tool := range []string{"ops_ping", "sortie-tools_ping"} {
		if !slices.Contains(reqs[0].Tools, tool) {
			t.Errorf("tools offered lack %s (the server did not load): %v", tool, reqs[0].Tools)
		}
	}
	res, ok := reqs[1].LastToolResult()
	if !ok || res.IsError || res.Text != "pong: hi (sortie)" {
		t.Errorf("MCP tool result = %+v, want pong: hi (sortie)", res)
	}
	if tools := o.of(agent.EventToolResult); len(tools) != 1 || tools[0].ToolName != "sortie-tools_ping" || tools[0].ToolError {
		t.Errorf("tool_result events = %+v", tools)
	}
}

// A daemon restarted with the same state directory resumes the session it had.
func TestContract_ResumeAfterRestart(t *testing.T) {
	r := newRig(t, nil,
		fakemodel.Reply{Text: "Noted: KIWI."},
		fakemodel.Reply{Text: "It was KIWI."},
	)
	s := r.start(t, agent.StartParams{})
	mustComplete(t, r.turn(t, context.Background(), s, 1, "Remember KIWI."))
	r.adapter.StopSession(context.Background(), s)

	again, err := New(agent.Config{Kind: Kind, Command: clis.OpenCode(t), Options: r.opts})
	if err != nil {
		t.Fatal(err)
	}
	r.adapter = again
	s2 := r.start(t, agent.StartParams{ResumeSessionID: s.ID})
	o := r.turn(t, context.Background(), s2, 1, "Which fruit?")
	mustComplete(t, o)
	if s2.ID != s.ID {
		t.Errorf("resumed session id = %s, want %s", s2.ID, s.ID)
	}
	if tr := r.model.Messages()[1].Transcript(); !strings.Contains(tr, "Noted: KIWI.") {
		t.Errorf("the resumed turn's request lacks the first exchange:\n%s", tr)
	}
}

// With a permission configuration, turns run without --auto, and a request the
// configuration asks a human about ends the turn as needing input.
func TestContract_PermissionAskEndsTheTurnForInput(t *testing.T) {
	r := newRig(t, map[string]any{"permission": map[string]any{"bash": "ask"}},
		fakemodel.Reply{ToolUses: []fakemodel.ToolUse{{Name: "bash", Input: map[string]any{"command": "touch asked.txt", "description": "touch"}}}},
		fakemodel.Reply{Text: "never asked"},
	)
	s := r.start(t, agent.StartParams{})
	o := r.turn(t, context.Background(), s, 1, "touch a file")
	if agent.KindOf(o.err) != agent.ErrTurnInputRequired || o.res.ExitReason != agent.EventTurnInputRequired {
		t.Fatalf("turn = %s, %v; want turn_input_required; events %v", o.res.ExitReason, o.err, describe(o.events))
	}
	if slices.Contains(r.argvs(t)[0], "--auto") {
		t.Errorf("argv %q: --auto with a permission configuration", r.argvs(t)[0])
	}
	if _, err := os.Stat(filepath.Join(r.ws, "asked.txt")); err == nil {
		t.Errorf("the command ran although its permission was only asked for")
	}
	if tools := o.of(agent.EventToolResult); len(tools) != 1 || !tools[0].ToolError {
		t.Errorf("tool_result events = %+v, want one rejected bash call", tools)
	}
}

// The operator's personal OpenCode configuration (XDG_CONFIG_HOME/opencode) does not
// reach a run: here it names a model provider that does not exist.
func TestContract_PersonalConfigIsIgnored(t *testing.T) {
	r := newRig(t, nil, fakemodel.Reply{Text: "hello"})
	personal := filepath.Join(r.home, ".config", "opencode")
	if err := os.MkdirAll(personal, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(personal, "opencode.json"), []byte(`{"model": "nowhere/broken", "share": "auto"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(append([]string(nil), r.env...), "OPENCODE_CONFIG="+filepath.Join(personal, "opencode.json"))
	s := r.start(t, agent.StartParams{Env: env})
	mustComplete(t, r.turn(t, context.Background(), s, 1, "hi"))
	if reqs := r.model.Messages(); len(reqs) != 1 || reqs[0].Model != model {
		t.Errorf("requests = %+v, want one for %s", reqs, model)
	}
}

func ofType(events []agent.Event, typ agent.EventType) []agent.Event {
	var out []agent.Event
	for _, e := range events {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

func describe(events []agent.Event) []string {
	var out []string
	for _, e := range events {
		out = append(out, string(e.Type)+": "+agent.Truncate(e.Message, 200))
	}
	return out
}
