// Package engine runs the workflow tools API (spec/workflow-tools-api.md): the twelve
// tools, the session tokens they thread, the checkpoint gate, the advisory validation
// warnings and the execution trace. It is one engine for both deployments:
//
//   - in the daemon, Sortie's MCP sidecar forwards each call over the agent socket and
//     the daemon answers it here, with its store as State and Humans set, so a
//     checkpoint's option must be the one a human chose (dashboard, API, tracker);
//   - standalone (`sortie mcp-server --workflows DIR`), the sidecar calls it directly,
//     with a file-backed State and the upstream rules (an option after a minimum
//     response time).
//
// Where the upstream server has holes (workflow-server-behaviour.md §4–§5) the engine
// closes them: tokens are bound to a server-side sequence (package session), so an
// older token cannot be replayed to skip the gate; respond_checkpoint demands exactly
// one mode, each with its precondition, and treats auto_advance:false or
// condition_not_met:false as errors, not as modes; get_checkpoint reads without moving
// the session's activity.
//
// A call never panics and never returns a Go error: every failure is a Response with
// IsError set, whose body names the kind and says what to do next.
package engine

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"sortie/internal/store"
	"sortie/internal/workflow"
	"sortie/internal/workflow/session"
)

// DefaultMinResponse is the least time between a checkpoint's issuance and an
// option_id response (workflow-tools-api.md: "default 3s").
const DefaultMinResponse = 3 * time.Second

// State persists sessions, the trace and checkpoints. The daemon's store implements
// it; NewMemoryState is the standalone one.
type State interface {
	SaveWorkflowSession(ctx context.Context, s store.WorkflowSession) error
	LoadWorkflowSessions(ctx context.Context) ([]store.WorkflowSession, error)
	AppendTraceEvent(ctx context.Context, e store.TraceEvent) (int64, error)
	TraceEvents(ctx context.Context, sessionID string, limit int) ([]store.TraceEvent, error)
	ArmCheckpoints(ctx context.Context, sessionID string, cps []store.Checkpoint) ([]store.Checkpoint, error)
	ResolveCheckpoint(ctx context.Context, sessionID, checkpointID, resolution string, at time.Time) (store.Checkpoint, error)
	PendingCheckpoints(ctx context.Context) ([]store.Checkpoint, error)
}

// Caller is who a call comes from. In the daemon it is the agent session the agent
// socket's capability token names; standalone it is zero.
type Caller struct {
	IssueID    string
	Identifier string
	RunID      int64
}

// Hooks let the daemon react to what agents do. Each may be nil; they are called
// after the state is saved, outside the engine's locks, and must not block.
type Hooks struct {
	// Armed: next_activity issued checkpoints (with their store ids and any answer
	// carried over from an earlier issuance).
	Armed func(c Caller, cps []store.Checkpoint)
	// Resolved: respond_checkpoint cleared a checkpoint.
	Resolved func(c Caller, cp store.Checkpoint)
	// Traced: a call was recorded in the trace.
	Traced func(e store.TraceEvent)
}

// Options configures an Engine.
type Options struct {
	// Library returns the current workflow library; it is called on every tool call,
	// so a reloaded library takes effect at once.
	Library func() *workflow.Library
	// Key signs session and trace tokens: at least session.KeySize bytes.
	Key   []byte
	State State
	// Humans is the daemon's mode: an option_id response must be the option a human
	// chose (store.Checkpoint.Answer), and an unanswered checkpoint asks the agent to
	// end its turn.
	Humans bool
	// MinResponse is the least time between issuance and an option_id response; 0
	// means DefaultMinResponse, a negative value none.
	MinResponse time.Duration
	Now         func() time.Time
	Log         *slog.Logger
	Hooks       Hooks
	// Server and Version name this server in discover and health_check.
	Server, Version string
}

// Engine serves the workflow tools. It is safe for concurrent use.
type Engine struct {
	o        Options
	sessions *session.Store
	traceKey []byte
	started  time.Time

	mu       sync.Mutex
	bindings map[string]binding      // sid → owner
	segments map[string][]traceEvent // sid → events since the last trace token
	// locks serialise the calls of one session from token check to token issue, so
	// that two calls presenting the same token cannot both act on it (the loser
	// would otherwise arm checkpoints or close a trace segment before failing).
	locks map[string]*sync.Mutex
}

// binding ties a session to the issue whose agent started it (daemon mode).
type binding struct {
	workflow   string
	issueID    string
	identifier string
}

// New returns an engine; call Restore before serving to reload persisted sessions.
func New(o Options) (*Engine, error) {
	if o.Library == nil {
		return nil, fmt.Errorf("engine: Options.Library is required")
	}
	if o.State == nil {
		return nil, fmt.Errorf("engine: Options.State is required")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.MinResponse == 0 {
		o.MinResponse = DefaultMinResponse
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Server == "" {
		o.Server = "sortie-workflows"
	}
	ss, err := session.NewStore(o.Key, o.Now)
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	// Trace tokens are signed with a key derived from the session key, so that one
	// kind of token can never pass as the other.
	m := hmac.New(sha256.New, o.Key)
	m.Write([]byte("sortie workflow trace token v1"))
	return &Engine{o: o, sessions: ss, traceKey: m.Sum(nil), started: o.Now(),
		bindings: map[string]binding{}, segments: map[string][]traceEvent{}, locks: map[string]*sync.Mutex{}}, nil
}

// Restore reloads every persisted session, so that the newest token of each verifies
// after a restart and no older one does. A record whose token this key did not sign
// is skipped with a warning.
func (e *Engine) Restore(ctx context.Context) error {
	recs, err := e.o.State.LoadWorkflowSessions(ctx)
	if err != nil {
		return fmt.Errorf("engine: loading workflow sessions: %w", err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, r := range recs {
		if _, err := e.sessions.Restore(r.Token); err != nil {
			e.o.Log.Warn("workflow session not restored: its token does not verify under this key", "session_id", r.SessionID, "error", err)
			continue
		}
		e.bindings[r.SessionID] = binding{workflow: r.Workflow, issueID: r.IssueID, identifier: r.Identifier}
	}
	return nil
}

// ForgetIssue ends, in memory, every session bound to issueID (the daemon's issue
// left the active states or was handed off): none of their tokens verifies afterwards,
// and their binding, lock and trace segment are dropped. A call of one of them already
// under way finishes first. The persisted records are the caller's to end
// (store.WorkflowStore.EndIssueWorkflows), after this, so that no call in flight saves
// a session back. It returns the ids of the sessions it ended, sorted.
func (e *Engine) ForgetIssue(issueID string) []string {
	if issueID == "" {
		return nil
	}
	e.mu.Lock()
	var sids []string
	for sid, b := range e.bindings {
		if b.issueID == issueID {
			sids = append(sids, sid)
		}
	}
	e.mu.Unlock()
	slices.Sort(sids)
	for _, sid := range sids {
		e.mu.Lock()
		m, ok := e.locks[sid]
		e.mu.Unlock()
		if ok {
			m.Lock() // wait for a call of the session under way
		}
		e.sessions.Forget(sid)
		e.mu.Lock()
		delete(e.bindings, sid)
		delete(e.segments, sid)
		delete(e.locks, sid)
		e.mu.Unlock()
		if ok {
			m.Unlock()
		}
	}
	return sids
}

// Response is one tool call's answer: Body is the JSON content shown to the agent,
// Meta its _meta.
type Response struct {
	Body    any
	Meta    map[string]any
	IsError bool
}

// Error kinds of failed calls, in the body's "kind".
const (
	KindInvalidInput          = "invalid_input"
	KindWorkflowNotFound      = "workflow_not_found"
	KindActivityNotFound      = "activity_not_found"
	KindCheckpointNotFound    = "checkpoint_not_found"
	KindCheckpointsPending    = "checkpoints_pending" // the gate
	KindCheckpointNotPending  = "checkpoint_not_pending"
	KindAwaitingHuman         = "awaiting_human" // daemon: no human answer yet
	KindWrongOption           = "wrong_option"   // daemon: not the option the human chose
	KindInvalidOption         = "invalid_option"
	KindTooEarly              = "response_too_early"
	KindTimerNotElapsed       = "auto_advance_timer_not_elapsed"
	KindModeNotAllowed        = "mode_not_allowed"
	KindNoActivity            = "no_current_activity"
	KindStepNotFound          = "step_not_found"
	KindSkillNotFound         = "skill_not_found"
	KindResourceNotFound      = "resource_not_found"
	KindSessionOfAnotherIssue = "session_of_another_issue"
	KindNotATransition        = "invalid_transition" // next_activity off the graph (free_entry aside)
	KindStateUnavailable      = "state_unavailable"
	KindInternal              = "internal_error"
)

// errorBody is the body of a failed call.
type errorBody struct {
	Error string `json:"error"`
	Kind  string `json:"kind"`
}

// callError is a failed call inside the engine.
type callError struct {
	kind string
	msg  string
}

func (c *callError) Error() string { return c.msg }

func fail(kind, format string, args ...any) *callError {
	return &callError{kind: kind, msg: fmt.Sprintf(format, args...)}
}

// Call runs tool with the agent's raw JSON arguments.
func (e *Engine) Call(ctx context.Context, c Caller, tool string, args json.RawMessage) (resp Response) {
	spec, ok := specByName(tool)
	if !ok {
		return Response{IsError: true, Body: errorBody{Kind: KindInvalidInput,
			Error: fmt.Sprintf("unknown workflow tool %q (tools: %v)", tool, Names())}}
	}
	start := e.o.Now()
	cl := &call{e: e, ctx: ctx, caller: c, tool: tool}
	defer func() {
		if r := recover(); r != nil {
			e.o.Log.Error("workflow tool panicked", "tool", tool, "panic", fmt.Sprint(r))
			resp = Response{IsError: true, Body: errorBody{Kind: KindInternal,
				Error: fmt.Sprintf("the %s tool failed unexpectedly; please report this as a sortie bug", tool)}}
		}
	}()
	resp = e.run(cl, spec, args, start)
	// Hooks run after the session's lock is released (Hooks: "outside the engine's
	// locks"). A panicking hook must not turn a call whose token was issued into an
	// error: the agent would be left without its newest token.
	for _, f := range cl.after {
		e.runHook(tool, f)
	}
	return resp
}

func (e *Engine) runHook(tool string, f func()) {
	defer func() {
		if r := recover(); r != nil {
			e.o.Log.Error("workflow hook panicked", "tool", tool, "panic", fmt.Sprint(r))
		}
	}()
	f()
}

// run runs one call while holding its session's lock (taken by verify).
func (e *Engine) run(cl *call, spec Spec, args json.RawMessage, start time.Time) (resp Response) {
	defer cl.release()
	body, err := spec.run(cl, args)
	if err != nil {
		var ce *callError
		var se *session.Error
		switch {
		case errors.As(err, &ce):
		case errors.As(err, &se):
			ce = &callError{kind: string(se.Kind), msg: se.Error()}
		default:
			e.o.Log.Error("workflow tool failed", "tool", cl.tool, "error", err)
			ce = &callError{kind: KindInternal, msg: fmt.Sprintf("the %s tool failed: %v", cl.tool, err)}
		}
		resp = Response{IsError: true, Body: errorBody{Error: ce.msg, Kind: ce.kind}}
	} else {
		resp = Response{Body: body, Meta: cl.meta()}
	}
	if spec.traced {
		e.trace(cl, start, resp)
	}
	return resp
}

// lock takes the lock of session sid for the rest of c.
func (c *call) lock(sid string) {
	if c.unlock != nil {
		return
	}
	c.e.mu.Lock()
	m, ok := c.e.locks[sid]
	if !ok {
		m = &sync.Mutex{}
		c.e.locks[sid] = m
	}
	c.e.mu.Unlock()
	m.Lock()
	c.unlock = m.Unlock
}

// release releases the session lock c holds, if any.
func (c *call) release() {
	if c.unlock != nil {
		c.unlock()
		c.unlock = nil
	}
}

// later runs f once the call has released its session lock.
func (c *call) later(f func()) { c.after = append(c.after, f) }

// call is one tool call in progress.
type call struct {
	e      *Engine
	ctx    context.Context
	caller Caller
	tool   string

	// in is the verified payload of the token presented; out the payload issued.
	in, out        *session.Payload
	token          string // the token issued
	warnings       []string
	traceToken     string
	detail         string
	activityForLog string

	unlock func()   // releases the session lock, once taken
	after  []func() // hooks to run after the lock is released
}

func (c *call) warn(format string, args ...any) {
	c.warnings = append(c.warnings, fmt.Sprintf(format, args...))
}

// validation is the validation result of workflow-tools-api.md.
type validation struct {
	Status   string   `json:"status"`
	Warnings []string `json:"warnings"`
}

func (c *call) validation() validation {
	v := validation{Status: "valid", Warnings: c.warnings}
	if v.Warnings == nil {
		v.Warnings = []string{}
	}
	if len(c.warnings) > 0 {
		v.Status = "warning"
	}
	return v
}

func (c *call) meta() map[string]any {
	if c.token == "" {
		return nil
	}
	m := map[string]any{"session_token": c.token, "validation": c.validation()}
	if c.traceToken != "" {
		m["trace_token"] = c.traceToken
	}
	return m
}

// library returns the current library or fails.
func (c *call) library() (*workflow.Library, error) {
	l := c.e.o.Library()
	if l == nil {
		return nil, fail(KindWorkflowNotFound, "no workflow library is loaded; check workflows.dir (or --workflows) and the daemon's log")
	}
	return l, nil
}

// verify checks the presented token and its owner, and returns the session's
// workflow; it also runs the version-drift check every session tool runs.
func (c *call) verify(token string) (*workflow.Workflow, error) {
	if token == "" {
		return nil, fail(KindInvalidInput, "session_token: missing; pass the session_token from your most recent workflow tool response (start_session gives the first)")
	}
	p, err := c.verifyLocked(token, "")
	if err != nil {
		return nil, err
	}
	c.in = &p
	c.activityForLog = p.Activity
	c.e.mu.Lock()
	b, ok := c.e.bindings[p.SessionID]
	c.e.mu.Unlock()
	if ok && c.caller.IssueID != "" && b.issueID != c.caller.IssueID {
		return nil, fail(KindSessionOfAnotherIssue, "session %s belongs to issue %s, not to this one; call start_session(workflow_id) to begin a session for this issue", p.SessionID, b.identifier)
	}
	lib, err := c.library()
	if err != nil {
		return nil, err
	}
	w, ok := lib.Workflow(p.Workflow)
	if !ok {
		return nil, fail(KindWorkflowNotFound, "the session's workflow %q is no longer in the library (workflow consistency check); call list_workflows and start a new session", p.Workflow)
	}
	if d, drift := w.VersionDrift(p.Version); drift {
		c.warn("version drift: %s", d.Msg)
	}
	return w, nil
}

// verifyLocked checks the token's signature, takes its session's lock and then
// checks that it is the session's newest token (of workflowID, when not "").
func (c *call) verifyLocked(token, workflowID string) (session.Payload, error) {
	p, err := session.Parse(c.e.o.Key, token)
	if err != nil {
		return session.Payload{}, err
	}
	c.lock(p.SessionID)
	return c.e.sessions.VerifyWorkflow(token, workflowID)
}

// begin decodes args into a, verifies the session token it carries (*token, a field
// of a) and, for a gated tool, applies the checkpoint gate.
func (c *call) begin(args json.RawMessage, a any, token *string, gated bool) (*workflow.Workflow, error) {
	if err := decode(c.tool, args, a); err != nil {
		return nil, err
	}
	w, err := c.verify(*token)
	if err != nil {
		return nil, err
	}
	if gated {
		if err := c.gate(w); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// gate fails while checkpoints are pending (every gated tool).
func (c *call) gate(w *workflow.Workflow) error {
	if len(c.in.Pending) == 0 {
		return nil
	}
	return fail(KindCheckpointsPending, "Blocked: %d unresolved checkpoint(s) on activity %q %q. %s",
		len(c.in.Pending), c.in.Activity, c.in.Pending, c.e.resolveHints(w, c.in.Activity, c.in.Pending))
}

// issue advances the session with next (the verified payload, changed) and saves it.
func (c *call) issue(next session.Payload) error {
	tok, p, err := c.e.sessions.Issue(next)
	if err != nil {
		return err
	}
	c.token, c.out = tok, &p
	c.save(p, tok)
	return nil
}

// save persists the newest token. A failure is logged, not returned: the in-memory
// session is authoritative while the process runs, and failing the call would strand
// the agent with a token it was never given.
func (c *call) save(p session.Payload, tok string) {
	c.e.mu.Lock()
	b := c.e.bindings[p.SessionID]
	c.e.mu.Unlock()
	err := c.e.o.State.SaveWorkflowSession(c.ctx, store.WorkflowSession{SessionID: p.SessionID, Workflow: p.Workflow,
		IssueID: b.issueID, Identifier: b.identifier, Token: tok, UpdatedAt: c.e.o.Now()})
	if err != nil {
		c.e.o.Log.Error("saving the workflow session failed; it will not survive a restart", "session_id", p.SessionID, "error", err)
	}
}

// withToken adds session_token and validation to a body object (some clients do
// not show _meta, so the body carries them too).
func (c *call) withToken(body map[string]any) map[string]any {
	body["session_token"] = c.token
	body["validation"] = c.validation()
	return body
}

// newSpanID returns a random span id.
func newSpanID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%x", b)
}
