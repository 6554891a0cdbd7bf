package claude

// Contract tests: the real claude CLI, at the version pinned in scripts/clis, driven
// through the adapter against the fake Anthropic API in internal/testkit/fakemodel.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"sortie/internal/agent"
	"sortie/internal/testkit/clis"
	"sortie/internal/testkit/fakemodel"
)

var update = flag.Bool("update", false, "re-capture testdata/*.jsonl from the real CLI")

// model is the model every contract test asks for, so that names are deterministic.
const model = "claude-sonnet-4-5"

// rig is one contract test's world: a fake model, a HOME for the CLI's own files, a
// workspace, and the adapter running the real CLI through a wrapper that logs argv.
type rig struct {
	model   *fakemodel.Server
	home    string
	ws      string
	argvLog string
	env     []string
	adapter agent.Adapter
}

func newRig(t *testing.T, opts map[string]any, script ...fakemodel.Reply) *rig {
	t.Helper()
	claude := clis.Claude(t)
	r := &rig{model: fakemodel.Start(t, script...), home: t.TempDir(), ws: t.TempDir()}
	r.argvLog = filepath.Join(t.TempDir(), "argv.log")
	wrapper := writeScript(t, "claude-wrapper", fmt.Sprintf(
		"#!/bin/sh\nprintf '%%s\\n' \"$@\" '--' >> %s\nexec %s \"$@\"\n", shellQuote(r.argvLog), shellQuote(claude)))
	r.env = clis.ClaudeEnv(os.Environ(), r.model.URL, r.home)
	if opts == nil {
		opts = map[string]any{}
	}
	if _, ok := opts["permission_mode"]; !ok {
		opts["permission_mode"] = "bypassPermissions"
	}
	if _, ok := opts["model"]; !ok {
		opts["model"] = model
	}
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
		t.Fatalf("turn = %s, %v; events: %v", o.res.ExitReason, o.err, types(o.events))
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
	first := s.ID
	ctx := context.Background()

	mustComplete(t, r.turn(t, ctx, s, 1, "Remember the word PAPAYA."))
	mustComplete(t, r.turn(t, ctx, s, 2, "Which word did I ask you to remember?"))

	argvs := r.argvs(t)
	if len(argvs) != 2 {
		t.Fatalf("CLI started %d times, want 2", len(argvs))
	}
	if id, ok := flagValue(argvs[0], "--session-id"); !ok || id != first {
		t.Errorf("turn 1 argv %q: want --session-id %s", argvs[0], first)
	}
	if _, ok := flagValue(argvs[0], "--resume"); ok {
		t.Errorf("turn 1 must not resume: %q", argvs[0])
	}
	if id, ok := flagValue(argvs[1], "--resume"); !ok || id != first {
		t.Errorf("turn 2 argv %q: want --resume %s", argvs[1], first)
	}
	if s.ID != first {
		t.Errorf("session id changed from %s to %s", first, s.ID)
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
	if reqs[0].Model != model || reqs[1].Model != model {
		t.Errorf("models requested = %q, %q; want %q", reqs[0].Model, reqs[1].Model, model)
	}
	// The prompt arrives whole on stdin: -p has no argument of its own.
	if argvs[0][0] != "-p" || strings.Contains(strings.Join(argvs[0], " "), "PAPAYA") {
		t.Errorf("prompt leaked into argv: %q", argvs[0])
	}
}

func TestContract_BashToolCallAndTokenUsage(t *testing.T) {
	r := newRig(t, nil,
		fakemodel.Reply{Text: "Writing the file.", ToolUses: []fakemodel.ToolUse{{Name: "Bash",
			Input: map[string]any{"command": "printf sortie > out.txt", "description": "write out.txt"}}},
			Usage: fakemodel.Usage{InputTokens: 100, OutputTokens: 20, CacheReadInputTokens: 7}},
		fakemodel.Reply{Text: "Done.", Usage: fakemodel.Usage{InputTokens: 200, OutputTokens: 30, CacheReadInputTokens: 3}},
	)
	s := r.start(t, agent.StartParams{})
	o := r.turn(t, context.Background(), s, 1, "Create out.txt.")
	mustComplete(t, o)

	data, err := os.ReadFile(filepath.Join(r.ws, "out.txt"))
	if err != nil || string(data) != "sortie" {
		t.Fatalf("out.txt = %q, %v; the CLI did not run the Bash tool in the workspace", data, err)
	}
	tools := o.of(agent.EventToolResult)
	if len(tools) != 1 || tools[0].ToolName != "Bash" || tools[0].ToolError || tools[0].ToolDurationMS < 0 {
		t.Fatalf("tool_result events = %+v, want one successful Bash", tools)
	}
	// The CLI sent the tool's result back to the model.
	reqs := r.model.Messages()
	if len(reqs) != 2 {
		t.Fatalf("model requests = %d, want 2", len(reqs))
	}
	if res := reqs[1].ToolResults(); len(res) != 1 || res[0].IsError {
		t.Errorf("tool results sent back = %+v", res)
	}
	if !contains(reqs[0].Tools, "Bash") {
		t.Errorf("tools offered = %v, want Bash among them", reqs[0].Tools)
	}

	// Totals equal what the model reported: 100+200 in, 20+30 out, 7+3 cache reads.
	want := agent.Usage{Input: 300, Output: 50, Total: 350, CacheRead: 10}
	if o.res.Usage != want {
		t.Errorf("turn usage = %+v, want %+v", o.res.Usage, want)
	}
	usage := o.of(agent.EventTokenUsage)
	if len(usage) == 0 || usage[len(usage)-1].Usage != want {
		t.Errorf("last token_usage = %+v, want %+v", usage, want)
	}
	for _, e := range usage {
		if e.Model != model {
			t.Errorf("token_usage model = %q, want %q", e.Model, model)
		}
	}
	if o.res.CostUSD <= 0 {
		t.Errorf("cost = %v, want the CLI's figure", o.res.CostUSD)
	}
	if started := o.of(agent.EventSessionStarted); len(started) != 1 || started[0].SessionID != s.ID {
		t.Errorf("session_started = %+v", started)
	}
	for _, e := range o.events {
		if e.PID != o.res.PID || e.PID == 0 {
			t.Fatalf("event %s has pid %d, turn pid %d", e.Type, e.PID, o.res.PID)
		}
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func TestContract_ModelErrorsSurfaceAndFail(t *testing.T) {
	cases := []struct {
		name   string
		reply  fakemodel.Reply
		status string
	}{
		{"429", fakemodel.Reply{Status: 429, RetryAfter: "0", Times: 2}, "status 429"},
		{"500", fakemodel.Reply{Status: 500, Times: 2}, "status 500"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, nil, c.reply)
			s := r.start(t, agent.StartParams{})
			o := r.turn(t, context.Background(), s, 1, "hello")
			if agent.KindOf(o.err) != agent.ErrPortExit || o.res.ExitReason != agent.EventTurnFailed {
				t.Fatalf("turn = %s, %v; want turn_failed with port_exit (the CLI exits 1)", o.res.ExitReason, o.err)
			}
			if !strings.Contains(o.err.Error(), "API status "+c.name) {
				t.Errorf("error %q does not name the API status", o.err)
			}
			var retry, apiErr bool
			for _, e := range o.of(agent.EventNotification) {
				retry = retry || strings.Contains(e.Message, c.status)
				apiErr = apiErr || strings.Contains(e.Message, "API Error")
			}
			if !retry || !apiErr {
				t.Errorf("notifications %v: want the retry (%s) and the API error", o.of(agent.EventNotification), c.status)
			}
		})
	}
}

func TestContract_MalformedStreamFails(t *testing.T) {
	r := newRig(t, nil, fakemodel.Reply{Malformed: true, Times: 4})
	s := r.start(t, agent.StartParams{})
	o := r.turn(t, context.Background(), s, 1, "hello")
	if o.err == nil || o.res.ExitReason != agent.EventTurnFailed {
		t.Fatalf("turn = %s, %v; want a failure", o.res.ExitReason, o.err)
	}
}

func TestContract_CommandNotFound(t *testing.T) {
	a, err := New(agent.Config{Kind: Kind, Command: filepath.Join(t.TempDir(), "no-such-claude")})
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
	if !strings.HasSuffix(v, "(Claude Code)") {
		t.Errorf("version = %q, want \"<semver> (Claude Code)\"", v)
	}
}

func TestContract_CancelMidStreamLeavesNoProcess(t *testing.T) {
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
	if left := groupMembers(t, o.res.PID); len(left) > 0 {
		t.Fatalf("processes of group %d left behind: %v", o.res.PID, left)
	}
}

// groupMembers lists the processes whose process group is pgid, from /proc.
func groupMembers(t *testing.T, pgid int) []int {
	t.Helper()
	if pgid <= 0 {
		t.Fatalf("no pid recorded for the turn")
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// Fields after the command's closing parenthesis: state ppid pgrp ...
		rest := string(data[strings.LastIndexByte(string(data), ')')+2:])
		f := strings.Fields(rest)
		if len(f) > 2 && f[2] == strconv.Itoa(pgid) && f[0] != "Z" {
			out = append(out, pid)
		}
	}
	return out
}

func TestContract_MCPConfigsArePassed(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	server := func(name string) string {
		return fmt.Sprintf(`{"mcpServers":{%q:%s}}`, name, serverDef(self))
	}
	operator := filepath.Join(t.TempDir(), "operator-mcp.json")
	if err := os.WriteFile(operator, []byte(server("ops")), 0o644); err != nil {
		t.Fatal(err)
	}
	// Without a generated file, the operator's mcp_config is passed as it is.
	{
		r := newRig(t, map[string]any{"mcp_config": operator})
		s := r.start(t, agent.StartParams{})
		r.turn(t, context.Background(), s, 1, "hi")
		if got, _ := flagValue(r.argvs(t)[0], "--mcp-config"); got != operator {
			t.Errorf("--mcp-config = %q, want the operator's %s", got, operator)
		}
	}
	// The daemon's generated file holds the operator's servers and sortie-tools; it is
	// the only one passed.
	r := newRig(t, map[string]any{"mcp_config": operator},
		fakemodel.Reply{ToolUses: []fakemodel.ToolUse{{Name: "mcp__sortie-tools__ping", Input: map[string]any{"text": "hi"}}}},
		fakemodel.Reply{Text: "pinged"},
	)
	generated := filepath.Join(r.ws, ".sortie", "mcp.json")
	os.MkdirAll(filepath.Dir(generated), 0o755)
	both := fmt.Sprintf(`{"mcpServers":{"ops":%s,"sortie-tools":%s}}`, serverDef(self), serverDef(self))
	if err := os.WriteFile(generated, []byte(both), 0o644); err != nil {
		t.Fatal(err)
	}
	r.env = append(r.env, "ENABLE_TOOL_SEARCH=false", "MCP_TIMEOUT=20000")
	s := r.start(t, agent.StartParams{MCPConfigPath: generated})
	o := r.turn(t, context.Background(), s, 1, "ping the sortie tools")
	mustComplete(t, o)

	argv := r.argvs(t)[0]
	var configs []string
	for i, a := range argv {
		if a == "--mcp-config" {
			configs = append(configs, argv[i+1])
		}
	}
	if len(configs) != 1 || configs[0] != generated {
		t.Errorf("--mcp-config values = %q, want only the generated file", configs)
	}
	reqs := r.model.Messages()
	if len(reqs) != 2 {
		t.Fatalf("model requests = %d, want 2", len(reqs))
	}
	for _, tool := range []string{"mcp__ops__ping", "mcp__sortie-tools__ping"} {
		if !contains(reqs[0].Tools, tool) {
			t.Errorf("tools offered lack %s (the server did not load): %v", tool, reqs[0].Tools)
		}
	}
	res := reqs[1].ToolResults()
	if len(res) != 1 || res[0].IsError || !strings.Contains(res[0].Text, "pong: hi") {
		t.Errorf("MCP tool result = %+v, want pong: hi", res)
	}
	if tools := o.of(agent.EventToolResult); len(tools) != 1 || tools[0].ToolName != "mcp__sortie-tools__ping" {
		t.Errorf("tool_result events = %+v", tools)
	}
}

// TestContract_Capture re-captures the committed transcripts from the real CLI with
// -update; otherwise it checks that the committed ones still parse as they did.
func TestContract_Capture(t *testing.T) {
	claude := clis.Claude(t)
	captures := []struct {
		file   string
		script []fakemodel.Reply
		turns  []string
	}{
		{"two_blocks_tool_call.jsonl", []fakemodel.Reply{
			{Text: "Writing it.", ToolUses: []fakemodel.ToolUse{{Name: "Bash", Input: map[string]any{"command": "printf x > x.txt", "description": "write x"}}},
				Usage: fakemodel.Usage{InputTokens: 100, OutputTokens: 20, CacheReadInputTokens: 7}},
			{Text: "Done.", Usage: fakemodel.Usage{InputTokens: 200, OutputTokens: 30}},
		}, []string{"write x.txt"}},
		{"tool_error.jsonl", []fakemodel.Reply{
			{ToolUses: []fakemodel.ToolUse{{Name: "Bash", Input: map[string]any{"command": "printf '\\033[31mboom\\033[0m\\n' >&2; exit 3", "description": "fail"}}},
				Usage: fakemodel.Usage{InputTokens: 50, OutputTokens: 10}},
			{Text: "It failed.", Usage: fakemodel.Usage{InputTokens: 80, OutputTokens: 5}},
		}, []string{"run the failing command"}},
		{"api_error_429.jsonl", []fakemodel.Reply{{Status: 429, RetryAfter: "0", Times: 2}}, []string{"hello"}},
	}
	for _, c := range captures {
		t.Run(c.file, func(t *testing.T) {
			path := filepath.Join("testdata", c.file)
			if *update {
				m := fakemodel.Start(t, c.script...)
				ws, home := t.TempDir(), t.TempDir()
				var out []byte
				for _, p := range c.turns {
					cmd := exec.Command(claude, "-p", "--output-format", "stream-json", "--verbose",
						"--session-id", "00000000-0000-4000-8000-000000000001", "--permission-mode", "bypassPermissions", "--model", model)
					cmd.Dir, cmd.Env, cmd.Stdin = ws, clis.ClaudeEnv(os.Environ(), m.URL, home), strings.NewReader(p)
					b, err := cmd.Output()
					var ee *exec.ExitError
					if err != nil && !errors.As(err, &ee) {
						t.Fatal(err)
					}
					out = append(out, b...)
				}
				if err := os.WriteFile(path, scrub(out, ws, home), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			lines := readLines(t, path)
			if len(lines) < 3 {
				t.Fatalf("%s has %d lines", path, len(lines))
			}
			events, tr := run(t, lines...)
			if len(ofType(events, agent.EventMalformed)) > 0 || tr.result == nil {
				t.Fatalf("%s: malformed events or no result: %v", path, types(events))
			}
		})
	}
}

// scrub replaces the capture's temp paths so that committed transcripts do not depend
// on the machine that captured them.
func scrub(b []byte, ws, home string) []byte {
	// The CLI also names the workspace in paths with / and . turned into -.
	dashed := strings.NewReplacer("/", "-", ".", "-", "_", "-")
	s := strings.NewReplacer(ws, "/workspace", home, "/home/agent", dashed.Replace(ws), "-workspace").Replace(string(b))
	return []byte(s)
}

// serverDef is an MCP server entry running this test binary as the ping server, in the
// shape the daemon writes into .sortie/mcp.json.
func serverDef(self string) string {
	return fmt.Sprintf(`{"type":"stdio","command":%q,"args":[],"env":{%q:"1"}}`, self, mcpServerEnv)
}
