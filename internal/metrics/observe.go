package metrics

import (
	"sortie/internal/reactions"

	"math"

	"github.com/prometheus/client_golang/prometheus"

	"sortie/internal/agent"
	"sortie/internal/orchestrator"
	"sortie/internal/store"
)

// Observe counts one orchestrator Activity. The orchestrator calls it synchronously on
// its loop and worker goroutines for every activity, agent events included, so it never
// blocks and, once a label value has been seen, does not allocate. Unknown kinds are
// ignored.
func (m *Metrics) Observe(a orchestrator.Activity) {
	switch a.Kind {
	case orchestrator.ActivityAgentEvent:
		m.observeAgentEvent(a)
	case orchestrator.ActivityDispatch:
		m.dispatches.Inc()
	case orchestrator.ActivityTurn:
		m.turns.get(a.Result).Inc()
	case orchestrator.ActivityRunFinished:
		m.observeRunFinished(a)
	case orchestrator.ActivityHandoff:
		m.handoffs.get(a.Result).Inc()
	case orchestrator.ActivityRetry:
		m.retries.get(a.Result).Inc()
	case orchestrator.ActivityHold:
		m.holds.get(a.Result).Inc()
	case orchestrator.ActivityPoll:
		// The reference names the values success and error; the orchestrator says ok.
		m.polls.count(a.Result != "ok" && a.Result != "success")
		m.pollDuration.Observe(a.Duration.Seconds())
	case orchestrator.ActivityReconcile:
		m.reconcile.get(a.Result).Inc()
	case orchestrator.ActivityReloadError:
		m.reloadErrors.Inc()
	}
}

func (m *Metrics) observeAgentEvent(a orchestrator.Activity) {
	ev := a.Event
	if ev == nil {
		return
	}
	switch ev.Type {
	case agent.EventTokenUsage:
		// The orchestrator counts one API request per token_usage event that is not a
		// revision of figures already reported (RunningView.APIRequests); so do we.
		s := m.models.get(modelOf(a))
		if !ev.Revision {
			s.apiRequests.Inc()
		}
		addTokens(s.input, a.Delta.Input)
		addTokens(s.output, a.Delta.Output)
		addTokens(s.cacheRead, a.Delta.CacheRead)
	case agent.EventToolResult:
		m.tools.get(ev.ToolName).count(ev.ToolError)
	}
}

func (m *Metrics) observeRunFinished(a orchestrator.Activity) {
	r := m.runs.get(a.Result)
	r.exits.Inc()
	if secs := a.Duration.Seconds(); secs >= 0 {
		r.duration.Observe(secs)
		m.agentRuntime.Add(secs)
	}
	if a.Result == string(store.StatusStalled) {
		m.stalls.Inc()
	}
	// Cost is cumulative over a run; counting it once at the end never double counts.
	if a.CostUSD > 0 && !math.IsInf(a.CostUSD, 1) {
		m.models.get(modelOf(a)).cost.Add(a.CostUSD)
	}
}

// modelOf is the model an activity's tokens and cost belong to: the session's latest
// model, else the event's own.
func modelOf(a orchestrator.Activity) string {
	if a.Model != "" {
		return a.Model
	}
	if a.Event != nil {
		return a.Event.Model
	}
	return ""
}

func addTokens(c prometheus.Counter, n int64) {
	if n > 0 {
		c.Add(float64(n))
	}
}

// NotifyRateLimited counts one notify_operator call refused by its rate limit, by the
// limit that refused it: agenttools.NotifyScopeIssue or NotifyScopeGlobal (other values
// are ignored, so the label stays bounded). The agent tools call it
// (agenttools.Options.NotifyRateLimited) on the agent socket's goroutines; it never
// blocks.
func (m *Metrics) NotifyRateLimited(scope string) {
	if c, ok := m.notifyLimited[scope]; ok {
		c.Inc()
	}
}

// WebhookDelivery counts one webhook delivery by tracker kind and result
// (webhook.Options.Count); other values are ignored, so the labels stay bounded. It
// is called on the HTTP server's goroutines and never blocks.
func (m *Metrics) WebhookDelivery(tracker, result string) {
	if c, ok := m.webhooks[[2]string{tracker, result}]; ok {
		c.Inc()
	}
}

// Reaction counts what the pull-request watcher did (reactions.Options.Report). Kinds
// and results it does not know are ignored, so the labels stay bounded.
func (m *Metrics) Reaction(e reactions.Event) {
	switch e.What {
	case "check":
		if c, ok := m.reactionChecks[[2]string{e.Kind, e.Result}]; ok {
			c.Inc()
		}
		if c, ok := m.reactionRequests[e.Kind]; ok && e.Requests > 0 {
			c.Add(float64(e.Requests))
		}
	case "dispatched":
		if c, ok := m.reactionsDispatched[e.Kind]; ok {
			c.Inc()
		}
	case "escalated":
		if c, ok := m.reactionEscalations[[2]string{e.Kind, e.Result}]; ok {
			c.Inc()
		}
	}
}
