package server

import (
	"net/http"
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

// handleReadyz is GET /readyz: 200 when the daemon can do its work, 503 with the
// failing checks otherwise. Checks: preflight (Options.Ready), scheduler (the loop
// answers a snapshot in time), draining (not shutting down), workflow (the last edit
// of WORKFLOW.md was accepted).
func (s *Server) handleReadyz(w http.ResponseWriter, r *http.Request) {
	out := readyz{Status: pass, Version: s.opts.Version,
		Checks: map[string]string{"preflight": pass, "scheduler": pass, "draining": pass, "workflow": pass}}
	failed := func(check, why string) {
		out.Status, out.Checks[check] = fail, fail
		if out.Errors == nil {
			out.Errors = map[string]string{}
		}
		out.Errors[check] = why
	}
	if s.opts.Ready != nil {
		if err := s.opts.Ready(); err != nil {
			failed("preflight", err.Error())
		}
	}
	snap, err := s.snapshot(r.Context())
	if err != nil {
		failed("scheduler", "the scheduler did not answer: "+err.Error())
		// Without a snapshot neither can be confirmed.
		failed("draining", "unknown: no snapshot")
		failed("workflow", "unknown: no snapshot")
	} else {
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
	writeJSON(w, status, out)
}
