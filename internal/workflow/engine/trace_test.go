package engine

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"sortie/internal/store"
	"sortie/internal/workflow"
)

// names returns the tool names of trace events.
func names(evs []any) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.(obj)["name"].(string))
	}
	return out
}

func TestTrace_SegmentsTokensAndStore(t *testing.T) {
	h := newHarness(t, writeLibrary(t, flowFiles))
	var traced []store.TraceEvent
	h.opts.Hooks.Traced = func(e store.TraceEvent) { traced = append(traced, e) }
	e, err := New(h.opts)
	if err != nil {
		t.Fatal(err)
	}
	h.e = e
	var tokens []string // every session token issued
	ok := func(tool string, args obj) obj {
		t.Helper()
		m := h.ok(tool, args)
		tokens = append(tokens, h.tok)
		return m
	}
	untraced := func() {
		for _, tool := range []string{ToolDiscover, ToolListWorkflows, ToolHealthCheck} {
			if r := h.raw(Caller{}, tool, nil); r.IsError {
				t.Fatalf("%s: %v", tool, r.Body)
			}
		}
	}

	untraced()
	ok(ToolStartSession, obj{"workflow_id": "flow", "agent_id": "a1"})
	ok(ToolGetSkills, obj{})
	untraced()
	first := ok(ToolNextActivity, obj{"activity_id": "start"})
	h.err(ToolGetSkills, obj{}, KindCheckpointsPending) // an error is traced too
	ok(ToolGetCheckpoint, obj{"activity_id": "start", "checkpoint_id": "go"})
	h.clk.Advance(3 * time.Second)
	ok(ToolRespondCheckpoint, obj{"checkpoint_id": "go", "option_id": "reject"})
	ok(ToolGetTrace, obj{}) // not traced
	second := ok(ToolNextActivity, obj{"activity_id": "done", "transition_condition": "checkpoint:go:reject", "step_manifest": stepsOf("read", "note")})
	// A call with a token that does not verify belongs to no session and is not traced.
	h.err(ToolGetSkills, obj{"session_token": "x.y"}, "token_signature_invalid")

	t1, t2 := first["trace_token"].(string), second["trace_token"].(string)
	if t1 == "" || t2 == "" || h.e == nil {
		t.Fatalf("trace tokens %q, %q", t1, t2)
	}
	p1, err := h.e.parseTraceToken(t1)
	if err != nil {
		t.Fatal(err)
	}
	p2, _ := h.e.parseTraceToken(t2)
	if got := eventNames(p1.Events); !slices.Equal(got, []string{ToolStartSession, ToolGetSkills}) || p1.Act != "start" || p1.N != 2 {
		t.Fatalf("first trace token %+v, want start_session and get_skills for act start", p1)
	}
	if got := eventNames(p2.Events); !slices.Equal(got, []string{ToolNextActivity, ToolGetSkills, ToolGetCheckpoint, ToolRespondCheckpoint}) || p2.Act != "done" {
		t.Fatalf("second trace token events %v (act %s)", got, p2.Act)
	}
	if e := p2.Events[1]; e.S != "error" || !strings.Contains(e.Err, KindCheckpointsPending) || e.Act != "start" || e.AID != "a1" {
		t.Fatalf("gated call's event = %+v", e)
	}
	if e := p2.Events[0]; e.Act != "start" || e.Detail != "→ start" || e.WF != "flow" {
		t.Fatalf("next_activity event = %+v", e)
	}

	// Stored trace: every traced call, none of the untraced ones.
	stored, _ := h.st.TraceEvents(context.Background(), sessionID(t, h.tok), 100)
	var storedNames []string
	for _, e := range stored {
		storedNames = append(storedNames, e.Tool)
	}
	want := []string{ToolStartSession, ToolGetSkills, ToolNextActivity, ToolGetSkills, ToolGetCheckpoint, ToolRespondCheckpoint, ToolNextActivity}
	if !slices.Equal(storedNames, want) {
		t.Fatalf("stored trace %v, want %v", storedNames, want)
	}
	if len(traced) != len(want) {
		t.Fatalf("Traced hook called %d times, want %d", len(traced), len(want))
	}

	// No token anywhere in the trace.
	all, _ := json.Marshal([]any{stored, p1, p2})
	for _, tok := range tokens {
		if strings.Contains(string(all), tok) || strings.Contains(string(all), tok[strings.Index(tok, ".")+1:]) {
			t.Fatal("a session token (or its signature) is in the trace")
		}
	}

	// get_trace with tokens: good ones resolved, bad ones reported.
	other := newHarness(t, writeLibrary(t, flowFiles))
	other.opts.Key = testKey
	other.e = h.e // same engine, another session
	other.start("flow")
	otherFirst := other.ok(ToolNextActivity, obj{"activity_id": "start"})["trace_token"].(string)
	b, sig, _ := strings.Cut(t1, ".")
	tampered := b[:len(b)-2] + "AA." + sig
	m := ok(ToolGetTrace, obj{"trace_tokens": []string{t1, tampered, t2, otherFirst, "junk"}})
	if m["source"] != "tokens" || m["event_count"] != 6.0 || m["traceId"] != sessionID(t, h.tok) {
		t.Fatalf("get_trace(tokens) = %v", m)
	}
	errs := strs(m["token_errors"])
	if len(errs) != 3 || !strings.Contains(errs[0], "trace_tokens[1]") || !strings.Contains(errs[0], "signature") ||
		!strings.Contains(errs[1], "trace_tokens[3]: belongs to another session") || !strings.Contains(errs[2], "trace_tokens[4]") {
		t.Fatalf("token_errors = %q", errs)
	}
	// A session token is not a trace token (different keys).
	m = ok(ToolGetTrace, obj{"trace_tokens": []string{h.tok}})
	if m["event_count"] != 0.0 || len(strs(m["token_errors"])) != 1 {
		t.Fatalf("get_trace(session token) = %v", m)
	}
	m = ok(ToolGetTrace, obj{})
	if m["source"] != "store" || m["tracing_enabled"] != true || !slices.Equal(names(m["events"].([]any)), want) {
		t.Fatalf("get_trace() = %v", m)
	}
}

func eventNames(evs []traceEvent) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Name)
	}
	return out
}

func TestTrace_FailedNextActivityKeepsTheSegment(t *testing.T) {
	h := newHarness(t, writeLibrary(t, flowFiles))
	h.start("flow")
	h.ok(ToolGetSkills, obj{})
	h.err(ToolNextActivity, obj{"activity_id": "nowhere"}, KindActivityNotFound)
	m := h.ok(ToolNextActivity, obj{"activity_id": "start"})
	p, err := h.e.parseTraceToken(m["trace_token"].(string))
	if err != nil {
		t.Fatal(err)
	}
	if got := eventNames(p.Events); !slices.Equal(got, []string{ToolStartSession, ToolGetSkills, ToolNextActivity}) {
		t.Fatalf("trace token events %v: the failed next_activity must not close the segment", got)
	}
	// With no events since, the next next_activity has no trace token... but its own
	// predecessor is there: re-entering covers the previous next_activity only.
	m = h.ok(ToolNextActivity, obj{"activity_id": "start", "step_manifest": stepsOf("read", "note")})
	p, _ = h.e.parseTraceToken(m["trace_token"].(string))
	if got := eventNames(p.Events); !slices.Equal(got, []string{ToolNextActivity}) {
		t.Fatalf("second segment %v", got)
	}
}

func TestConcurrentCallsWithOneToken_OnlyOneAdvances(t *testing.T) {
	h := newHarness(t, writeLibrary(t, flowFiles))
	h.start("flow")
	tok := h.tok
	const n = 8
	results := make(chan Response, n)
	for range n {
		go func() {
			b, _ := json.Marshal(obj{"session_token": tok, "activity_id": "start"})
			results <- h.e.Call(context.Background(), Caller{}, ToolNextActivity, b)
		}()
	}
	okN := 0
	var winner Response
	for range n {
		if r := <-results; !r.IsError {
			okN++
			winner = r
		} else if k := r.Body.(errorBody).Kind; k != "token_stale" {
			t.Errorf("loser's error kind %q, want token_stale", k)
		}
	}
	if okN != 1 {
		t.Fatalf("%d calls with one token succeeded, want 1", okN)
	}
	// The losers closed no trace segment: the winner's token covers start_session.
	p, err := h.e.parseTraceToken(winner.Meta["trace_token"].(string))
	if err != nil || !slices.Equal(eventNames(p.Events), []string{ToolStartSession}) {
		t.Fatalf("winner's trace token %+v, %v: want the start_session event", p, err)
	}
	// The losers armed nothing: one issuance of go.
	rows, _ := h.st.PendingCheckpoints(context.Background())
	if len(rows) != 1 {
		t.Fatalf("pending rows %d, want 1", len(rows))
	}
}

// FuzzTraceToken checks the trace token parser: it never panics, only tokens
// signed with the engine's trace key verify, and a verified payload round-trips.
func FuzzTraceToken(f *testing.F) {
	st, _ := NewMemoryState("")
	e, err := New(Options{Library: func() *workflow.Library { return nil }, Key: testKey, State: st,
		Now: func() time.Time { return time.Unix(1_750_000_000, 0) }})
	if err != nil {
		f.Fatal(err)
	}
	e.segments["s"] = []traceEvent{{TraceID: "s", SpanID: "a", Name: ToolGetSkills, TS: 1, S: "ok", VW: []string{"w"}}}
	good := e.traceToken("s", "plan", time.Unix(2, 0))
	for _, seed := range []string{good, "", ".", "a.b", good + "x", strings.ToUpper(good), good[1:]} {
		f.Add(seed, []byte(`{"sid":"s","events":[]}`))
	}
	f.Add("", []byte(`{"sid":1}`))
	f.Add("", []byte(`[]`))
	f.Fuzz(func(t *testing.T, tok string, payload []byte) {
		p, err := e.parseTraceToken(tok)
		if err == nil {
			body, sig, _ := strings.Cut(tok, ".")
			if e.traceMAC(body) != sig {
				t.Fatalf("token %q verified without a matching signature", tok)
			}
			roundTrip(t, e, p)
		}
		// A payload of our own signing reaches the decoder.
		body := base64.RawURLEncoding.EncodeToString(payload)
		if p, err := e.parseTraceToken(body + "." + e.traceMAC(body)); err == nil {
			roundTrip(t, e, p)
		}
	})
}

func roundTrip(t *testing.T, e *Engine, p tracePayload) {
	t.Helper()
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	body := base64.RawURLEncoding.EncodeToString(b)
	q, err := e.parseTraceToken(body + "." + e.traceMAC(body))
	if err != nil {
		t.Fatalf("re-signed payload %s does not verify: %v", b, err)
	}
	if !reflect.DeepEqual(normalise(p), normalise(q)) {
		t.Fatalf("round trip %+v != %+v", p, q)
	}
}

// normalise makes nil and empty slices equal.
func normalise(p tracePayload) tracePayload {
	if len(p.Events) == 0 {
		p.Events = nil
	}
	for i := range p.Events {
		if len(p.Events[i].VW) == 0 {
			p.Events[i].VW = nil
		}
	}
	return p
}
