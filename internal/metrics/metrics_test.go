package metrics

import (
	"sortie/internal/reactions"

	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"sortie/internal/agent"
	"sortie/internal/orchestrator"
	"sortie/internal/tracker"
	"sortie/internal/webhook"
)

// families is every sortie_* family New exports, with its type. docs/metrics.md lists
// the same families; the Grafana dashboard test checks its expressions against what the
// registry gathers.
var families = map[string]dto.MetricType{
	"sortie_build_info":                      dto.MetricType_GAUGE,
	"sortie_sessions_running":                dto.MetricType_GAUGE,
	"sortie_sessions_retrying":               dto.MetricType_GAUGE,
	"sortie_sessions_awaiting_input":         dto.MetricType_GAUGE,
	"sortie_slots_available":                 dto.MetricType_GAUGE,
	"sortie_active_sessions_elapsed_seconds": dto.MetricType_GAUGE,
	"sortie_dispatches_total":                dto.MetricType_COUNTER,
	"sortie_turns_total":                     dto.MetricType_COUNTER,
	"sortie_tokens_total":                    dto.MetricType_COUNTER,
	"sortie_cost_usd_total":                  dto.MetricType_COUNTER,
	"sortie_api_requests_total":              dto.MetricType_COUNTER,
	"sortie_tool_calls_total":                dto.MetricType_COUNTER,
	"sortie_tracker_requests_total":          dto.MetricType_COUNTER,
	"sortie_handoff_transitions_total":       dto.MetricType_COUNTER,
	"sortie_stalls_total":                    dto.MetricType_COUNTER,
	"sortie_retries_total":                   dto.MetricType_COUNTER,
	"sortie_holds_total":                     dto.MetricType_COUNTER,
	"sortie_worker_exits_total":              dto.MetricType_COUNTER,
	"sortie_reconciliation_actions_total":    dto.MetricType_COUNTER,
	"sortie_tracker_rate_limit_remaining":    dto.MetricType_GAUGE,
	"sortie_tracker_rate_limit_limit":        dto.MetricType_GAUGE,
	"sortie_tracker_rate_limit_throttled":    dto.MetricType_GAUGE,
	"sortie_poll_cycles_total":               dto.MetricType_COUNTER,
	"sortie_workflow_reload_errors_total":    dto.MetricType_COUNTER,
	"sortie_agent_runtime_seconds_total":     dto.MetricType_COUNTER,
	"sortie_run_duration_seconds":            dto.MetricType_HISTOGRAM,
	"sortie_poll_duration_seconds":           dto.MetricType_HISTOGRAM,
	"sortie_notify_rate_limited_total":       dto.MetricType_COUNTER,
	"sortie_webhook_deliveries_total":        dto.MetricType_COUNTER,
	"sortie_reaction_checks_total":           dto.MetricType_COUNTER,
	"sortie_reaction_requests_total":         dto.MetricType_COUNTER,
	"sortie_reactions_dispatched_total":      dto.MetricType_COUNTER,
	"sortie_reaction_escalations_total":      dto.MetricType_COUNTER,
}

// fakeSnapshot is a snapshot function that returns s.
func fakeSnapshot(s orchestrator.Snapshot) func(context.Context) (orchestrator.Snapshot, error) {
	return func(context.Context) (orchestrator.Snapshot, error) { return s, nil }
}

func twoRunning() orchestrator.Snapshot {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	return orchestrator.Snapshot{
		GeneratedAt: now,
		MaxAgents:   3,
		Running: []orchestrator.RunningView{
			{IssueID: "1", StartedAt: now.Add(-90 * time.Second)},
			{IssueID: "2", StartedAt: now.Add(-30 * time.Second)},
		},
		Retrying: []orchestrator.RetryView{{IssueID: "3"}},
		Held: []orchestrator.HeldView{{IssueID: "4", Reason: "blocked"}, {IssueID: "5", Reason: "needs_human_review"},
			{IssueID: "6", Reason: "blocked"}, {IssueID: "7", Reason: "error"}},
	}
}

func tokenEvent(model string, in, out, cache int64) orchestrator.Activity {
	return orchestrator.Activity{Kind: orchestrator.ActivityAgentEvent, Model: model,
		Event: &agent.Event{Type: agent.EventTokenUsage, Model: model},
		Delta: agent.Usage{Input: in, Output: out, Total: in + out, CacheRead: cache}}
}

func toolEvent(tool string, failed bool) orchestrator.Activity {
	return orchestrator.Activity{Kind: orchestrator.ActivityAgentEvent,
		Event: &agent.Event{Type: agent.EventToolResult, ToolName: tool, ToolError: failed}}
}

// script is a day in the life of the daemon: every kind of activity, some twice.
func script() []orchestrator.Activity {
	return []orchestrator.Activity{
		{Kind: orchestrator.ActivityPoll, Result: "ok", Duration: 300 * time.Millisecond},
		{Kind: orchestrator.ActivityDispatch, IssueID: "1"},
		{Kind: orchestrator.ActivityDispatch, IssueID: "2"},
		{Kind: orchestrator.ActivityAgentEvent, Event: &agent.Event{Type: agent.EventNotification, Message: "hi"}},
		tokenEvent("opus", 100, 20, 50),
		tokenEvent("opus", 10, 2, 0),
		tokenEvent("", 7, 3, 1),
		toolEvent("Bash", false),
		toolEvent("Bash", true),
		toolEvent("Read", false),
		{Kind: orchestrator.ActivityTurn, Result: "turn_completed", Duration: time.Minute},
		{Kind: orchestrator.ActivityTurn, Result: "turn_completed"},
		{Kind: orchestrator.ActivityTurn, Result: "turn_failed"},
		{Kind: orchestrator.ActivityHandoff, Result: "success"},
		{Kind: orchestrator.ActivityRunFinished, Result: "handed_off", Duration: 10 * time.Minute, CostUSD: 1.25, Model: "opus"},
		{Kind: orchestrator.ActivityRunFinished, Result: "stalled", Duration: 5 * time.Minute},
		{Kind: orchestrator.ActivityRetry, Result: "failure"},
		{Kind: orchestrator.ActivityRetry, Result: "continuation"},
		{Kind: orchestrator.ActivityHold, Result: "blocked"},
		{Kind: orchestrator.ActivityPoll, Result: "error", Duration: 2 * time.Second},
		{Kind: orchestrator.ActivityReconcile, Result: "stop"},
		{Kind: orchestrator.ActivityReconcile, Result: "sweep_cleanup"},
		{Kind: orchestrator.ActivityReloadError, Message: "bad yaml"},
		{Kind: "from_the_future"},
	}
}

func observeAll(m *Metrics, as []orchestrator.Activity) {
	for _, a := range as {
		m.Observe(a)
	}
}

// gather returns the registry's families by name.
func gather(t *testing.T, m *Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	mfs, err := m.reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

// series finds the one series of family name whose labels include want.
func series(t *testing.T, fams map[string]*dto.MetricFamily, name string, want map[string]string) *dto.Metric {
	t.Helper()
	mf, ok := fams[name]
	if !ok {
		t.Fatalf("family %s not exported", name)
	}
	for _, s := range mf.GetMetric() {
		match := true
		for k, v := range want {
			if !slices.ContainsFunc(s.GetLabel(), func(l *dto.LabelPair) bool { return l.GetName() == k && l.GetValue() == v }) {
				match = false
				break
			}
		}
		if match {
			return s
		}
	}
	t.Fatalf("%s: no series with labels %v", name, want)
	return nil
}

func TestNew_EveryFamilyIsExportedAfterAScriptedDay(t *testing.T) {
	m := New("1.2.3")
	m.ReadSessions(fakeSnapshot(twoRunning()))
	observeAll(m, script())
	m.SetRateLimits(func() []tracker.RateLimit {
		return []tracker.RateLimit{{Resource: "core", Limit: 5000, Remaining: 4999}}
	})

	fams := gather(t, m)
	for name, typ := range families {
		mf, ok := fams[name]
		if !ok {
			t.Errorf("family %s is not exported", name)
			continue
		}
		if mf.GetType() != typ {
			t.Errorf("family %s has type %v, want %v", name, mf.GetType(), typ)
		}
		if mf.GetHelp() == "" {
			t.Errorf("family %s has no help text", name)
		}
	}
	for name := range fams {
		if _, ok := families[name]; strings.HasPrefix(name, "sortie_") && !ok {
			t.Errorf("family %s is exported but not listed in the test's families (and docs/metrics.md)", name)
		}
	}
	others := []string{"go_goroutines", "promhttp_metric_handler_errors_total"}
	if runtime.GOOS == "linux" {
		others = append(others, "process_resident_memory_bytes") // the process collector's, on Linux
	}
	for _, other := range others {
		if _, ok := fams[other]; !ok {
			t.Errorf("family %s (Go, process and handler collectors) is not exported", other)
		}
	}
}

func TestObserve_ScriptedDayCountsEveryCounter(t *testing.T) {
	m := New("1.2.3")
	observeAll(m, script())

	want := `
# HELP sortie_dispatches_total Workers started for an issue.
# TYPE sortie_dispatches_total counter
sortie_dispatches_total 2
# HELP sortie_turns_total Agent turns that ended, by how they ended (turn_completed, turn_failed, ...).
# TYPE sortie_turns_total counter
sortie_turns_total{result="turn_completed"} 2
sortie_turns_total{result="turn_failed"} 1
# HELP sortie_tokens_total Tokens agents used, by type (input, output, cache_read) and model.
# TYPE sortie_tokens_total counter
sortie_tokens_total{model="opus",type="cache_read"} 50
sortie_tokens_total{model="opus",type="input"} 110
sortie_tokens_total{model="opus",type="output"} 22
sortie_tokens_total{model="unknown",type="cache_read"} 1
sortie_tokens_total{model="unknown",type="input"} 7
sortie_tokens_total{model="unknown",type="output"} 3
# HELP sortie_cost_usd_total Cost in US dollars that agent CLIs reported, by model, counted when a run ends.
# TYPE sortie_cost_usd_total counter
sortie_cost_usd_total{model="opus"} 1.25
sortie_cost_usd_total{model="unknown"} 0
# HELP sortie_api_requests_total Model API requests agents made (token usage reports), by model.
# TYPE sortie_api_requests_total counter
sortie_api_requests_total{model="opus"} 2
sortie_api_requests_total{model="unknown"} 1
# HELP sortie_tool_calls_total Tool calls agents made, by tool and result (success, error).
# TYPE sortie_tool_calls_total counter
sortie_tool_calls_total{result="error",tool="Bash"} 1
sortie_tool_calls_total{result="error",tool="Read"} 0
sortie_tool_calls_total{result="success",tool="Bash"} 1
sortie_tool_calls_total{result="success",tool="Read"} 1
# HELP sortie_handoff_transitions_total Moves to tracker.handoff_state after a run, by result (success, error).
# TYPE sortie_handoff_transitions_total counter
sortie_handoff_transitions_total{result="error"} 0
sortie_handoff_transitions_total{result="success"} 1
# HELP sortie_stalls_total Runs stopped because the agent was silent for longer than agent.stall_timeout_ms.
# TYPE sortie_stalls_total counter
sortie_stalls_total 1
# HELP sortie_retries_total Retries scheduled, by trigger (failure, continuation, resume, ...).
# TYPE sortie_retries_total counter
sortie_retries_total{trigger="continuation"} 1
sortie_retries_total{trigger="failure"} 1
sortie_retries_total{trigger="resume"} 0
# HELP sortie_holds_total Issues held for a human, by reason (blocked, needs_human_review, awaiting_input, error, retries_exhausted).
# TYPE sortie_holds_total counter
sortie_holds_total{reason="awaiting_input"} 0
sortie_holds_total{reason="blocked"} 1
sortie_holds_total{reason="error"} 0
sortie_holds_total{reason="needs_human_review"} 0
sortie_holds_total{reason="retries_exhausted"} 0
# HELP sortie_worker_exits_total Runs that ended, by their run-history status (succeeded, handed_off, failed, stalled, ...).
# TYPE sortie_worker_exits_total counter
sortie_worker_exits_total{status="handed_off"} 1
sortie_worker_exits_total{status="stalled"} 1
# HELP sortie_reconciliation_actions_total Workers stopped and workspaces removed by reconciliation, by action (stop, cleanup, sweep_cleanup).
# TYPE sortie_reconciliation_actions_total counter
sortie_reconciliation_actions_total{action="cleanup"} 0
sortie_reconciliation_actions_total{action="stop"} 1
sortie_reconciliation_actions_total{action="sweep_cleanup"} 1
# HELP sortie_poll_cycles_total Tracker poll cycles, by result (success, error).
# TYPE sortie_poll_cycles_total counter
sortie_poll_cycles_total{result="error"} 1
sortie_poll_cycles_total{result="success"} 1
# HELP sortie_workflow_reload_errors_total Edits of WORKFLOW.md rejected; the last good configuration stayed in force.
# TYPE sortie_workflow_reload_errors_total counter
sortie_workflow_reload_errors_total 1
# HELP sortie_agent_runtime_seconds_total Seconds agents ran, summed over finished runs.
# TYPE sortie_agent_runtime_seconds_total counter
sortie_agent_runtime_seconds_total 900
# HELP sortie_notify_rate_limited_total notify_operator calls refused by notify_operator.rate_limit, by the limit that refused them (issue, global).
# TYPE sortie_notify_rate_limited_total counter
sortie_notify_rate_limited_total{scope="global"} 0
sortie_notify_rate_limited_total{scope="issue"} 0
`
	names := []string{}
	for name, typ := range families {
		if typ == dto.MetricType_COUNTER && name != "sortie_tracker_requests_total" && name != "sortie_webhook_deliveries_total" &&
			!strings.HasPrefix(name, "sortie_reaction") {
			names = append(names, name)
		}
	}
	if err := testutil.GatherAndCompare(m.reg, strings.NewReader(want), names...); err != nil {
		t.Fatal(err)
	}
}

func TestObserve_HistogramsRecordRunAndPollDurations(t *testing.T) {
	m := New("1.2.3")
	observeAll(m, script())
	fams := gather(t, m)

	tests := []struct {
		family string
		labels map[string]string
		count  uint64
		sum    float64
	}{
		{"sortie_run_duration_seconds", map[string]string{"status": "handed_off"}, 1, 600},
		{"sortie_run_duration_seconds", map[string]string{"status": "stalled"}, 1, 300},
		{"sortie_poll_duration_seconds", nil, 2, 2.3},
	}
	for _, tt := range tests {
		h := series(t, fams, tt.family, tt.labels).GetHistogram()
		if h.GetSampleCount() != tt.count || h.GetSampleSum() != tt.sum {
			t.Errorf("%s%v: count %d sum %g, want count %d sum %g",
				tt.family, tt.labels, h.GetSampleCount(), h.GetSampleSum(), tt.count, tt.sum)
		}
	}
	// A 10-minute run falls in the 600 s bucket and not the 300 s one: the buckets are
	// minutes to hours.
	buckets := series(t, fams, "sortie_run_duration_seconds", map[string]string{"status": "handed_off"}).GetHistogram().GetBucket()
	for _, b := range buckets {
		want := uint64(0)
		if b.GetUpperBound() >= 600 {
			want = 1
		}
		if b.GetCumulativeCount() != want {
			t.Errorf("run duration bucket le=%g holds %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), want)
		}
	}
	if last := buckets[len(buckets)-1].GetUpperBound(); last < 4*3600 {
		t.Errorf("largest run duration bucket is %g s, want at least 4 hours", last)
	}
}

func TestBuildInfo_NamesVersionAndGoVersion(t *testing.T) {
	want := `
# HELP sortie_build_info Always 1; its labels name the running build's version and Go version.
# TYPE sortie_build_info gauge
sortie_build_info{go_version="` + runtime.Version() + `",version="1.2.3"} 1
`
	if err := testutil.GatherAndCompare(New("1.2.3").reg, strings.NewReader(want), "sortie_build_info"); err != nil {
		t.Fatal(err)
	}
}

func TestSnapshotGauges_ComeFromTheSnapshotAtScrapeTime(t *testing.T) {
	m := New("1.2.3")
	m.ReadSessions(fakeSnapshot(twoRunning()))
	want := `
# HELP sortie_sessions_running Agent sessions running now.
# TYPE sortie_sessions_running gauge
sortie_sessions_running 2
# HELP sortie_sessions_retrying Issues waiting for a retry timer.
# TYPE sortie_sessions_retrying gauge
sortie_sessions_retrying 1
# HELP sortie_sessions_awaiting_input Issues waiting for a human's answer: the agent signalled blocked, needs review with no handoff, or a workflow checkpoint waits.
# TYPE sortie_sessions_awaiting_input gauge
sortie_sessions_awaiting_input 3
# HELP sortie_slots_available Sessions that could start now: agent.max_concurrent_agents minus those running, never negative.
# TYPE sortie_slots_available gauge
sortie_slots_available 1
# HELP sortie_active_sessions_elapsed_seconds Seconds the running sessions have run so far, summed.
# TYPE sortie_active_sessions_elapsed_seconds gauge
sortie_active_sessions_elapsed_seconds 120
`
	if err := testutil.GatherAndCompare(m.reg, strings.NewReader(want), "sortie_sessions_running", "sortie_sessions_retrying",
		"sortie_sessions_awaiting_input", "sortie_slots_available", "sortie_active_sessions_elapsed_seconds"); err != nil {
		t.Fatal(err)
	}
}

func TestSnapshotGauges_SlotsAvailableIsNeverNegative(t *testing.T) {
	s := twoRunning()
	s.MaxAgents = 1 // lowered by a reload while two run
	m := New("1.2.3")
	m.ReadSessions(fakeSnapshot(s))
	if got := series(t, gather(t, m), "sortie_slots_available", nil).GetGauge().GetValue(); got != 0 {
		t.Fatalf("slots_available = %g, want 0", got)
	}
}

// TestSnapshotGauges_NoneBeforeReadSessions: the metrics exist before the orchestrator
// (the daemon's tracker adapters count into them); a scrape then has no session gauges,
// and has them once ReadSessions names the snapshot to read.
func TestSnapshotGauges_NoneBeforeReadSessions(t *testing.T) {
	m := New("1.2.3")
	if _, ok := gather(t, m)["sortie_sessions_running"]; ok {
		t.Fatal("sortie_sessions_running before ReadSessions")
	}
	m.ReadSessions(fakeSnapshot(twoRunning()))
	if got := series(t, gather(t, m), "sortie_sessions_running", nil).GetGauge().GetValue(); got != 2 {
		t.Fatalf("sessions_running = %g, want 2", got)
	}
}

func TestSnapshotGauges_LeftOutWhenTheSnapshotFailsAndTheScrapeStillSucceeds(t *testing.T) {
	m := New("1.2.3")
	m.ReadSessions(func(context.Context) (orchestrator.Snapshot, error) {
		return orchestrator.Snapshot{}, errors.New("orchestrator: not running")
	})
	m.Observe(orchestrator.Activity{Kind: orchestrator.ActivityDispatch})

	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /metrics = %d, want 200; body:\n%s", rec.Code, body)
	}
	if !strings.Contains(string(body), "sortie_dispatches_total 1") {
		t.Errorf("GET /metrics lacks sortie_dispatches_total 1; body:\n%s", body)
	}
	for _, gauge := range []string{"sortie_sessions_running", "sortie_sessions_retrying", "sortie_sessions_awaiting_input", "sortie_slots_available"} {
		if strings.Contains(string(body), gauge) {
			t.Errorf("GET /metrics has %s, want it left out when the snapshot fails", gauge)
		}
	}
}

func TestSnapshotCollector_GivesUpAfterItsTimeout(t *testing.T) {
	// A loop that never answers: the snapshot returns only when its context ends.
	var deadline bool
	c := newSnapshotCollector(func(ctx context.Context) (orchestrator.Snapshot, error) {
		_, deadline = ctx.Deadline()
		<-ctx.Done()
		return orchestrator.Snapshot{}, ctx.Err()
	}, time.Millisecond)
	if n := testutil.CollectAndCount(c); n != 0 {
		t.Errorf("collected %d metrics from a snapshot that timed out, want 0", n)
	}
	if !deadline {
		t.Error("the snapshot's context had no deadline, want the collector's timeout")
	}
}

func TestHandler_ServesTheExpositionFormat(t *testing.T) {
	m := New("1.2.3")
	m.ReadSessions(fakeSnapshot(twoRunning()))
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	want := `
# HELP sortie_sessions_running Agent sessions running now.
# TYPE sortie_sessions_running gauge
sortie_sessions_running 2
`
	if err := testutil.ScrapeAndCompare(srv.URL, strings.NewReader(want), "sortie_sessions_running"); err != nil {
		t.Fatal(err)
	}
}

func TestRegistry_PassesPromlint(t *testing.T) {
	m := New("1.2.3")
	m.ReadSessions(fakeSnapshot(twoRunning()))
	observeAll(m, script())
	problems, err := testutil.GatherAndLint(m.reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, "sortie_") {
			t.Errorf("promlint: %s: %s", p.Metric, p.Text)
		}
	}
}

func TestDocs_ListEveryFamily(t *testing.T) {
	data, err := os.ReadFile("../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	for name := range families {
		if !strings.Contains(string(data), "`"+name+"`") {
			t.Errorf("docs/metrics.md does not describe %s", name)
		}
	}
}

func TestObserve_IgnoresNegativeDurationsAndImpossibleCosts(t *testing.T) {
	m := New("1.2.3")
	// A clock stepping back, a CLI reporting nonsense: never a panic (a counter cannot
	// go down), never a poisoned total.
	m.Observe(orchestrator.Activity{Kind: orchestrator.ActivityRunFinished, Result: "succeeded", Duration: -time.Second,
		CostUSD: math.Inf(1), Model: "m"})
	m.Observe(orchestrator.Activity{Kind: orchestrator.ActivityRunFinished, Result: "succeeded", CostUSD: math.NaN(), Model: "m"})
	m.Observe(orchestrator.Activity{Kind: orchestrator.ActivityRunFinished, Result: "succeeded", CostUSD: -2, Model: "m"})
	fams := gather(t, m)
	if got := series(t, fams, "sortie_agent_runtime_seconds_total", nil).GetCounter().GetValue(); got != 0 {
		t.Errorf("agent_runtime_seconds_total = %g, want 0", got)
	}
	if got := series(t, fams, "sortie_worker_exits_total", map[string]string{"status": "succeeded"}).GetCounter().GetValue(); got != 3 {
		t.Errorf("worker_exits_total{status=succeeded} = %g, want 3", got)
	}
	if mf, ok := fams["sortie_cost_usd_total"]; ok && len(mf.GetMetric()) > 0 {
		t.Errorf("cost_usd_total has %d series, want none from impossible costs", len(mf.GetMetric()))
	}
}

// Webhook deliveries are counted by tracker and result; every pair starts at 0, and a
// value outside webhook.Kinds or webhook.Results is not counted (the labels stay bounded).
func TestWebhookDelivery_CountsByTrackerAndResult(t *testing.T) {
	m := New("1.2.3")
	m.WebhookDelivery("github", "accepted")
	m.WebhookDelivery("github", "accepted")
	m.WebhookDelivery("jira", "unauthorized")
	m.WebhookDelivery("gitlab", "accepted")
	m.WebhookDelivery("github", "made-up")
	fams := gather(t, m)
	mf := fams["sortie_webhook_deliveries_total"]
	if got, want := len(mf.GetMetric()), len(webhook.Kinds())*len(webhook.Results()); got != want {
		t.Fatalf("series = %d, want %d (every tracker × result, from 0)", got, want)
	}
	for _, c := range []struct {
		tracker, result string
		want            float64
	}{{"github", "accepted", 2}, {"jira", "unauthorized", 1}, {"linear", "accepted", 0}} {
		s := series(t, fams, "sortie_webhook_deliveries_total", map[string]string{"tracker": c.tracker, "result": c.result})
		if got := s.GetCounter().GetValue(); got != c.want {
			t.Errorf("%s/%s = %v, want %v", c.tracker, c.result, got, c.want)
		}
	}
}

func TestReaction_CountsBoundedSeriesFromZero(t *testing.T) {
	m := New("1.2.3")
	m.Reaction(reactions.Event{Kind: reactions.KindCI, What: "check", Result: "failing", Requests: 2})
	m.Reaction(reactions.Event{Kind: reactions.KindCI, What: "check", Result: "made-up", Requests: 1})
	m.Reaction(reactions.Event{Kind: reactions.KindReview, What: "dispatched"})
	m.Reaction(reactions.Event{Kind: reactions.KindCI, What: "escalated", Result: "label"})
	m.Reaction(reactions.Event{Kind: "merge", What: "dispatched"})
	fams := gather(t, m)
	for _, c := range []struct {
		family string
		labels map[string]string
		want   float64
	}{
		{"sortie_reaction_checks_total", map[string]string{"kind": "ci", "result": "failing"}, 1},
		{"sortie_reaction_checks_total", map[string]string{"kind": "review", "result": "none"}, 0},
		{"sortie_reaction_requests_total", map[string]string{"kind": "ci"}, 3},
		{"sortie_reactions_dispatched_total", map[string]string{"kind": "review"}, 1},
		{"sortie_reaction_escalations_total", map[string]string{"kind": "ci", "how": "label"}, 1},
	} {
		if got := series(t, fams, c.family, c.labels).GetCounter().GetValue(); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.family, c.labels, got, c.want)
		}
	}
	if got := len(fams["sortie_reactions_dispatched_total"].GetMetric()); got != 2 {
		t.Errorf("dispatched series = %d, want 2 (ci, review)", got)
	}
}
