package metrics

import (
	"fmt"
	"sync"
	"testing"

	"sortie/internal/agent"
	"sortie/internal/agenttools"
	"sortie/internal/orchestrator"
)

func TestObserve_ConcurrentWorkersAndScrapesCountEveryEvent(t *testing.T) {
	m := New("1.2.3")
	m.ReadSessions(fakeSnapshot(twoRunning()))
	const workers, events = 8, 500
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range events {
				// New label values arrive while other goroutines read the same labels.
				m.Observe(tokenEvent(fmt.Sprintf("model-%d", i%5), 1, 2, 3))
				m.Observe(toolEvent(fmt.Sprintf("tool-%d", (i+w)%7), i%2 == 0))
				m.Observe(orchestrator.Activity{Kind: orchestrator.ActivityTurn, Result: "turn_completed"})
			}
		})
	}
	wg.Go(func() {
		for range 20 {
			if _, err := m.reg.Gather(); err != nil {
				t.Errorf("Gather during Observe: %v", err)
			}
		}
	})
	wg.Wait()

	fams := gather(t, m)
	sum := func(family string, labels map[string]string) float64 {
		var total float64
		for _, s := range fams[family].GetMetric() {
			match := true
			for _, l := range s.GetLabel() {
				if v, ok := labels[l.GetName()]; ok && v != l.GetValue() {
					match = false
				}
			}
			if match {
				total += s.GetCounter().GetValue()
			}
		}
		return total
	}
	const n = workers * events
	checks := []struct {
		family string
		labels map[string]string
		want   float64
	}{
		{"sortie_api_requests_total", nil, n},
		{"sortie_tokens_total", map[string]string{"type": "input"}, n},
		{"sortie_tokens_total", map[string]string{"type": "output"}, 2 * n},
		{"sortie_tokens_total", map[string]string{"type": "cache_read"}, 3 * n},
		{"sortie_tool_calls_total", nil, n},
		{"sortie_tool_calls_total", map[string]string{"result": "error"}, n / 2},
		{"sortie_turns_total", nil, n},
	}
	for _, c := range checks {
		if got := sum(c.family, c.labels); got != c.want {
			t.Errorf("%s%v sums to %g, want %g", c.family, c.labels, got, c.want)
		}
	}
	if got := len(fams["sortie_api_requests_total"].GetMetric()); got != 5 {
		t.Errorf("api_requests_total has %d model series, want 5", got)
	}
}

func TestObserve_AgentEventsOtherThanUsageAndToolsCountNothing(t *testing.T) {
	m := New("1.2.3")
	for _, typ := range []agent.EventType{agent.EventSessionStarted, agent.EventNotification, agent.EventOtherMessage,
		agent.EventMalformed, agent.EventTurnCompleted} {
		m.Observe(orchestrator.Activity{Kind: orchestrator.ActivityAgentEvent, Event: &agent.Event{Type: typ, Model: "opus"},
			Model: "opus", Delta: agent.Usage{Input: 5}})
	}
	m.Observe(orchestrator.Activity{Kind: orchestrator.ActivityAgentEvent}) // no event at all
	fams := gather(t, m)
	for _, family := range []string{"sortie_tokens_total", "sortie_api_requests_total", "sortie_tool_calls_total", "sortie_turns_total"} {
		if mf, ok := fams[family]; ok && len(mf.GetMetric()) > 0 {
			t.Errorf("%s has %d series after events that are neither token_usage nor tool_result, want none", family, len(mf.GetMetric()))
		}
	}
}

// BenchmarkObserve_AgentEvent is the cost the orchestrator pays per agent event: a mix
// of token usage, tool results and other events, with label values already seen.
func BenchmarkObserve_AgentEvent(b *testing.B) {
	m := New("1.2.3")
	events := []orchestrator.Activity{
		tokenEvent("claude-sonnet-4-5-20250929", 1200, 300, 40000),
		toolEvent("Bash", false),
		{Kind: orchestrator.ActivityAgentEvent, Event: &agent.Event{Type: agent.EventOtherMessage, Message: "thinking"}},
		toolEvent("mcp__sortie-tools__tracker_api", true),
	}
	for _, a := range events {
		m.Observe(a)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		m.Observe(events[i%len(events)])
	}
}

// BenchmarkObserve_AgentEventParallel is the same on every core at once, as with many
// sessions running.
func BenchmarkObserve_AgentEventParallel(b *testing.B) {
	m := New("1.2.3")
	events := []orchestrator.Activity{
		tokenEvent("claude-sonnet-4-5-20250929", 1200, 300, 40000),
		toolEvent("Bash", false),
	}
	for _, a := range events {
		m.Observe(a)
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			m.Observe(events[i%len(events)])
			i++
		}
	})
}

// TestObserve_RevisionCountsTokensNotRequests: a token_usage event that revises figures
// already reported (Claude's result totals) adds its tokens but is not an API request.
func TestObserve_RevisionCountsTokensNotRequests(t *testing.T) {
	m := New("1.2.3")
	m.ReadSessions(fakeSnapshot(twoRunning()))
	m.Observe(tokenEvent("opus", 10, 1, 0))
	rev := tokenEvent("opus", 0, 40, 0)
	rev.Event.Revision = true
	m.Observe(rev)
	fams := gather(t, m)
	if got := series(t, fams, "sortie_api_requests_total", map[string]string{"model": "opus"}).GetCounter().GetValue(); got != 1 {
		t.Errorf("api_requests_total{model=opus} = %g, want 1", got)
	}
	if got := series(t, fams, "sortie_tokens_total", map[string]string{"model": "opus", "type": "output"}).GetCounter().GetValue(); got != 41 {
		t.Errorf("tokens_total{type=output} = %g, want 41", got)
	}
}

func TestNotifyRateLimited_CountsByScopeFromZero(t *testing.T) {
	m := New("1.2.3")
	count := func(scope string) float64 {
		return series(t, gather(t, m), "sortie_notify_rate_limited_total", map[string]string{"scope": scope}).GetCounter().GetValue()
	}
	for _, scope := range []string{agenttools.NotifyScopeIssue, agenttools.NotifyScopeGlobal} {
		if got := count(scope); got != 0 {
			t.Errorf("scope %s starts at %v, want 0 (exported before the first refusal)", scope, got)
		}
	}
	m.NotifyRateLimited(agenttools.NotifyScopeIssue)
	m.NotifyRateLimited(agenttools.NotifyScopeIssue)
	m.NotifyRateLimited(agenttools.NotifyScopeGlobal)
	m.NotifyRateLimited("someone_else") // ignored: the label has two values
	if got := count("issue"); got != 2 {
		t.Errorf(`scope="issue" = %v, want 2`, got)
	}
	if got := count("global"); got != 1 {
		t.Errorf(`scope="global" = %v, want 1`, got)
	}
	if n := len(gather(t, m)["sortie_notify_rate_limited_total"].GetMetric()); n != 2 {
		t.Errorf("%d series, want 2 (issue, global)", n)
	}
}
