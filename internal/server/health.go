package server

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"sortie/internal/orchestrator"
)

const (
	pass = "pass"
	fail = "fail"
)

// livezBody is built once: /livez does no work at all.
var livezBody = []byte("{\"status\":\"pass\"}\n")

// handleLivez is GET /livez: the process serves HTTP. It needs no token, does no I/O
// and passes even while draining, so a supervisor never kills a daemon that is
// finishing its runs.
func handleLivez(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(livezBody)
}

// readyz is the body of GET /readyz.
type readyz struct {
	Status        string            `json:"status"`
	Version       string            `json:"version"`
	UptimeSeconds float64           `json:"uptime_seconds"`
	Checks        map[string]string `json:"checks"`
	// Errors says why each failing check fails.
	Errors map[string]string `json:"errors,omitempty"`
}

// minPollWindow is the shortest time since the last successful poll after which the
// poll check fails, whatever polling.interval is.
const minPollWindow = time.Minute

// pollWindow is how long after its last successful poll the daemon still counts as
// seeing its tracker: three poll intervals (one failed poll is not an outage), and at
// least minPollWindow.
func pollWindow(interval time.Duration) time.Duration {
	return max(3*interval, minPollWindow)
}

// readyzBrief is the body of GET /readyz for a request without the operator token:
// pass or fail, nothing of the daemon's version, uptime or why a check fails (a tracker
// error, a path of the database, a WORKFLOW.md error can name what a stranger should
// not learn).
type readyzBrief struct {
	Status string `json:"status"`
}

// handleReadyz is GET /readyz: 200 when the daemon can do its work, 503 with the
// failing checks otherwise. Checks: scheduler (the loop answers a snapshot in time),
// poll (a poll of the tracker succeeded within pollWindow), store (the database
// answers), draining (not shutting down), workflow (the last edit of WORKFLOW.md was
// accepted). It needs no token, but without the operator token (when one is set) the
// answer says only pass or fail (readyzBrief).
func (s *Server) handleReadyz(w http.ResponseWriter, r *http.Request) {
	out := readyz{Status: pass, Version: s.opts.Version,
		Checks: map[string]string{"scheduler": pass, "poll": pass, "store": pass, "draining": pass, "workflow": pass}}
	failed := func(check, why string) {
		out.Status, out.Checks[check] = fail, fail
		if out.Errors == nil {
			out.Errors = map[string]string{}
		}
		out.Errors[check] = why
	}
	if s.opts.StorePing != nil {
		ctx, cancel := context.WithTimeout(r.Context(), s.limits.snapshot)
		err := s.opts.StorePing(ctx)
		cancel()
		if err != nil {
			failed("store", err.Error())
		}
	}
	snap, err := s.snapshot(r.Context())
	if err != nil {
		failed("scheduler", "the scheduler did not answer: "+err.Error())
		// Without a snapshot none of these can be confirmed.
		failed("poll", "unknown: no snapshot")
		failed("draining", "unknown: no snapshot")
		failed("workflow", "unknown: no snapshot")
	} else {
		if why := pollProblem(snap); why != "" {
			failed("poll", why)
		}
		if snap.Draining {
			failed("draining", "the daemon is shutting down and dispatches nothing new")
		}
		if snap.WorkflowError != "" {
			failed("workflow", "the last edit of WORKFLOW.md was rejected (the previous configuration is in force): "+snap.WorkflowError)
		}
	}
	out.UptimeSeconds = s.uptime(snap.StartedAt)
	status := http.StatusOK
	if out.Status != pass {
		status = http.StatusServiceUnavailable
	}
	if s.auth != nil && !s.auth.allowed(r) {
		writeJSON(w, status, readyzBrief{Status: out.Status})
		return
	}
	writeJSON(w, status, out)
}

// pollProblem says why snap's polling does not count as working, or "" when it does:
// the last successful poll is recent, even if the newest one failed.
func pollProblem(snap orchestrator.Snapshot) string {
	lastErr := ""
	if !snap.LastPollOK && snap.LastError != "" {
		lastErr = "; the last poll failed: " + snap.LastError
	}
	if snap.LastPollAt.IsZero() {
		return "no poll of the tracker has succeeded yet" + lastErr
	}
	window := pollWindow(snap.PollInterval)
	if age := snap.GeneratedAt.Sub(snap.LastPollAt); age > window {
		return fmt.Sprintf("the last successful poll of the tracker was %s ago (more than %s)%s",
			age.Round(time.Second), window, lastErr)
	}
	return ""
}
