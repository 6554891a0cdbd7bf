// Package metrics owns Sortie's Prometheus metrics: the sortie_* families on a dedicated
// registry (plus the Go and process collectors), fed by the orchestrator's Activity reports
// and by a counting wrapper around the tracker, and the /metrics handler that serves them.
// It decides nothing and keeps no scheduling state; the server mounts its handler and
// internal/daemon wires its Observe method and tracker wrapper.
package metrics

import (
	"context"
	"net/http"
	"runtime"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"sortie/internal/agenttools"
	"sortie/internal/orchestrator"
	"sortie/internal/reactions"
	"sortie/internal/webhook"
)

// namespace prefixes every family: sortie_dispatches_total, ...
const namespace = "sortie"

// snapshotTimeout bounds how long a scrape waits for the orchestrator's snapshot. A busy
// loop costs the scrape its session gauges, never the whole scrape.
const snapshotTimeout = time.Second

// maxScrapesInFlight limits concurrent /metrics requests; more get a 503 rather than
// piling up snapshot requests on the orchestrator's loop.
const maxScrapesInFlight = 4

// Run duration buckets, in seconds: a run takes minutes to hours.
var runDurationBuckets = []float64{
	10, 30, 60, 120, 300, 600, 900, 1200, 1800, 2700, 3600, 5400, 7200, 10800, 14400, 21600,
}

// Poll duration buckets, in seconds: the reference's exp(0.1, ×2, 10), 0.1 s to 51.2 s.
var pollDurationBuckets = prometheus.ExponentialBuckets(0.1, 2, 10)

// Metrics holds every Sortie metric on its own registry. Its methods are safe for
// concurrent use.
type Metrics struct {
	reg *prometheus.Registry
	// rateLimits reports the tracker API's budget (SetRateLimits).
	rateLimits *rateLimitCollector
	handler    http.Handler

	dispatches   prometheus.Counter
	stalls       prometheus.Counter
	reloadErrors prometheus.Counter
	agentRuntime prometheus.Counter
	pollDuration prometheus.Histogram
	polls        resultPair
	turns        *boundedLabel[prometheus.Counter]
	runs         *boundedLabel[runSeries]
	handoffs     *boundedLabel[prometheus.Counter]
	retries      *boundedLabel[prometheus.Counter]
	holds        *boundedLabel[prometheus.Counter]
	reconcile    *boundedLabel[prometheus.Counter]
	models       *boundedLabel[modelSeries]
	tools        *boundedLabel[resultPair]
	trackerByOp  [opCount]resultPair
	// notifyLimited counts notify_operator calls refused by the rate limit, by scope;
	// fixed at New, so reads need no lock.
	notifyLimited map[string]prometheus.Counter
	// webhooks counts webhook deliveries by tracker kind and result; fixed at New
	// (webhook.Kinds × webhook.Results), so reads need no lock.
	webhooks map[[2]string]prometheus.Counter
	// reactions counts what the pull-request watcher did (reactions.Event), by kind
	// and result; fixed at New, so reads need no lock.
	reactionChecks      map[[2]string]prometheus.Counter
	reactionRequests    map[string]prometheus.Counter
	reactionsDispatched map[string]prometheus.Counter
	reactionEscalations map[[2]string]prometheus.Counter
}

// New builds the metrics of one daemon. version is the build's version (the
// sortie_build_info label). The session gauges come from the orchestrator's snapshot,
// which exists only later: ReadSessions adds them.
func New(version string) *Metrics {
	if version == "" {
		version = unknownValue
	}
	reg := prometheus.NewRegistry()
	m := &Metrics{reg: reg}
	f := factory{reg: reg}

	buildInfo := f.gauge(prometheus.GaugeOpts{Name: "build_info",
		Help:        "Always 1; its labels name the running build's version and Go version.",
		ConstLabels: prometheus.Labels{"version": version, "go_version": runtime.Version()}})
	buildInfo.Set(1)

	m.dispatches = f.counter("dispatches_total", "Workers started for an issue.")
	m.stalls = f.counter("stalls_total", "Runs stopped because the agent was silent for longer than agent.stall_timeout_ms.")
	m.reloadErrors = f.counter("workflow_reload_errors_total", "Edits of WORKFLOW.md rejected; the last good configuration stayed in force.")
	m.agentRuntime = f.counter("agent_runtime_seconds_total", "Seconds agents ran, summed over finished runs.")

	pollCycles := f.counterVec("poll_cycles_total", "Tracker poll cycles, by result (success, error).", "result")
	m.polls = resultPair{success: pollCycles.WithLabelValues("success"), failure: pollCycles.WithLabelValues("error")}
	m.pollDuration = f.histogram(prometheus.HistogramOpts{Name: "poll_duration_seconds",
		Help: "Duration of a tracker poll cycle, in seconds.", Buckets: pollDurationBuckets})

	m.turns = counterLabel(f.counterVec("turns_total", "Agent turns that ended, by how they ended (turn_completed, turn_failed, ...).", "result"))
	workerExits := f.counterVec("worker_exits_total", "Runs that ended, by their run-history status (succeeded, handed_off, failed, stalled, ...).", "status")
	runDuration := f.histogramVec(prometheus.HistogramOpts{Name: "run_duration_seconds",
		Help: "Duration of a run (one worker session on an issue), in seconds, by run-history status.", Buckets: runDurationBuckets},
		"status")
	m.runs = newBoundedLabel(func(status string) runSeries {
		return runSeries{exits: workerExits.WithLabelValues(status), duration: runDuration.WithLabelValues(status)}
	})
	m.handoffs = counterLabel(f.counterVec("handoff_transitions_total", "Moves to tracker.handoff_state after a run, by result (success, error).", "result"))
	m.retries = counterLabel(f.counterVec("retries_total", "Retries scheduled, by trigger (failure, continuation, resume, ...).", "trigger"))
	m.holds = counterLabel(f.counterVec("holds_total", "Issues held for a human, by reason (blocked, needs_human_review, awaiting_input, error, retries_exhausted).", "reason"))
	m.reconcile = counterLabel(f.counterVec("reconciliation_actions_total", "Workers stopped and workspaces removed by reconciliation, by action (stop, cleanup, sweep_cleanup).", "action"))

	tokens := f.counterVec("tokens_total", "Tokens agents used, by type (input, output, cache_read) and model.", "type", "model")
	cost := f.counterVec("cost_usd_total", "Cost in US dollars that agent CLIs reported, by model, counted when a run ends.", "model")
	apiRequests := f.counterVec("api_requests_total", "Model API requests agents made (token usage reports), by model.", "model")
	m.models = newBoundedLabel(func(model string) modelSeries {
		return modelSeries{
			input: tokens.WithLabelValues("input", model), output: tokens.WithLabelValues("output", model),
			cacheRead: tokens.WithLabelValues("cache_read", model), cost: cost.WithLabelValues(model),
			apiRequests: apiRequests.WithLabelValues(model),
		}
	})
	toolCalls := f.counterVec("tool_calls_total", "Tool calls agents made, by tool and result (success, error).", "tool", "result")
	m.tools = newBoundedLabel(func(tool string) resultPair {
		return resultPair{success: toolCalls.WithLabelValues(tool, "success"), failure: toolCalls.WithLabelValues(tool, "error")}
	})

	trackerRequests := f.counterVec("tracker_requests_total", "Tracker API calls, by operation and result (success, error).", "operation", "result")
	for op := range opCount {
		name := op.String()
		m.trackerByOp[op] = resultPair{success: trackerRequests.WithLabelValues(name, "success"),
			failure: trackerRequests.WithLabelValues(name, "error")}
	}

	notifyLimited := f.counterVec("notify_rate_limited_total",
		"notify_operator calls refused by notify_operator.rate_limit, by the limit that refused them (issue, global).", "scope")
	m.notifyLimited = map[string]prometheus.Counter{}
	for _, scope := range []string{agenttools.NotifyScopeIssue, agenttools.NotifyScopeGlobal} {
		m.notifyLimited[scope] = notifyLimited.WithLabelValues(scope)
	}

	deliveries := f.counterVec("webhook_deliveries_total",
		"Tracker webhook deliveries received, by tracker (github, linear, jira) and result (accepted, ignored, replayed, unauthorized, stale, malformed, too_large, not_configured, busy).",
		"tracker", "result")
	m.webhooks = map[[2]string]prometheus.Counter{}
	for _, kind := range webhook.Kinds() {
		for _, result := range webhook.Results() {
			m.webhooks[[2]string{kind, result}] = deliveries.WithLabelValues(kind, result)
		}
	}

	checks := f.counterVec("reaction_checks_total",
		"Checks of handed-off issues' pull requests, by reaction kind (ci, review) and result (passing, pending, failing, none, changes_requested, error).",
		"kind", "result")
	requests := f.counterVec("reaction_requests_total",
		"Requests to the code host made by reaction checks, by reaction kind: every one conditional, most answered 304.", "kind")
	dispatched := f.counterVec("reactions_dispatched_total",
		"Reaction runs started: a CI failure or change request sent back to the agent, by kind.", "kind")
	escalations := f.counterVec("reaction_escalations_total",
		"Issues escalated to humans after reactions.<kind>.max_retries runs, by kind and how (label, comment, error).", "kind", "how")
	m.reactionChecks, m.reactionRequests = map[[2]string]prometheus.Counter{}, map[string]prometheus.Counter{}
	m.reactionsDispatched, m.reactionEscalations = map[string]prometheus.Counter{}, map[[2]string]prometheus.Counter{}
	for _, kind := range []string{reactions.KindCI, reactions.KindReview} {
		for _, result := range []string{"passing", "pending", "failing", "none", "changes_requested", "error"} {
			m.reactionChecks[[2]string{kind, result}] = checks.WithLabelValues(kind, result)
		}
		m.reactionRequests[kind] = requests.WithLabelValues(kind)
		m.reactionsDispatched[kind] = dispatched.WithLabelValues(kind)
		for _, how := range []string{"label", "comment", "error"} {
			m.reactionEscalations[[2]string{kind, how}] = escalations.WithLabelValues(kind, how)
		}
	}

	// Values the orchestrator is known to report start at zero, so rate() and alerts
	// see the series before the first event.
	for _, v := range []string{"success", "error"} {
		m.handoffs.get(v)
	}
	for _, v := range []string{"failure", "continuation", "resume"} {
		m.retries.get(v)
	}
	for _, v := range []string{"stop", "cleanup", "sweep_cleanup"} {
		m.reconcile.get(v)
	}
	for _, v := range []string{"blocked", "needs_human_review", "awaiting_input", "error", "retries_exhausted"} {
		m.holds.get(v)
	}

	m.rateLimits = newRateLimitCollector()
	reg.MustRegister(m.rateLimits)
	reg.MustRegister(collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	m.handler = promhttp.InstrumentMetricHandler(reg, promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorHandling:       promhttp.ContinueOnError,
		Registry:            reg,
		MaxRequestsInFlight: maxScrapesInFlight,
	}))
	return m
}

// ReadSessions adds the session gauges (sessions_running, slots_available, ...), read
// at each scrape from snapshot, called with a short timeout (it must honour ctx); a
// scrape leaves them out when it fails. The daemon calls it once, as soon as the
// orchestrator exists (the metrics exist before: the tracker adapters and the
// orchestrator's Activity report to them); until then a scrape has no session gauges.
// A second call panics.
func (m *Metrics) ReadSessions(snapshot func(context.Context) (orchestrator.Snapshot, error)) {
	m.reg.MustRegister(newSnapshotCollector(snapshot, snapshotTimeout))
}

// Handler serves the registry in the Prometheus exposition formats, for GET /metrics.
// It is built once by New and may be mounted anywhere.
func (m *Metrics) Handler() http.Handler { return m.handler }

// runSeries are the series of one run status.
type runSeries struct {
	exits    prometheus.Counter
	duration prometheus.Observer
}

// modelSeries are the series of one model.
type modelSeries struct {
	input, output, cacheRead, cost, apiRequests prometheus.Counter
}

// resultPair counts the successes and errors of one thing (a tool, a tracker operation,
// polls).
type resultPair struct {
	success, failure prometheus.Counter
}

func (p resultPair) count(failed bool) {
	if failed {
		p.failure.Inc()
		return
	}
	p.success.Inc()
}

func counterLabel(v *prometheus.CounterVec) *boundedLabel[prometheus.Counter] {
	return newBoundedLabel(func(value string) prometheus.Counter { return v.WithLabelValues(value) })
}

// factory builds collectors in the sortie namespace and registers them on reg.
type factory struct {
	reg *prometheus.Registry
}

func (f factory) counter(name, help string) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: name, Help: help})
	f.reg.MustRegister(c)
	return c
}

func (f factory) counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: name, Help: help}, labels)
	f.reg.MustRegister(c)
	return c
}

func (f factory) gauge(opts prometheus.GaugeOpts) prometheus.Gauge {
	opts.Namespace = namespace
	g := prometheus.NewGauge(opts)
	f.reg.MustRegister(g)
	return g
}

func (f factory) histogram(opts prometheus.HistogramOpts) prometheus.Histogram {
	opts.Namespace = namespace
	h := prometheus.NewHistogram(opts)
	f.reg.MustRegister(h)
	return h
}

func (f factory) histogramVec(opts prometheus.HistogramOpts, labels ...string) *prometheus.HistogramVec {
	opts.Namespace = namespace
	h := prometheus.NewHistogramVec(opts, labels)
	f.reg.MustRegister(h)
	return h
}
