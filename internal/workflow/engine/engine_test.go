package engine

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"sortie/internal/store"
	"sortie/internal/workflow"
	"sortie/internal/workflow/session"
)

func TestBootstrapTools_Shapes(t *testing.T) {
	h := newHarness(t, writeLibrary(t, flowFiles), humans)
	h.clk.Advance(90 * time.Second)

	r := h.raw(Caller{}, ToolDiscover, nil)
	if r.IsError || r.Meta != nil {
		t.Fatalf("discover: error %v or _meta %v; want a body without _meta", r.IsError, r.Meta)
	}
	d := body(t, r).(obj)
	if d["server"] != "test" || d["version"] != "9.9.9" || d["discovery"] != "Start with list_workflows.\n" ||
		d["bootstrap"] == "" || d["checkpoints"] == nil {
		t.Fatalf("discover = %v", d)
	}
	var ids []string
	for _, w := range d["available_workflows"].([]any) {
		ids = append(ids, w.(obj)["id"].(string)+"@"+w.(obj)["version"].(string))
	}
	if strings.Join(ids, ",") != "flow@1.0.0,other@3.0.0" {
		t.Fatalf("available_workflows = %v, want flow and other without meta", ids)
	}

	r = h.raw(Caller{}, ToolListWorkflows, "{}")
	l := body(t, r).([]any)
	if r.IsError || r.Meta != nil || len(l) != 2 {
		t.Fatalf("list_workflows = %v (meta %v)", l, r.Meta)
	}
	f := l[0].(obj)
	if f["id"] != "flow" || f["title"] != "Test flow" || f["description"] == nil || f["initialActivity"] != "start" ||
		strs(f["tags"])[0] != "test" {
		t.Fatalf("list_workflows[0] = %v", f)
	}
	if o := l[1].(obj); o["initialActivity"] != "only" {
		t.Fatalf("list_workflows[1] = %v: without initialActivity, the first activity", o)
	}

	r = h.raw(Caller{}, ToolHealthCheck, nil)
	hc := body(t, r).(obj)
	if r.IsError || r.Meta != nil || hc["status"] != "healthy" || hc["workflows_available"] != 2.0 || hc["uptime_seconds"] != 90.0 || hc["server"] != "test" {
		t.Fatalf("health_check = %v (meta %v)", hc, r.Meta)
	}
}

func TestBootstrapTools_NoLibrary(t *testing.T) {
	h := newHarness(t, nil)
	if r := h.raw(Caller{}, ToolHealthCheck, nil); r.IsError || body(t, r).(obj)["workflows_available"] != 0.0 {
		t.Fatalf("health_check without a library = %v", body(t, r))
	}
	h.err(ToolDiscover, obj{}, KindWorkflowNotFound)
	h.err(ToolStartSession, obj{"workflow_id": "flow"}, KindWorkflowNotFound)
}

func TestStartSession_Fresh(t *testing.T) {
	h := newHarness(t, writeLibrary(t, flowFiles))
	m := h.ok(ToolStartSession, obj{"workflow_id": "flow", "agent_id": "agent-1"})
	w := m["workflow"].(obj)
	if w["id"] != "flow" || w["version"] != "1.0.0" || w["title"] != "Test flow" || m["inherited"] != nil {
		t.Fatalf("start_session = %v", m)
	}
	p, err := session.Parse(testKey, h.tok)
	if err != nil {
		t.Fatal(err)
	}
	if p.Workflow != "flow" || p.Version != "1.0.0" || p.AgentID != "agent-1" || p.Activity != "" || len(p.Pending) != 0 {
		t.Fatalf("payload = %+v", p)
	}
	for _, tc := range []struct{ id, kind string }{
		{"nope", KindWorkflowNotFound},
		{"meta", KindWorkflowNotFound},
		{"", KindInvalidInput},
	} {
		h.tok = ""
		msg := h.err(ToolStartSession, obj{"workflow_id": tc.id}, tc.kind)
		if tc.kind == KindWorkflowNotFound && !strings.Contains(msg, "flow, other") {
			t.Fatalf("start_session(%q): %q does not list the workflows", tc.id, msg)
		}
	}
}

func TestStartSession_Inherited(t *testing.T) {
	h := newHarness(t, writeLibrary(t, flowFiles))
	h.enterStart()
	parent := h.tok

	// Workflow mismatch: the token is flow's.
	h.err(ToolStartSession, obj{"workflow_id": "other", "session_token": parent}, string(session.KindWorkflowMismatch))

	m := h.ok(ToolStartSession, obj{"workflow_id": "flow", "session_token": parent, "agent_id": "worker-7"})
	if m["inherited"] != true || m["current_activity"] != "start" || !slices.Equal(strs(m["pending_checkpoints"]), []string{"go"}) {
		t.Fatalf("inherited start_session = %v", m)
	}
	noWarnings(t, "inherit", m)
	pp, _ := session.Parse(testKey, parent)
	p, _ := session.Parse(testKey, h.tok)
	if p.SessionID != pp.SessionID || p.AgentID != "worker-7" || p.Activity != "start" ||
		!slices.Equal(p.Pending, []string{"go"}) || p.PendingAt != pp.PendingAt || p.Seq != pp.Seq+1 {
		t.Fatalf("inherited payload %+v from %+v: want sid, act, pcp, pcpt kept, aid stamped", p, pp)
	}
	// The parent's token is now stale: the worker holds the newest.
	h.err(ToolGetCheckpoint, obj{"session_token": parent, "activity_id": "start", "checkpoint_id": "go"}, string(session.KindStale))
	// An inheriting start_session without agent_id clears it.
	h.ok(ToolStartSession, obj{"workflow_id": "flow", "session_token": h.tok})
	if p, _ := session.Parse(testKey, h.tok); p.AgentID != "" {
		t.Fatalf("aid = %q after inheriting without agent_id, want empty", p.AgentID)
	}
	// The inherited pending checkpoint still gates.
	h.err(ToolGetSkills, obj{}, KindCheckpointsPending)
}

func TestTokens_TamperReplayUnknown(t *testing.T) {
	lib := writeLibrary(t, flowFiles)
	h := newHarness(t, lib)
	h.start("flow")
	preGate := h.tok
	h.ok(ToolNextActivity, obj{"activity_id": "start"})

	body64, sig, _ := strings.Cut(h.tok, ".")
	raw, _ := base64.RawURLEncoding.DecodeString(body64)
	forged := base64.RawURLEncoding.EncodeToString([]byte(strings.Replace(string(raw), `"pcp":["go"]`, `"pcp":[]`, 1)))

	other := newHarness(t, lib)
	other.start("flow")

	cases := []struct {
		name, token, kind string
	}{
		{"bad signature", body64 + "." + strings.Repeat("0", 64), string(session.KindBadSignature)},
		{"forged empty pcp", forged + "." + sig, string(session.KindBadSignature)},
		{"not a token", "hello", string(session.KindMalformed)},
		// Replaying the token from before next_activity (empty pcp) must not skip the gate.
		{"replayed pre-gate token", preGate, string(session.KindStale)},
		{"another server's session", other.tok, string(session.KindUnknownSession)},
		{"empty", "", KindInvalidInput},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, call := range []struct {
				tool string
				args obj
			}{
				{ToolGetSkills, obj{}},
				{ToolGetWorkflow, obj{}},
				{ToolNextActivity, obj{"activity_id": "work"}},
				{ToolRespondCheckpoint, obj{"checkpoint_id": "go", "option_id": "approve"}},
				{ToolGetTrace, obj{}},
			} {
				args := obj{"session_token": tc.token}
				for k, v := range call.args {
					args[k] = v
				}
				h.err(call.tool, args, tc.kind)
			}
		})
	}
	// None of it moved the session: the newest token still works and is still gated.
	h.err(ToolGetSkills, obj{}, KindCheckpointsPending)
	h.ok(ToolGetCheckpoint, obj{"activity_id": "start", "checkpoint_id": "go"})
}

func TestTokens_StaleAfterEveryCall(t *testing.T) {
	h := newHarness(t, writeLibrary(t, flowFiles))
	h.start("flow")
	for _, call := range []struct {
		tool string
		args obj
	}{
		{ToolGetSkills, obj{}},
		{ToolGetWorkflow, obj{}},
		{ToolGetResource, obj{"resource_index": "5"}},
		{ToolGetTrace, obj{}},
		{ToolNextActivity, obj{"activity_id": "start"}},
		{ToolGetCheckpoint, obj{"activity_id": "start", "checkpoint_id": "go"}},
	} {
		old := h.tok
		h.ok(call.tool, call.args)
		h.err(ToolGetCheckpoint, obj{"session_token": old, "activity_id": "start", "checkpoint_id": "go"}, string(session.KindStale))
	}
}

func TestCall_InvalidArguments(t *testing.T) {
	h := newHarness(t, writeLibrary(t, flowFiles))
	h.start("flow")
	cases := []struct {
		name, tool, args, want string
	}{
		{"unknown field", ToolGetSkills, `{"session_token":"x","bogus":1}`, `"bogus" is not an argument`},
		{"unknown field, no-arg tool", ToolDiscover, `{"x":1}`, "arguments: none"},
		{"wrong type", ToolGetWorkflow, `{"session_token":"x","summary":"yes"}`, "argument summary: want bool"},
		{"wrong type of a manifest", ToolNextActivity, `{"session_token":"x","activity_id":"a","step_manifest":{"step_id":"a"}}`, "step_manifest"},
		{"not an object", ToolGetSkills, `["x"]`, "must be a JSON object"},
		{"a string", ToolStartSession, `"flow"`, "must be a JSON object"},
		{"two objects", ToolGetSkills, `{} {}`, "one JSON object"},
		{"not JSON", ToolGetSkills, `{`, "not valid JSON"},
		{"missing activity_id", ToolNextActivity, `{"session_token":"TOKEN"}`, "activity_id: missing"},
		{"missing step_id", ToolGetSkill, `{"session_token":"TOKEN"}`, "step_id: missing"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := h.raw(Caller{}, tc.tool, strings.Replace(tc.args, "TOKEN", h.tok, 1))
			b, _ := r.Body.(errorBody)
			if !r.IsError || b.Kind != KindInvalidInput || !strings.Contains(b.Error, tc.want) {
				t.Fatalf("%s(%s) = %+v, want invalid_input containing %q", tc.tool, tc.args, r.Body, tc.want)
			}
		})
	}
	if r := h.raw(Caller{}, "get_everything", nil); !r.IsError || r.Body.(errorBody).Kind != KindInvalidInput ||
		!strings.Contains(r.Body.(errorBody).Error, "get_trace") {
		t.Fatalf("unknown tool = %+v, want invalid_input listing the tools", r.Body)
	}
}

func TestSpecs_NamesAndSchemas(t *testing.T) {
	want := []string{ToolDiscover, ToolListWorkflows, ToolHealthCheck, ToolStartSession, ToolGetWorkflow, ToolNextActivity,
		ToolGetCheckpoint, ToolRespondCheckpoint, ToolGetSkills, ToolGetSkill, ToolGetResource, ToolGetTrace}
	if !slices.Equal(Names(), want) {
		t.Fatalf("Names() = %v", Names())
	}
	for _, s := range Specs() {
		var sc map[string]any
		if err := json.Unmarshal(s.InputSchema, &sc); err != nil || sc["type"] != "object" || s.Description == "" {
			t.Fatalf("%s: schema %s (%v), description %q", s.Name, s.InputSchema, err, s.Description)
		}
	}
}

func TestIssueBinding_RefusesAnotherIssue(t *testing.T) {
	h := newHarness(t, writeLibrary(t, flowFiles), humans)
	alice := Caller{IssueID: "1", Identifier: "PROJ-1", RunID: 7}
	bob := Caller{IssueID: "2", Identifier: "PROJ-2", RunID: 8}
	h.okAs(alice, ToolStartSession, obj{"workflow_id": "flow"})
	h.okAs(alice, ToolGetSkills, obj{})
	msg := h.errAs(bob, ToolGetSkills, obj{}, KindSessionOfAnotherIssue)
	if !strings.Contains(msg, "PROJ-1") {
		t.Fatalf("error %q does not name the owning issue", msg)
	}
	h.errAs(bob, ToolStartSession, obj{"workflow_id": "flow"}, KindSessionOfAnotherIssue)
	// A caller without an issue (standalone) is not refused; alice still is the owner.
	h.okAs(alice, ToolStartSession, obj{"workflow_id": "flow", "session_token": h.tok})
	h.okAs(alice, ToolNextActivity, obj{"activity_id": "start"})
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.calls) != 1 || h.calls[0].caller != alice || h.calls[0].cps[0].IssueID != "1" || h.calls[0].cps[0].RunID != 7 {
		t.Fatalf("Armed hook calls = %+v, want one for alice's issue", h.calls)
	}
}

func TestRestart_NewestTokenOnly(t *testing.T) {
	path := t.TempDir() + "/state/sessions.json"
	lib := writeLibrary(t, flowFiles)
	st, err := NewMemoryState(path)
	if err != nil {
		t.Fatal(err)
	}
	h := newHarnessState(t, lib, st)
	h.start("flow")
	older := h.tok
	h.ok(ToolNextActivity, obj{"activity_id": "start"})
	newest := h.tok

	st2, err := NewMemoryState(path)
	if err != nil {
		t.Fatal(err)
	}
	h2 := newHarnessState(t, lib, st2)
	h2.tok = newest
	h2.err(ToolGetSkills, obj{"session_token": older}, string(session.KindStale))
	h2.err(ToolGetSkills, obj{}, KindCheckpointsPending)
	h2.ok(ToolGetCheckpoint, obj{"activity_id": "start", "checkpoint_id": "go"})

	// A state file from another key: the session is skipped, not fatal.
	h3 := newHarnessState(t, lib, st2, func(o *Options) { o.Key = []byte(strings.Repeat("k", 32)) })
	h3.tok = h2.tok
	h3.err(ToolGetSkills, obj{}, string(session.KindBadSignature))
}

func TestMemoryState_CorruptFile(t *testing.T) {
	path := t.TempDir() + "/sessions.json"
	if err := os.WriteFile(path, []byte("not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := NewMemoryState(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("NewMemoryState(corrupt) = %v, want an error naming the file", err)
	}
}

func TestNew_RequiresLibraryStateKey(t *testing.T) {
	st, _ := NewMemoryState("")
	nilLibrary := func() *workflow.Library { return nil }
	for _, o := range []Options{
		{State: st, Key: testKey},
		{Library: nilLibrary, Key: testKey},
		{Library: nilLibrary, State: st, Key: []byte("short")},
	} {
		if _, err := New(o); err == nil {
			t.Fatalf("New(%+v) succeeded", o)
		}
	}
}

// failingState fails the operations named in fail.
type failingState struct {
	*MemoryState
	fail map[string]bool
}

var errBroken = errors.New("disk on fire")

func (f *failingState) ArmCheckpoints(ctx context.Context, sid string, cps []store.Checkpoint) ([]store.Checkpoint, error) {
	if f.fail["arm"] {
		return nil, errBroken
	}
	return f.MemoryState.ArmCheckpoints(ctx, sid, cps)
}

func (f *failingState) ResolveCheckpoint(ctx context.Context, sid, id, res string, at time.Time) (store.Checkpoint, error) {
	if f.fail["resolve"] {
		return store.Checkpoint{}, errBroken
	}
	return f.MemoryState.ResolveCheckpoint(ctx, sid, id, res, at)
}

func (f *failingState) SaveWorkflowSession(ctx context.Context, s store.WorkflowSession) error {
	if f.fail["save"] {
		return errBroken
	}
	return f.MemoryState.SaveWorkflowSession(ctx, s)
}

func TestStateFailures_CallCanBeRetried(t *testing.T) {
	mem, _ := NewMemoryState("")
	fs := &failingState{MemoryState: mem, fail: map[string]bool{}}
	h := newHarness(t, writeLibrary(t, flowFiles), func(o *Options) { o.State = fs })
	h.start("flow")
	h.ok(ToolGetSkills, obj{})

	fs.fail["arm"] = true
	h.err(ToolNextActivity, obj{"activity_id": "start"}, KindStateUnavailable)
	fs.fail["arm"] = false
	m := h.ok(ToolNextActivity, obj{"activity_id": "start"}) // the same token still works
	p, err := h.e.parseTraceToken(m["trace_token"].(string))
	if err != nil || !slices.Equal(eventNames(p.Events), []string{ToolStartSession, ToolGetSkills, ToolNextActivity}) {
		t.Fatalf("trace token after a failed next_activity: %+v, %v", p, err)
	}

	h.clk.Advance(3 * time.Second)
	fs.fail["resolve"] = true
	h.err(ToolRespondCheckpoint, obj{"checkpoint_id": "go", "option_id": "approve"}, KindStateUnavailable)
	fs.fail["resolve"] = false
	h.ok(ToolRespondCheckpoint, obj{"checkpoint_id": "go", "option_id": "approve"})

	// A failed save is logged, not returned: the call succeeds in memory.
	fs.fail["save"] = true
	h.ok(ToolGetSkills, obj{})
}

func TestHooks_PanicDoesNotLoseTheToken(t *testing.T) {
	h := newHarness(t, writeLibrary(t, flowFiles), func(o *Options) {
		o.Hooks.Armed = func(Caller, []store.Checkpoint) { panic("hook bug") }
	})
	h.start("flow")
	h.ok(ToolNextActivity, obj{"activity_id": "start"})
	h.ok(ToolGetCheckpoint, obj{"activity_id": "start", "checkpoint_id": "go"})
}

// TestForgetIssue_EndsTheIssuesSessionsOnly: once the daemon forgets an issue's
// sessions (it left the active states or was handed off), none of their tokens is
// accepted, their in-memory records are gone, and other issues' sessions go on.
func TestForgetIssue_EndsTheIssuesSessionsOnly(t *testing.T) {
	h := newHarness(t, writeLibrary(t, flowFiles), humans)
	alice := Caller{IssueID: "1", Identifier: "PROJ-1", RunID: 7}
	bob := Caller{IssueID: "2", Identifier: "PROJ-2", RunID: 8}
	h.okAs(bob, ToolStartSession, obj{"workflow_id": "flow"})
	bobTok := h.tok
	h.tok = ""
	h.okAs(alice, ToolStartSession, obj{"workflow_id": "flow"})
	h.okAs(alice, ToolNextActivity, obj{"activity_id": "start"}) // a checkpoint pending
	aliceTok := h.tok
	p, err := session.Parse(testKey, aliceTok)
	if err != nil {
		t.Fatal(err)
	}

	if got := h.e.ForgetIssue("1"); len(got) != 1 || got[0] != p.SessionID {
		t.Fatalf("ForgetIssue(1) = %q, want alice's session %q", got, p.SessionID)
	}
	h.e.mu.Lock()
	_, bound := h.e.bindings[p.SessionID]
	_, locked := h.e.locks[p.SessionID]
	_, traced := h.e.segments[p.SessionID]
	h.e.mu.Unlock()
	if bound || locked || traced {
		t.Errorf("after ForgetIssue: binding %v, lock %v, trace segment %v of alice's session kept; want none", bound, locked, traced)
	}
	h.errAs(alice, ToolGetCheckpoint, obj{"activity_id": "start", "checkpoint_id": "go"}, string(session.KindUnknownSession))
	h.errAs(alice, ToolStartSession, obj{"workflow_id": "flow", "session_token": aliceTok}, string(session.KindUnknownSession))

	h.tok = bobTok
	h.okAs(bob, ToolGetSkills, obj{})
	// A new session for the issue starts afresh.
	h.tok = ""
	h.okAs(alice, ToolStartSession, obj{"workflow_id": "flow"})
	h.okAs(alice, ToolGetSkills, obj{})
	if got := h.e.ForgetIssue("no-such-issue"); len(got) != 0 {
		t.Errorf("ForgetIssue(unknown) = %q, want nothing", got)
	}
}
