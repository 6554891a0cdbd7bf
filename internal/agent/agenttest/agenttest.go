// Package agenttest is the contract suite every agent adapter passes: one set of cases,
// run against the real CLI (or the mock's child) through the agent.Adapter interface,
// with the model scripted through a dialect-neutral Model. An adapter package runs it
// from one test:
//
//	func TestAgentContract(t *testing.T) {
//		agenttest.Run(t, agenttest.Harness{...})
//	}
//
// The suite owns what every adapter must do (turns and continuations, tool results,
// cumulative usage exactly as the model reported it, model errors, a missing binary,
// cancellation, prompts, the sortie-tools sidecar); what only one CLI does stays in that
// adapter's own tests.
// docs/agents/adding-an-adapter.md explains how to write a harness.
package agenttest

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sortie/internal/agent"
	"sortie/internal/agent/proc/proctest"
)

// Case names, as Run names its subtests and as Harness.Unsupported keys them. A
// sub-check of a case is named "<case>/<check>".
const (
	CaseContinuation   = "continuation"              // two turns in one session, then a resume by id
	CaseHistory        = "continuation/history"      // the continuation's model requests carry the earlier turns
	CaseResumeByID     = "continuation/resume"       // a new session handle resumes the session by its id
	CaseResumeUsage    = "continuation/resume/usage" // the resumed session counts only its own turn's usage
	CaseShellTool      = "shell_tool"                // a succeeding and a failing shell command
	CaseUsageGrows     = "usage_grows"               // cumulative usage never decreases
	CaseUsageExact     = "usage_grows/exact"         // the session's output (and total) tokens are the model's, each counted once
	CaseUsageExactIn   = "usage_grows/exact_input"   // the session's input and cache-read tokens are the model's, each counted once
	CaseModelError     = "model_error"               // an HTTP error fails the turn
	CaseModelErrorText = "model_error/message"       // the failure carries the API's message
	CaseNotFound       = "agent_not_found"           // a missing binary
	CaseCancel         = "cancel"                    // cancelled mid-turn, nothing of the turn left
	CasePromptDash     = "prompt_dash"               // a prompt starting with '-'
	CasePromptLarge    = "prompt_large"              // a prompt over 200 KiB
	CaseMCP            = "mcp_sortie_status"         // the sortie-tools sidecar answers sortie_status
	CaseIssueState     = "issue_state"               // RemoveIssueState removes one issue's CLI state, no other's
)

// SessionIDs says when an adapter knows its session's id, which the suite holds it to.
type SessionIDs int

const (
	// IDAtStart: StartSession names the session (a generated id the CLI is told to
	// use, as claude's --session-id), and the id never changes.
	IDAtStart SessionIDs = iota
	// IDFromFirstTurn: the CLI assigns the id during the first turn (copilot's result
	// event); from then on it never changes.
	IDFromFirstTurn
	// IDPerTurn: any turn may name a new id, which is the one that resumes the
	// session; the turn's result always names the current one.
	IDPerTurn
)

// MCPServer is a stdio MCP server entry of .sortie/mcp.json.
type MCPServer struct {
	Command string
	Args    []string
	Env     map[string]string
}

// Harness is what an adapter package gives the suite.
type Harness struct {
	// Command returns the path of the agent CLI, or skips t when it is not installed
	// (internal/testkit/clis does both).
	Command func(t *testing.T) string
	// NewModel starts a fresh model for one case. The case scripts it, then builds
	// the adapter and starts sessions.
	NewModel func(t *testing.T) Model
	// NewAdapter builds the adapter that runs the CLI at command against m, already
	// scripted. command may not exist (CaseNotFound); an error from NewAdapter must
	// then be agent_not_found.
	NewAdapter func(t *testing.T, command string, m Model) (agent.Adapter, error)
	// Env returns the environment of a session in workspace ws against m
	// (StartParams.Env). The suite adds one variable of its own to find the
	// session's processes.
	Env func(t *testing.T, ws string, m Model) []string
	// Sidecar is the sortie-tools server CaseMCP writes into .sortie/mcp.json, with
	// SORTIE_WORKSPACE added to its Env: package mcptest serves the real one
	// from the test binary. Zero skips CaseMCP.
	Sidecar MCPServer
	// SessionIDs is when the adapter's session id is known.
	SessionIDs SessionIDs
	// BookkeepingTools are tools whose tool_result events are the CLI's own ending of a
	// turn, not the model's work (copilot's task_complete); the suite does not count
	// them.
	BookkeepingTools []string
	// Unsupported names the cases (and "<case>/<check>" sub-checks) the adapter cannot
	// do, with the reason; each is reported with t.Skip and that reason.
	Unsupported map[string]string
	// Patience bounds every wait for something already under way: a turn, a stall to
	// begin, a process to exit. 0 means 4 minutes. It is a bound against hangs, never
	// an assertion on speed.
	Patience time.Duration
	// ProcessPerSession: the adapter keeps one CLI process for the whole session
	// (codex's app-server) instead of one per turn, so Session.PID may stay set
	// between turns; StopSession must still leave nothing.
	ProcessPerSession bool
	// ModelErrorStatus is the HTTP status of CaseModelError's error, marked as not worth
	// retrying (X-Should-Retry: false); 0 means 500. A CLI that retries a 5xx whatever
	// the header says needs a 4xx here.
	ModelErrorStatus int
	// Parallel runs the cases in parallel with each other.
	Parallel bool
	// IssueStates returns the directory below which the adapter keeps its issues' CLI
	// state, for CaseIssueState; nil means <cache>/sortie, cache being the session
	// environment's (XDG_CACHE_HOME, else ~/.cache).
	IssueStates func(t *testing.T, m Model) string
}

// markerEnv is the variable the suite adds to every session's environment, with a
// value unique to the case, to find every process of the session in /proc.
const markerEnv = "SORTIE_AGENTTEST_CASE"

// Run runs every case of the suite against the harness's adapter, each as a subtest.
func Run(t *testing.T, h Harness) {
	t.Helper()
	if h.Command == nil || h.NewModel == nil || h.NewAdapter == nil || h.Env == nil {
		t.Fatal("agenttest: Harness needs Command, NewModel, NewAdapter and Env")
	}
	if h.Patience <= 0 {
		h.Patience = 4 * time.Minute
	}
	for _, c := range []struct {
		name string
		run  func(*suite, *testing.T)
	}{
		{CaseContinuation, (*suite).continuation},
		{CaseShellTool, (*suite).shellTool},
		{CaseUsageGrows, (*suite).usageGrows},
		{CaseModelError, (*suite).modelError},
		{CaseNotFound, (*suite).notFound},
		{CaseCancel, (*suite).cancel},
		{CasePromptDash, (*suite).promptDash},
		{CasePromptLarge, (*suite).promptLarge},
		{CaseMCP, (*suite).mcp},
		{CaseIssueState, (*suite).issueState},
	} {
		t.Run(c.name, func(t *testing.T) {
			if h.Parallel {
				t.Parallel()
			}
			h.skipIfUnsupported(t, c.name)
			c.run(&suite{h: h}, t)
		})
	}
}

func (h Harness) skipIfUnsupported(t *testing.T, name string) {
	t.Helper()
	if why, ok := h.Unsupported[name]; ok {
		t.Skipf("%s: not supported by this adapter: %s", name, why)
	}
}

// suite is one case's world: the harness, the case's model and adapter, its workspace.
type suite struct {
	h      Harness
	model  Model
	ad     agent.Adapter
	ws     string
	marker string
	// stopped are the sessions already stopped: StopSession is called once per session.
	stopped map[*agent.Session]bool
}

// setup gives the case a fresh model and workspace; script then fills the model,
// after which build builds the adapter.
func (s *suite) setup(t *testing.T) {
	t.Helper()
	s.model = s.h.NewModel(t)
	s.ws = t.TempDir()
	s.marker = markerEnv + "=" + rand.Text()
}

func (s *suite) build(t *testing.T) {
	t.Helper()
	a, err := s.h.NewAdapter(t, s.h.Command(t), s.model)
	if err != nil {
		t.Fatalf("building the adapter: %v", err)
	}
	s.ad = a
}

func (s *suite) params() agent.StartParams {
	return agent.StartParams{Workspace: s.ws}
}

// start starts a session; StopSession runs when the test ends. p.Env, when set, is
// added to the harness's environment.
func (s *suite) start(t *testing.T, p agent.StartParams) *agent.Session {
	t.Helper()
	p.Env = append(append(s.h.Env(t, p.Workspace, s.model), p.Env...), s.marker)
	ctx, cancel := context.WithTimeout(context.Background(), s.h.Patience)
	defer cancel()
	sess, err := s.ad.StartSession(ctx, p)
	if err != nil {
		t.Fatalf("StartSession: %v", err)
	}
	t.Cleanup(func() { s.stop(t, sess) })
	return sess
}

// stop stops a session started by start, once: now, or when the test ends.
func (s *suite) stop(t *testing.T, sess *agent.Session) {
	t.Helper()
	if s.stopped == nil {
		s.stopped = map[*agent.Session]bool{}
	}
	if s.stopped[sess] {
		return
	}
	s.stopped[sess] = true
	ctx, cancel := context.WithTimeout(context.Background(), s.h.Patience)
	defer cancel()
	if err := s.ad.StopSession(ctx, sess); err != nil {
		t.Errorf("StopSession: %v", err)
	}
}

// turn runs one turn under ctx, bounded by Patience, and checks what every turn's
// events must be, however it ended.
func (s *suite) turn(t *testing.T, ctx context.Context, sess *agent.Session, n int, prompt string) Outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, s.h.Patience)
	defer cancel()
	o := RunTurn(ctx, s.ad, sess, n, prompt)
	if ctx.Err() == context.DeadlineExceeded {
		t.Fatalf("turn %d did not end within %s (the suite's patience); events: %v", n, s.h.Patience, o.Types())
	}
	CheckTurn(t, n, sess, o, s.h.ProcessPerSession)
	return o
}

// terminal is the set of event types that end a turn.
var terminal = []agent.EventType{agent.EventTurnCompleted, agent.EventTurnFailed, agent.EventTurnCancelled,
	agent.EventTurnEndedWithError, agent.EventTurnInputRequired, agent.EventStartupFailed}

// CheckTurn checks the invariants of every turn n: one terminal event, last, matching the
// result; every event stamped with a time and the turn's process; unless the process
// lives as long as the session, none recorded on the session once the turn is over.
func CheckTurn(t testing.TB, n int, sess *agent.Session, o Outcome, perSession bool) {
	t.Helper()
	if len(o.Events) == 0 {
		t.Fatalf("turn %d: no events (result %s, %v); a turn always ends with a terminal event", n, o.Result.ExitReason, o.Err)
	}
	var ends []agent.EventType
	for _, e := range o.Events {
		if slices.Contains(terminal, e.Type) {
			ends = append(ends, e.Type)
		}
	}
	last := o.Events[len(o.Events)-1]
	if len(ends) != 1 || !slices.Contains(terminal, last.Type) {
		t.Errorf("turn %d events %v: want exactly one terminal event, the last", n, o.Types())
	}
	if last.Type != o.Result.ExitReason {
		t.Errorf("turn %d: last event %s, result's exit reason %s; want the same", n, last.Type, o.Result.ExitReason)
	}
	for _, e := range o.Events {
		if e.Time.IsZero() {
			t.Errorf("turn %d: %s event has no time", n, e.Type)
		}
		if o.Result.PID != 0 && e.PID != o.Result.PID {
			t.Errorf("turn %d: %s event has pid %d, the turn's is %d", n, e.Type, e.PID, o.Result.PID)
		}
	}
	if sess.PID != 0 && !perSession {
		t.Errorf("turn %d: Session.PID = %d after RunTurn returned; want 0 when no turn runs", n, sess.PID)
	}
}

// mustComplete fails t unless the turn completed.
func mustComplete(t *testing.T, n int, o Outcome) {
	t.Helper()
	if o.Err != nil || o.Result.ExitReason != agent.EventTurnCompleted {
		t.Fatalf("turn %d = %s, %v; want turn_completed; events: %v", n, o.Result.ExitReason, o.Err, o.Types())
	}
	if o.Result.PID == 0 {
		t.Errorf("turn %d: the result names no process", n)
	}
}

// sub runs a sub-check of the current case, skipped with its reason when the harness
// says the adapter cannot do it.
func (s *suite) sub(t *testing.T, key string, f func(t *testing.T)) {
	t.Helper()
	t.Run(path.Base(key), func(t *testing.T) {
		s.h.skipIfUnsupported(t, key)
		f(t)
	})
}

// continuation: a first turn, a second turn in the same session that continues it, and
// a third in a new session handle that resumes the session by id, as the orchestrator
// does for a run's next attempt.
func (s *suite) continuation(t *testing.T) {
	s.setup(t)
	s.model.Reply("Noted: the word is PAPAYA.")
	s.model.Reply("The word was PAPAYA.")
	s.model.Reply("Still PAPAYA.")
	s.build(t)
	sess := s.start(t, s.params())
	atStart := sess.ID
	switch {
	case s.h.SessionIDs == IDAtStart && atStart == "":
		t.Fatalf("StartSession named no session id; the harness says the adapter names it at start")
	case s.h.SessionIDs == IDFromFirstTurn && atStart != "":
		t.Errorf("StartSession named session %q; the harness says the CLI assigns it during the first turn", atStart)
	}
	ctx := context.Background()

	one := s.turn(t, ctx, sess, 1, "Remember the word PAPAYA.")
	mustComplete(t, 1, one)
	id := sess.ID
	if id == "" || one.Result.SessionID != id {
		t.Fatalf("after turn 1: session id %q, result's %q; want the same, not empty", id, one.Result.SessionID)
	}
	if s.h.SessionIDs == IDAtStart && id != atStart {
		t.Errorf("turn 1 changed the session id from %q to %q; the harness says it never changes", atStart, id)
	}
	if last := one.Events[len(one.Events)-1]; last.SessionID != id {
		t.Errorf("turn 1's %s event names session %q, want %q", last.Type, last.SessionID, id)
	}

	two := s.turn(t, ctx, sess, 2, "Which word did I ask you to remember?")
	mustComplete(t, 2, two)
	if s.h.SessionIDs != IDPerTurn && sess.ID != id {
		t.Errorf("turn 2 changed the session id from %q to %q; the harness says it is stable after turn 1", id, sess.ID)
	}
	if sess.ID == "" || two.Result.SessionID != sess.ID {
		t.Errorf("after turn 2: session id %q, result's %q; want the same, not empty", sess.ID, two.Result.SessionID)
	}
	for _, e := range two.Events {
		if e.SessionID != "" && e.SessionID != id && e.SessionID != sess.ID {
			t.Errorf("turn 2's %s event names session %q, want %q", e.Type, e.SessionID, sess.ID)
		}
	}

	s.sub(t, CaseHistory, func(t *testing.T) {
		reqs := s.model.Received()
		if len(reqs) == 0 {
			t.Fatal("the model received no request")
		}
		tr := reqs[len(reqs)-1].Transcript()
		for _, want := range []string{"Remember the word PAPAYA.", "Noted: the word is PAPAYA.", "Which word did I ask you to remember?"} {
			if !strings.Contains(tr, want) {
				t.Errorf("turn 2's request lacks %q: the session was not continued; transcript:\n%s", want, tr)
			}
		}
	})

	s.sub(t, CaseResumeByID, func(t *testing.T) {
		// As the orchestrator does for a run's next attempt: the old session is
		// stopped, a new one resumes it by id.
		s.stop(t, sess)
		p := s.params()
		p.ResumeSessionID = sess.ID
		base := s.model.Reported()
		again := s.start(t, p)
		if s.h.SessionIDs != IDFromFirstTurn && again.ID != sess.ID {
			t.Errorf("StartSession with ResumeSessionID %q named session %q", sess.ID, again.ID)
		}
		three := s.turn(t, ctx, again, 3, "And now?")
		mustComplete(t, 3, three)
		s.sub(t, CaseResumeUsage, func(t *testing.T) {
			// A session's usage is its own: the orchestrator adds each session's totals
			// to the issue's, so a resumed session that restated the earlier turns'
			// tokens would count them twice.
			_, noInput := s.h.Unsupported[CaseUsageExactIn]
			checkUsage(t, "the resumed session after its turn", three.Result.Usage, minus(s.model.Reported(), base), !noInput)
		})
		if s.h.SessionIDs != IDPerTurn && again.ID != sess.ID {
			t.Errorf("the resumed session's id is %q after its turn, want %q", again.ID, sess.ID)
		}
		reqs := s.model.Received()
		if tr := reqs[len(reqs)-1].Transcript(); !strings.Contains(tr, "Which word did I ask you to remember?") ||
			!strings.Contains(tr, "The word was PAPAYA.") {
			if _, ok := s.h.Unsupported[CaseHistory]; !ok {
				t.Errorf("the resumed turn's request lacks the session's earlier turns; transcript:\n%s", tr)
			}
		}
	})
}

// toolResults are the turn's tool_result events that are not bookkeeping.
func (s *suite) toolResults(o Outcome) []agent.Event {
	var out []agent.Event
	for _, e := range o.Of(agent.EventToolResult) {
		if !slices.Contains(s.h.BookkeepingTools, e.ToolName) {
			out = append(out, e)
		}
	}
	return out
}

// shellTool: one succeeding and one failing command through the CLI's shell tool, each
// one tool_result event with its duration and error flag.
func (s *suite) shellTool(t *testing.T) {
	s.setup(t)
	s.model.Shell("sleep 0.3; printf agenttest > agenttest-ok.txt")
	s.model.Shell("printf agenttest-boom >&2; exit 3")
	s.model.Reply("Ran both.")
	s.build(t)
	sess := s.start(t, s.params())
	o := s.turn(t, context.Background(), sess, 1, "Run the two commands.")
	mustComplete(t, 1, o)

	if b, err := os.ReadFile(filepath.Join(s.ws, "agenttest-ok.txt")); err != nil || string(b) != "agenttest" {
		var sent []ToolResult
		if reqs := s.model.Received(); len(reqs) > 0 {
			sent = reqs[len(reqs)-1].ToolResults
		}
		t.Errorf("agenttest-ok.txt = %q, %v: the shell tool did not run the command in the workspace; tool results sent to the model: %+v",
			b, err, sent)
	}
	tools := s.toolResults(o)
	if len(tools) != 2 {
		t.Fatalf("tool_result events = %+v; want exactly two, one per shell call", tools)
	}
	ok, failed := tools[0], tools[1]
	if ok.ToolName == "" || failed.ToolName != ok.ToolName {
		t.Errorf("tool names = %q, %q; want the shell tool's, twice", ok.ToolName, failed.ToolName)
	}
	if ok.ToolError {
		t.Errorf("the succeeding command's tool_result has ToolError (message %q)", ok.Message)
	}
	if !failed.ToolError {
		t.Errorf("the command that exited 3 has a tool_result without ToolError (message %q)", failed.Message)
	}
	// The first command sleeps 0.3 s, so it has a duration. The suite does not hold
	// the figure to the sleep: a CLI may report its own measure (codex 0.169.0 reports
	// about 280 ms for it), which the adapter passes on.
	if ok.ToolDurationMS <= 0 {
		t.Errorf("the succeeding command's duration = %d ms; it ran `sleep 0.3`, so more than 0", ok.ToolDurationMS)
	}
	if failed.ToolDurationMS < 0 {
		t.Errorf("the failing command's duration = %d ms", failed.ToolDurationMS)
	}
	reqs := s.model.Received()
	if len(reqs) == 0 {
		t.Fatal("the model received no request")
	}
	res := reqs[len(reqs)-1].ToolResults
	if len(res) < 2 || !strings.Contains(res[len(res)-1].Text, "agenttest-boom") {
		t.Errorf("tool results sent back to the model = %+v; want both, the last with the failing command's output", res)
	}
}

// minus is a's figures less b's.
func minus(a, b agent.Usage) agent.Usage {
	return agent.Usage{Input: a.Input - b.Input, Output: a.Output - b.Output, Total: a.Total - b.Total, CacheRead: a.CacheRead - b.CacheRead}
}

// checkUsage holds a session's cumulative usage to what the model reported while the
// session ran: the same output tokens and a total that is input plus output; with
// input, also the same input and cache-read tokens.
func checkUsage(t *testing.T, at string, got, want agent.Usage, input bool) {
	t.Helper()
	if got.Output != want.Output || got.Total != got.Input+got.Output {
		t.Errorf("usage of %s = %+v; the model reported %+v: want its output tokens, each response counted once, and total = input + output",
			at, got, want)
	}
	if input && (got.Input != want.Input || got.CacheRead != want.CacheRead) {
		t.Errorf("usage of %s = %+v; the model reported %+v: want its input and cache-read tokens, each response counted once",
			at, got, want)
	}
}

// usageGrows: across the events of two turns and their results, no cumulative figure
// ever goes down, and the session's totals after each turn are exactly what the model
// reported (each scripted response reports figures of its own, so one counted twice,
// or a turn's usage added to the session twice, shows).
func (s *suite) usageGrows(t *testing.T) {
	s.setup(t)
	if _, ok := s.h.Unsupported[CaseShellTool]; !ok {
		s.model.Shell("true") // two model requests in the turn
	}
	s.model.Reply("one")
	s.model.Reply("two")
	s.build(t)
	base := s.model.Reported()
	sess := s.start(t, s.params())
	var prev agent.Usage
	var where string
	var results, reported []agent.Usage
	step := func(u agent.Usage, at string) {
		t.Helper()
		if u.Input < prev.Input || u.Output < prev.Output || u.Total < prev.Total || u.CacheRead < prev.CacheRead {
			t.Errorf("usage went down: %+v at %s, after %+v at %s", u, at, prev, where)
		}
		prev, where = u, at
	}
	for n, prompt := range []string{"Run true.", "Say two."} {
		o := s.turn(t, context.Background(), sess, n+1, prompt)
		mustComplete(t, n+1, o)
		for i, e := range o.Events {
			// Usage is meaningful on token_usage; other events carry it when they can.
			if e.Type == agent.EventTokenUsage || e.Usage != (agent.Usage{}) {
				step(e.Usage, fmt.Sprintf("turn %d event %d (%s)", n+1, i, e.Type))
			}
		}
		step(o.Result.Usage, fmt.Sprintf("turn %d's result", n+1))
		results = append(results, o.Result.Usage)
		reported = append(reported, minus(s.model.Reported(), base))
		if len(o.Of(agent.EventTokenUsage)) == 0 {
			t.Errorf("turn %d: no token_usage event", n+1)
		}
	}
	if prev.Output <= 0 || prev.Total <= 0 {
		t.Errorf("usage after two turns = %+v; want output and total tokens counted", prev)
	}
	if prev.Total < prev.Output {
		t.Errorf("usage %+v: total below output", prev)
	}
	s.sub(t, CaseUsageExact, func(t *testing.T) {
		for i := range results {
			checkUsage(t, fmt.Sprintf("the session after turn %d", i+1), results[i], reported[i], false)
		}
	})
	s.sub(t, CaseUsageExactIn, func(t *testing.T) {
		for i := range results {
			if got, want := results[i], reported[i]; got.Input != want.Input || got.CacheRead != want.CacheRead {
				t.Errorf("usage of the session after turn %d = %+v; the model reported %+v: want its input and cache-read tokens, each response counted once",
					i+1, got, want)
			}
		}
	})
}

// modelError: the model answers an HTTP error the CLI must not retry forever (500 unless
// the harness says otherwise); the turn
// fails with a retryable error, and the API's message reaches the operator.
func (s *suite) modelError(t *testing.T) {
	const msg = "agenttest: the model is down"
	s.setup(t)
	s.model.Fail(cmp.Or(s.h.ModelErrorStatus, 500), msg)
	s.build(t)
	sess := s.start(t, s.params())
	o := s.turn(t, context.Background(), sess, 1, "hello")
	if o.Result.ExitReason != agent.EventTurnFailed || o.Err == nil {
		t.Fatalf("turn = %s, %v; want turn_failed with an error; events: %v", o.Result.ExitReason, o.Err, o.Types())
	}
	kind := agent.KindOf(o.Err)
	if kind == "" || !kind.Retryable() {
		t.Errorf("error %q has kind %q; want an *agent.Error of a retryable kind (turn_failed, port_exit, ...)", o.Err, kind)
	}
	s.sub(t, CaseModelErrorText, func(t *testing.T) {
		found := strings.Contains(o.Err.Error(), msg)
		for _, e := range o.Events {
			found = found || strings.Contains(e.Message, msg)
		}
		if !found {
			t.Errorf("neither the error %q nor any event carries the API's message %q", o.Err, msg)
		}
	})
}

// notFound: a command that does not exist is agent_not_found, from NewAdapter,
// StartSession or the first turn, and from the version preflight.
func (s *suite) notFound(t *testing.T) {
	s.setup(t)
	s.model.Reply("unreachable")
	missing := filepath.Join(t.TempDir(), "no-such-agent")
	a, err := s.h.NewAdapter(t, missing, s.model)
	if err != nil {
		if agent.KindOf(err) != agent.ErrNotFound {
			t.Fatalf("NewAdapter(%s) = %v; want nil or agent_not_found", missing, err)
		}
		return
	}
	s.ad = a
	if v, ok := a.(agent.Versioner); ok {
		ctx, cancel := context.WithTimeout(context.Background(), s.h.Patience)
		_, err := v.Version(ctx)
		cancel()
		if agent.KindOf(err) != agent.ErrNotFound {
			t.Errorf("Version = %v; want agent_not_found", err)
		}
	}
	p := s.params()
	p.Env = append(s.h.Env(t, p.Workspace, s.model), s.marker)
	sess, err := a.StartSession(context.Background(), p)
	if err != nil {
		if agent.KindOf(err) != agent.ErrNotFound {
			t.Errorf("StartSession = %v; want agent_not_found", err)
		}
		return
	}
	defer a.StopSession(context.Background(), sess)
	o := s.turn(t, context.Background(), sess, 1, "hello")
	if agent.KindOf(o.Err) != agent.ErrNotFound {
		t.Errorf("StartSession succeeded and the turn = %s, %v; want agent_not_found", o.Result.ExitReason, o.Err)
	}
	if n := len(s.model.Received()); n != 0 {
		t.Errorf("the model received %d requests from a missing agent", n)
	}
}

// cancel: the context is cancelled while the model stalls; the turn is turn_cancelled
// and no process of it is left: not its group, not a pid any event named, not anything
// that inherited the session's environment.
func (s *suite) cancel(t *testing.T) {
	s.setup(t)
	s.model.Stall()
	s.build(t)
	sess := s.start(t, s.params())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan Outcome, 1)
	// turn's t.Fatalf must not run on the turn's goroutine: check the result below.
	go func() { done <- RunTurn(ctx, s.ad, sess, 1, "hello") }()
	s.model.WaitStall(t, s.h.Patience)
	cancel()
	var o Outcome
	select {
	case o = <-done:
	case <-time.After(s.h.Patience):
		t.Fatalf("RunTurn did not return within %s of its context being cancelled", s.h.Patience)
	}
	CheckTurn(t, 1, sess, o, s.h.ProcessPerSession)
	if agent.KindOf(o.Err) != agent.ErrTurnCancelled || o.Result.ExitReason != agent.EventTurnCancelled {
		t.Fatalf("turn = %s, %v; want turn_cancelled", o.Result.ExitReason, o.Err)
	}
	pids := map[int]bool{}
	for _, e := range o.Events {
		if e.PID > 0 {
			pids[e.PID] = true
		}
	}
	if o.Result.PID > 0 {
		pids[o.Result.PID] = true
	}
	if len(pids) == 0 {
		t.Fatal("neither the events nor the result named the turn's process")
	}
	for pid := range pids {
		proctest.WaitExited(t, pid, s.h.Patience)
	}
	if o.Result.PID > 0 {
		proctest.RequireGroupGone(t, o.Result.PID)
	}
	for _, pid := range proctest.WithEnv(t, s.marker) {
		proctest.WaitExited(t, pid, s.h.Patience)
	}
	if left := proctest.WithEnv(t, s.marker); len(left) > 0 {
		t.Errorf("processes with the session's environment left after the cancelled turn: %v", left)
	}
}

// promptDash: a prompt that starts with '-' and holds shell syntax reaches the model
// byte for byte, not taken as a flag, not run by a shell.
func (s *suite) promptDash(t *testing.T) {
	prompt := "--version -p: fix it's \"bug\" $(touch agenttest-pwned) `touch agenttest-pwned`;\n- then * the rest; é 🚀"
	s.promptWhole(t, prompt)
	if _, err := os.Stat(filepath.Join(s.ws, "agenttest-pwned")); err == nil {
		t.Errorf("the prompt was run by a shell: agenttest-pwned exists")
	}
}

// promptLarge: a prompt over 200 KiB reaches the model whole.
func (s *suite) promptLarge(t *testing.T) {
	var b strings.Builder
	for i := 0; b.Len() < 210<<10; i++ {
		fmt.Fprintf(&b, "Line %06d: all work and no play makes Jack a dull boy.\n", i)
	}
	b.WriteString("END-OF-LARGE-PROMPT")
	s.promptWhole(t, b.String())
}

func (s *suite) promptWhole(t *testing.T, prompt string) {
	t.Helper()
	s.setup(t)
	s.model.Reply("Got it.")
	s.build(t)
	sess := s.start(t, s.params())
	o := s.turn(t, context.Background(), sess, 1, prompt)
	mustComplete(t, 1, o)
	reqs := s.model.Received()
	if len(reqs) == 0 {
		t.Fatal("the model received no request")
	}
	for _, r := range reqs {
		if r.UserText(prompt) {
			return
		}
	}
	var got []int
	for _, m := range reqs[0].Messages {
		got = append(got, len(m.Text))
	}
	t.Errorf("no user message the model received holds the %d-byte prompt whole (first request's message sizes: %v; start %q)",
		len(prompt), got, firstUser(reqs[0]))
}

func firstUser(r Request) string {
	for _, m := range r.Messages {
		if m.Role == "user" {
			return agent.Truncate(m.Text, 200)
		}
	}
	return ""
}

// mcp: the model calls sortie_status on the sortie-tools server of .sortie/mcp.json;
// the sidecar answers from the workspace's state file, and the answer reaches the
// model as one successful tool_result.
func (s *suite) mcp(t *testing.T) {
	if s.h.Sidecar.Command == "" {
		t.Skipf("%s: the harness names no sortie-tools sidecar (Harness.Sidecar)", CaseMCP)
	}
	s.setup(t)
	dir := filepath.Join(s.ws, ".sortie")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Format(time.RFC3339)
	state := fmt.Sprintf(`{"version":1,"issue_id":"agenttest-1","issue_identifier":"AT-1","run_id":1,"session_id":"",`+
		`"turn_number":3,"max_turns":17,"attempt":null,"session_started_at":%q,"updated_at":%q,`+
		`"tokens":{"input_tokens":0,"output_tokens":0,"total_tokens":0,"cache_read_tokens":0},"cost_usd":0}`, now, now)
	if err := os.WriteFile(filepath.Join(dir, "state.json"), []byte(state), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"SORTIE_WORKSPACE": s.ws}
	for k, v := range s.h.Sidecar.Env {
		env[k] = v
	}
	args := s.h.Sidecar.Args
	if args == nil {
		args = []string{}
	}
	conf, err := json.Marshal(map[string]any{"mcpServers": map[string]any{agent.ToolsServer: map[string]any{
		"type": "stdio", "command": s.h.Sidecar.Command, "args": args, "env": env}}})
	if err != nil {
		t.Fatal(err)
	}
	mcpConfig := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(mcpConfig, conf, 0o600); err != nil {
		t.Fatal(err)
	}

	s.model.CallMCP(agent.ToolsServer, "sortie_status", nil)
	s.model.Reply("Status read.")
	s.build(t)
	p := s.params()
	p.MCPConfigPath = mcpConfig
	// As the daemon does: the file and its one parse.
	if p.MCPServers, err = agent.ParseMCPServers(conf); err != nil {
		t.Fatal(err)
	}
	sess := s.start(t, p)
	o := s.turn(t, context.Background(), sess, 1, "Check your status with sortie_status.")
	mustComplete(t, 1, o)

	tools := s.toolResults(o)
	if len(tools) != 1 || tools[0].ToolError || !strings.Contains(tools[0].ToolName, "sortie_status") {
		t.Errorf("tool_result events = %+v; want one successful call of sortie_status", tools)
	}
	var answered bool
	var seen []ToolResult
	for _, r := range s.model.Received() {
		for _, res := range r.ToolResults {
			seen = append(seen, res)
			answered = answered || (!res.IsError && strings.Contains(res.Text, `"max_turns":17`) &&
				strings.Contains(res.Text, `"turns_remaining":14`))
		}
	}
	if !answered {
		t.Errorf("tool results the model received = %+v; want sortie_status's answer from the state file (max_turns 17, turns_remaining 14)", seen)
	}
}

// issueState: an adapter that keeps an issue's CLI state between sessions
// (agent.IssueStateRemover) keeps it below <cache>/sortie, and RemoveIssueState removes
// all of that issue's, in the environment its sessions had, and nothing of another
// issue's.
func (s *suite) issueState(t *testing.T) {
	s.setup(t)
	s.model.Reply("First issue done.")
	s.model.Reply("Second issue done.")
	s.build(t)
	remover, ok := s.ad.(agent.IssueStateRemover)
	if !ok {
		t.Skipf("%s: the adapter keeps no per-issue state (it is no agent.IssueStateRemover)", CaseIssueState)
	}
	var below string
	if s.h.IssueStates != nil {
		below = s.h.IssueStates(t, s.model)
	} else {
		cache := agent.CacheHome(s.h.Env(t, s.ws, s.model))
		if cache == "" {
			t.Fatalf("%s: the harness's environment names no cache directory (XDG_CACHE_HOME or HOME)", CaseIssueState)
		}
		below = filepath.Join(cache, "sortie")
	}
	// Earlier cases may have left state below the same directory: only what appears
	// from here on is this case's.
	before := filesBelow(t, below)
	session := func(issueID, ws string) []string {
		t.Helper()
		p := agent.StartParams{Workspace: ws, Env: []string{"SORTIE_ISSUE_ID=" + issueID}}
		sess := s.start(t, p)
		mustComplete(t, 1, s.turn(t, context.Background(), sess, 1, "Say that you are done."))
		s.stop(t, sess)
		return slices.DeleteFunc(filesBelow(t, below), func(f string) bool { return slices.Contains(before, f) })
	}
	first := session("agenttest-issue-1", s.ws)
	if len(first) == 0 {
		t.Fatalf("no file below %s after a session: where does the adapter keep the issue's state?", below)
	}
	other := t.TempDir()
	both := session("agenttest-issue-2", other)
	env := append(s.h.Env(t, s.ws, s.model), "SORTIE_ISSUE_ID=agenttest-issue-1")
	if err := remover.RemoveIssueState(env, s.ws, nil); err != nil {
		t.Fatalf("RemoveIssueState: %v", err)
	}
	left := filesBelow(t, below)
	for _, f := range first {
		if slices.Contains(left, f) {
			t.Errorf("%s is still there after RemoveIssueState of its issue", f)
		}
	}
	for _, f := range both {
		if !slices.Contains(first, f) && !slices.Contains(left, f) {
			t.Errorf("%s, of the other issue, was removed", f)
		}
	}
	if err := remover.RemoveIssueState(env, s.ws, nil); err != nil {
		t.Errorf("RemoveIssueState of state already removed: %v, want nil", err)
	}
}

// filesBelow lists the files (not directories) below dir, relative to it.
func filesBelow(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) && path == dir {
				return filepath.SkipDir
			}
			return err
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(dir, path)
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("listing %s: %v", dir, err)
	}
	return out
}
