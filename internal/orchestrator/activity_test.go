package orchestrator

import (
	"slices"
	"strings"
	"sync"
	"testing"

	"sortie/internal/agent"
	"sortie/internal/config"
	"sortie/internal/store"
)

type activityLog struct {
	mu  sync.Mutex
	all []Activity
}

func (l *activityLog) add(a Activity) {
	l.mu.Lock()
	l.all = append(l.all, a)
	l.mu.Unlock()
}

func (l *activityLog) of(kind ActivityKind) []Activity {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Activity
	for _, a := range l.all {
		if a.Kind == kind {
			out = append(out, a)
		}
	}
	return out
}

// Every activity a metrics backend counts is reported once, and token deltas add up to
// what the run recorded.
func TestActivity_ReportsTheLifeOfARun(t *testing.T) {
	log := &activityLog{}
	cfg := testConfig(t, func(c *config.Config) {
		c.Agent.MaxTurns = 2
		c.Tracker.HandoffState = "Review"
		c.Extensions = map[string]any{"mock": map[string]any{
			"input_tokens_per_turn": 100, "output_tokens_per_turn": 50, "cache_read_tokens_per_turn": 7,
			"tool_calls": []any{map[string]any{"name": "Bash", "duration_ms": 1}},
		}}
	})
	h := newHarness(t, cfg, harnessOptions{pollOnly: true, activity: log.add})
	h.trk.Put(issue("ACT-1", "Todo"))
	h.start()
	h.awaitStep(StepExit, "ACT-1")

	if d := log.of(ActivityDispatch); len(d) != 1 || d[0].Identifier != "ACT-1" {
		t.Errorf("dispatch activities = %+v", d)
	}
	turns := log.of(ActivityTurn)
	if len(turns) != 2 || turns[0].Result != string(agent.EventTurnCompleted) {
		t.Errorf("turn activities = %+v", turns)
	}
	var sum agent.Usage
	var tools []string
	for _, a := range log.of(ActivityAgentEvent) {
		sum.Input += a.Delta.Input
		sum.Output += a.Delta.Output
		sum.Total += a.Delta.Total
		sum.CacheRead += a.Delta.CacheRead
		if a.Event.Type == agent.EventToolResult {
			tools = append(tools, a.Event.ToolName)
		}
		if a.RunID == 0 {
			t.Errorf("agent event without a run id: %+v", a)
		}
	}
	runs := h.runs("ACT-1")
	if want := (agent.Usage{Input: 200, Output: 100, Total: 300, CacheRead: 14}); sum != want || runs[0].Tokens.Total != sum.Total {
		t.Errorf("token deltas sum to %+v, want %+v (the run recorded %+v)", sum, want, runs[0].Tokens)
	}
	if !slices.Equal(tools, []string{"Bash", "Bash"}) {
		t.Errorf("tool calls = %v", tools)
	}
	if hs := log.of(ActivityHandoff); len(hs) != 1 || hs[0].Result != "success" {
		t.Errorf("handoff activities = %+v", hs)
	}
	fin := log.of(ActivityRunFinished)
	if len(fin) != 1 || fin[0].Result != string(store.StatusHandedOff) || fin[0].RunID != runs[0].ID {
		t.Errorf("run_finished activities = %+v", fin)
	}
	if polls := log.of(ActivityPoll); len(polls) == 0 || polls[0].Result != "ok" {
		t.Errorf("poll activities = %+v", polls)
	}
}

func TestActivity_FailureSchedulesARetry(t *testing.T) {
	log := &activityLog{}
	cfg := testConfig(t, func(c *config.Config) {
		c.Extensions = map[string]any{"mock": map[string]any{"script": []any{"failure", "success"}}}
	})
	h := newHarness(t, cfg, harnessOptions{pollOnly: true, activity: log.add})
	h.trk.Put(issue("ACT-2", "Todo"))
	h.start()
	h.awaitStep(StepExit, "ACT-2")
	if r := log.of(ActivityRetry); len(r) != 1 || r[0].Result != retryFailure || r[0].Attempt != 1 {
		t.Errorf("retry activities = %+v", r)
	}
	if f := log.of(ActivityRunFinished); len(f) != 1 || f[0].Result != string(store.StatusFailed) {
		t.Errorf("run_finished = %+v", f)
	}
}

// A running session shows the state the worker moved its issue to, not the state it
// had at dispatch.
func TestSnapshot_ShowsTheInProgressStateTheWorkerSet(t *testing.T) {
	cfg := testConfig(t, func(c *config.Config) {
		c.Tracker.InProgressState = "In Progress"
		c.Extensions = map[string]any{"mock": map[string]any{"delay_ms": 300}}
	})
	h := newHarness(t, cfg, harnessOptions{pollOnly: true})
	h.trk.Put(issue("ST-1", "Todo"))
	h.start()
	h.awaitEvent("ST-1", "session_started")
	s, err := h.orch.Snapshot(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Running) != 1 || s.Running[0].State != "In Progress" {
		t.Errorf("running = %+v, want ST-1 In Progress", s.Running)
	}
	h.awaitStep(StepExit, "ST-1")
}

// tracker.comments posts a comment when a run starts, completes and fails, with what
// happens next; cancellations get none.
func TestComments_Lifecycle(t *testing.T) {
	cfg := testConfig(t, func(c *config.Config) {
		c.Tracker.HandoffState = "Review"
		c.Tracker.Comments.OnDispatch, c.Tracker.Comments.OnCompletion, c.Tracker.Comments.OnFailure = true, true, true
		c.Extensions = map[string]any{"mock": map[string]any{"script": []any{"failure", "success"}}}
	})
	h := newHarness(t, cfg, harnessOptions{pollOnly: true})
	h.trk.Put(issue("CMT-1", "Todo"))
	h.start()
	h.awaitStep(StepExit, "CMT-1")
	h.advance(cfg.Agent.MaxRetryBackoff)
	h.awaitStep(StepExit, "CMT-1")
	h.stop() // comments are posted in the background; stopping waits for them
	is, _ := h.trk.Issue("CMT-1")
	var bodies []string
	for _, c := range is.Comments {
		bodies = append(bodies, c.Body)
	}
	want := []string{"Sortie session started.", "Sortie session failed.", "Retry: yes (attempt 2)",
		"Sortie session started.", "Sortie session completed (handed off to Review)."}
	joined := strings.Join(bodies, "\n---\n")
	for _, w := range want {
		if !strings.Contains(joined, w) {
			t.Errorf("comments lack %q:\n%s", w, joined)
		}
	}
	if len(bodies) != 4 {
		t.Errorf("comments = %d, want 4 (two starts, a failure, a completion):\n%s", len(bodies), joined)
	}
}
