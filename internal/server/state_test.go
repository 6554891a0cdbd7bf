package server

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"sortie/internal/orchestrator"
	"sortie/internal/store"
)

// stateSnapshot has two running sessions, an overdue and a future retry, and holds of
// each kind.
func stateSnapshot() orchestrator.Snapshot {
	s := baseSnapshot()
	s.Running = []orchestrator.RunningView{runningView(1), runningView(2)}
	s.Running[1].LastEventAt = time.Time{} // no event yet
	s.Running[1].StartedAt = t0.Add(-1500 * time.Millisecond)
	s.Retrying = []orchestrator.RetryView{
		{IssueID: "id-3", Identifier: "PROJ-3", Attempt: 2, Kind: "failure", DueAt: t0.Add(-4 * time.Second), Error: "turn_failed: exit 1"},
		{IssueID: "id-4", Identifier: "PROJ-4", Attempt: 1, Kind: "continuation", DueAt: t0.Add(90 * time.Second)},
	}
	s.Held = []orchestrator.HeldView{
		{IssueID: "id-5", Identifier: "PROJ-5", Reason: "blocked", Message: "Which database should I migrate?", State: "In Progress", Since: t0.Add(-time.Hour)},
		{IssueID: "id-6", Identifier: "PROJ-6", Reason: "error", Message: "agent_not_found", State: "Todo", Since: t0.Add(-30 * time.Minute)},
		{IssueID: "id-7", Identifier: "PROJ-7", Reason: "needs_human_review", Message: "Please review the migration", State: "In Progress", Since: t0.Add(-time.Minute)},
	}
	s.Totals = orchestrator.Totals{InputTokens: 50000, OutputTokens: 9000, TotalTokens: 59000, CacheReadTokens: 20000,
		CostUSD: 3.5, SecondsRunning: 4000, ToolCalls: 120, APIRequests: 80}
	s.Candidates = 3
	s.LastError = "tracker: fetch candidates: 502 Bad Gateway"
	return s
}

func TestState_ReportsTheSnapshot(t *testing.T) {
	f := newFixture(t, nil)
	f.sched.snap = stateSnapshot()
	w := f.get(t, "/api/v1/state")
	if w.Code != http.StatusOK {
		t.Fatalf("status = %d, want 200 (%s)", w.Code, w.Body)
	}
	var got stateBody
	decode(t, w, &got)

	wantCounts := stateCounts{Running: 2, Retrying: 2, AwaitingInput: 2, Held: 3, SlotsFree: 2, MaxAgents: 4, Candidates: 3}
	if got.Counts != wantCounts {
		t.Errorf("counts = %+v, want %+v", got.Counts, wantCounts)
	}
	if !got.GeneratedAt.Equal(t0) || got.Version != "1.2.3" || got.UptimeSeconds != 600 {
		t.Errorf("generated_at %v version %q uptime %v, want %v 1.2.3 600", got.GeneratedAt, got.Version, got.UptimeSeconds, t0)
	}
	if r := got.Running[0]; r.ElapsedSeconds != 90 || r.LastEventAt == nil || !r.LastEventAt.Equal(t0.Add(-2*time.Second)) {
		t.Errorf("running[0] elapsed %v last_event_at %v, want 90 and %v", r.ElapsedSeconds, r.LastEventAt, t0.Add(-2*time.Second))
	}
	if r := got.Running[1]; r.ElapsedSeconds != 1.5 || r.LastEventAt != nil {
		t.Errorf("running[1] elapsed %v last_event_at %v, want 1.5 and null", r.ElapsedSeconds, r.LastEventAt)
	}
	if d := got.Retrying[0].DueInSeconds; d != -4 {
		t.Errorf("overdue retry due_in_seconds = %v, want -4", d)
	}
	if d := got.Retrying[1].DueInSeconds; d != 90 {
		t.Errorf("retry due_in_seconds = %v, want 90", d)
	}
	wantAwaiting := []awaitingJSON{
		{IssueID: "id-5", Identifier: "PROJ-5", Reason: "blocked", Question: "Which database should I migrate?", State: "In Progress", Since: t0.Add(-time.Hour)},
		{IssueID: "id-7", Identifier: "PROJ-7", Reason: "needs_human_review", Question: "Please review the migration", State: "In Progress", Since: t0.Add(-time.Minute)},
	}
	if !reflect.DeepEqual(got.AwaitingInput, wantAwaiting) {
		t.Errorf("awaiting_input = %+v, want %+v", got.AwaitingInput, wantAwaiting)
	}
	if len(got.Held) != 3 || got.Held[1].Reason != "error" {
		t.Errorf("held = %+v, want all three holds", got.Held)
	}
	if got.Totals != f.sched.snap.Totals {
		t.Errorf("totals = %+v, want %+v", got.Totals, f.sched.snap.Totals)
	}
	if got.Workflow.Path != "/srv/proj/WORKFLOW.md" || got.Workflow.ReloadError != nil {
		t.Errorf("workflow = %+v, want the path and a null reload_error", got.Workflow)
	}
	if got.LastPollAt == nil || !got.LastPollOK || got.LastError == "" || got.Draining {
		t.Errorf("last_poll_at %v ok %v last_error %q draining %v", got.LastPollAt, got.LastPollOK, got.LastError, got.Draining)
	}
}

// Every field of orchestrator.RunningView appears in running[] under its JSON name,
// so a field added to the view and forgotten here fails this test.
func TestState_RunningHasEveryRunningViewField(t *testing.T) {
	f := newFixture(t, nil)
	f.sched.snap = stateSnapshot()
	var raw struct {
		Running []map[string]json.RawMessage `json:"running"`
	}
	decode(t, f.get(t, "/api/v1/state"), &raw)
	if len(raw.Running) != 2 {
		t.Fatalf("running has %d entries, want 2", len(raw.Running))
	}
	rt := reflect.TypeFor[orchestrator.RunningView]()
	for i := range rt.NumField() {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		if _, ok := raw.Running[0][name]; !ok {
			t.Errorf("running[0] has no %q (RunningView.%s)", name, rt.Field(i).Name)
		}
	}
	if _, ok := raw.Running[0]["elapsed_seconds"]; !ok {
		t.Errorf("running[0] has no elapsed_seconds")
	}
	var tokens map[string]int64
	if err := json.Unmarshal(raw.Running[0]["tokens"], &tokens); err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"input_tokens": 12000, "output_tokens": 3400, "total_tokens": 15400, "cache_read_tokens": 9000}
	if !reflect.DeepEqual(tokens, want) {
		t.Errorf("tokens = %v, want %v", tokens, want)
	}
}

func TestState_EmptySchedulerHasEmptyListsNotNull(t *testing.T) {
	f := newFixture(t, nil)
	f.sched.snap = orchestrator.Snapshot{GeneratedAt: t0, WorkflowError: "config: tracker.kind: missing"}
	w := f.get(t, "/api/v1/state")
	body := w.Body.String()
	for _, want := range []string{`"running":[]`, `"retrying":[]`, `"awaiting_input":[]`, `"checkpoints":[]`, `"held":[]`, `"last_poll_at":null`,
		`"reload_error":"config: tracker.kind: missing"`, `"slots_free":0`} {
		if !strings.Contains(body, want) {
			t.Errorf("body lacks %s:\n%s", want, body)
		}
	}
}

func TestState_SnapshotUnavailableIs503(t *testing.T) {
	t.Run("error", func(t *testing.T) {
		f := newFixture(t, nil)
		f.sched.err = errNotRunning
		wantError(t, f.get(t, "/api/v1/state"), http.StatusServiceUnavailable, codeSnapshotUnavailable)
	})
	t.Run("timeout", func(t *testing.T) {
		f := newFixture(t, nil)
		f.sched.block = true
		f.srv.limits.snapshot = time.Millisecond
		e := wantError(t, f.get(t, "/api/v1/state"), http.StatusServiceUnavailable, codeSnapshotUnavailable)
		if !strings.Contains(e.Message, "did not answer within 1ms") {
			t.Errorf("message = %q, want it to say the scheduler did not answer within 1ms", e.Message)
		}
	})
}

// An issue held as awaiting_input gets one awaiting_input entry per unanswered
// checkpoint; checkpoints lists every pending one, a running issue's included.
func TestState_AwaitingInputAsksEachUnansweredCheckpoint(t *testing.T) {
	f := newFixture(t, nil)
	snap := stateSnapshot()
	snap.Held = append(snap.Held, orchestrator.HeldView{IssueID: "id-8", Identifier: "PROJ-8", Reason: "awaiting_input",
		Message: "waiting for approve-plan", State: "In Progress", Since: t0.Add(-2 * time.Minute)})
	plan := planCheckpoint()
	answered := planCheckpoint()
	answered.ID, answered.CheckpointID, answered.Name = 8, "confirm-scope", "Confirm the scope"
	answered.Answer, answered.AnsweredBy, answered.AnswerSource, answered.AnsweredAt = "approve", "alice", store.AnswerDashboard, t0.Add(-time.Minute)
	// PROJ-1 is running: its checkpoint is not awaiting input (yet) but can be answered.
	running := planCheckpoint()
	running.ID, running.IssueID, running.Identifier, running.Blocking = 9, "id-1", "PROJ-1", false
	running.DefaultOption, running.AutoAdvanceAt = "approve", t0.Add(time.Minute)
	snap.Checkpoints = []store.CheckpointView{plan, answered, running}
	f.sched.snap = snap

	var got stateBody
	decode(t, f.get(t, "/api/v1/state"), &got)
	if got.Counts.AwaitingInput != 3 || len(got.AwaitingInput) != 3 {
		t.Fatalf("awaiting_input has %d entries (count %d), want 3: two holds and PROJ-8's unanswered checkpoint\n%+v",
			len(got.AwaitingInput), got.Counts.AwaitingInput, got.AwaitingInput)
	}
	q := got.AwaitingInput[2]
	if q.Identifier != "PROJ-8" || q.Reason != "awaiting_input" || q.Question != plan.Message || q.State != "In Progress" ||
		!q.Since.Equal(t0.Add(-2*time.Minute)) || q.Checkpoint == nil {
		t.Fatalf("awaiting_input[2] = %+v, want PROJ-8's approve-plan question", q)
	}
	want := checkpointJSON{IssueID: "id-8", Identifier: "PROJ-8", SessionID: "sess-wf-8", Workflow: "work-package", Activity: "plan",
		CheckpointID: "approve-plan", Name: "Approve the plan", Message: plan.Message, Options: plan.Options, Blocking: true,
		IssuedAt: t0.Add(-3 * time.Minute), AnswerURL: "/api/v1/PROJ-8/checkpoints/approve-plan"}
	if !reflect.DeepEqual(*q.Checkpoint, want) {
		t.Errorf("awaiting_input[2].checkpoint = %+v,\nwant %+v", *q.Checkpoint, want)
	}
	if got.AwaitingInput[0].Checkpoint != nil {
		t.Errorf("a blocked hold's entry has checkpoint %+v, want null", got.AwaitingInput[0].Checkpoint)
	}
	if len(got.Checkpoints) != 3 {
		t.Fatalf("checkpoints has %d entries, want all 3 pending", len(got.Checkpoints))
	}
	if c := got.Checkpoints[1]; c.Answer != "approve" || c.AnsweredBy != "alice" || c.AnswerSource != "dashboard" || c.AnsweredAt == nil {
		t.Errorf("checkpoints[1] = %+v, want answered approve by alice via dashboard", c)
	}
	if c := got.Checkpoints[2]; c.Identifier != "PROJ-1" || c.AutoAdvanceAt == nil || !c.AutoAdvanceAt.Equal(t0.Add(time.Minute)) || c.DefaultOption != "approve" {
		t.Errorf("checkpoints[2] = %+v, want PROJ-1's auto-advancing checkpoint", c)
	}

	// The raw shape: times not yet come are null, never year 1.
	body := f.get(t, "/api/v1/state").Body.String()
	for _, want := range []string{`"checkpoint":null`, `"auto_advance_at":null`, `"answered_at":null`, `"answer_url":"/api/v1/PROJ-8/checkpoints/approve-plan"`} {
		if !strings.Contains(body, want) {
			t.Errorf("state lacks %s", want)
		}
	}
}

func TestState_SaysWhetherAgentsAreConfined(t *testing.T) {
	f := newFixture(t, nil)
	f.sched.snap = orchestrator.Snapshot{GeneratedAt: t0, NotConfined: "Landlock is unavailable: the kernel has no Landlock"}
	if body := f.get(t, "/api/v1/state").Body.String(); !strings.Contains(body, `"agents_confined":false,"not_confined":"Landlock is unavailable: the kernel has no Landlock"`) {
		t.Errorf("an unconfined daemon's state lacks agents_confined false and why:\n%s", body)
	}
	f.sched.snap = orchestrator.Snapshot{GeneratedAt: t0, AgentsConfined: true}
	if body := f.get(t, "/api/v1/state").Body.String(); !strings.Contains(body, `"agents_confined":true`) || strings.Contains(body, "not_confined") {
		t.Errorf("a confining daemon's state:\n%s", body)
	}
}

// threeDaemons is a cluster of three daemons seen from build-1's: build-2 polls the
// tracker, build-3's heartbeat lapsed. build-1 runs PROJ-1 and PROJ-2, build-2 runs
// PROJ-9 and keeps PROJ-3's lease for its retry.
func threeDaemons() orchestrator.ClusterView {
	daemon := func(id, host string, pid, running int, alive bool) orchestrator.ClusterDaemon {
		d := orchestrator.ClusterDaemon{ID: id, Host: host, PID: pid, Started: t0.Add(-time.Hour), Expires: t0.Add(20 * time.Second),
			Alive: alive, Running: running, MaxAgents: 4}
		if !alive {
			d.Expires = t0.Add(-40 * time.Second)
		}
		return d
	}
	lease := func(n int, daemon string, running bool) orchestrator.ClusterLease {
		return orchestrator.ClusterLease{IssueID: "id-" + itoa(n), Identifier: "PROJ-" + itoa(n), Daemon: daemon,
			Running: running, Expires: t0.Add(25 * time.Second)}
	}
	return orchestrator.ClusterView{
		Self: "build-1-4100-a1b2", Leader: "build-2-5200-c3d4",
		Daemons: []orchestrator.ClusterDaemon{
			daemon("build-1-4100-a1b2", "build-1", 4100, 2, true),
			daemon("build-2-5200-c3d4", "build-2", 5200, 1, true),
			daemon("build-3-6300-e5f6", "build-3", 6300, 0, false),
		},
		Leases: []orchestrator.ClusterLease{
			lease(1, "build-1-4100-a1b2", true), lease(2, "build-1-4100-a1b2", true),
			lease(9, "build-2-5200-c3d4", true), lease(3, "build-2-5200-c3d4", false),
		},
		At: t0.Add(-3 * time.Second),
	}
}

func TestState_ClusterIsPresentOnlyInACluster(t *testing.T) {
	f := newFixture(t, nil)
	body := f.get(t, "/api/v1/state").Body.String()
	if strings.Contains(body, `"cluster"`) {
		t.Errorf("a lone daemon's state has a cluster:\n%s", body)
	}

	want := threeDaemons()
	want.Error = "renewing the leases: connection refused"
	f.sched.set(func(s *orchestrator.Snapshot) { s.Cluster = &want })
	w := f.get(t, "/api/v1/state")
	var got stateBody
	decode(t, w, &got)
	if got.Cluster == nil {
		t.Fatalf("a clustered daemon's state has no cluster:\n%s", w.Body)
	}
	if !reflect.DeepEqual(*got.Cluster, want) {
		t.Errorf("cluster = %+v,\nwant %+v", *got.Cluster, want)
	}
	for _, field := range []string{`"self":"build-1-4100-a1b2"`, `"leader":"build-2-5200-c3d4"`, `"max_concurrent_agents":4`,
		`"alive":false`, `"issue_identifier":"PROJ-3","daemon":"build-2-5200-c3d4","running":false`, `"at":"2026-04-02T09:29:57Z"`,
		`"error":"renewing the leases: connection refused"`} {
		if !strings.Contains(w.Body.String(), field) {
			t.Errorf("cluster lacks %s:\n%s", field, w.Body)
		}
	}
}

func TestState_ClusterWithoutDaemonsOrLeasesHasEmptyLists(t *testing.T) {
	f := newFixture(t, nil)
	f.sched.set(func(s *orchestrator.Snapshot) {
		s.Cluster = &orchestrator.ClusterView{Self: "build-1-4100-a1b2", At: t0}
	})
	body := f.get(t, "/api/v1/state").Body.String()
	if !strings.Contains(body, `"cluster":{"self":"build-1-4100-a1b2","daemons":[],"leases":[],"at":"2026-04-02T09:30:00Z"}`) {
		t.Errorf("state lacks a cluster with empty lists and no leader or error:\n%s", body)
	}
}
