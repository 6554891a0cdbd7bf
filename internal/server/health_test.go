package server

import (
	"errors"
	"net/http"
	"testing"

	"sortie/internal/orchestrator"
)

func TestLivez_PassesWithoutTokenIOOrHost(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.AuthToken = testToken })
	f.sched.block = true // the scheduler is stuck: /livez does not ask it
	r := request(http.MethodGet, "/livez")
	r.Host = "evil.example"
	w := f.serve(r)
	if w.Code != http.StatusOK || w.Body.String() != "{\"status\":\"pass\"}\n" {
		t.Fatalf("GET /livez = %d %q, want 200 {\"status\":\"pass\"}", w.Code, w.Body)
	}
	if ct := w.Header().Get("Content-Type"); ct != "application/json; charset=utf-8" {
		t.Errorf("Content-Type = %q", ct)
	}
}

func TestReadyz(t *testing.T) {
	tests := []struct {
		name       string
		ready      error
		snap       func(*orchestrator.Snapshot)
		snapErr    error
		wantStatus int
		wantChecks map[string]string
	}{
		{"all pass", nil, nil, nil, http.StatusOK,
			map[string]string{"preflight": pass, "scheduler": pass, "draining": pass, "workflow": pass}},
		{"preflight failed", errors.New("claude-code preflight: claude not found"), nil, nil, http.StatusServiceUnavailable,
			map[string]string{"preflight": fail, "scheduler": pass, "draining": pass, "workflow": pass}},
		{"draining", nil, func(s *orchestrator.Snapshot) { s.Draining = true }, nil, http.StatusServiceUnavailable,
			map[string]string{"preflight": pass, "scheduler": pass, "draining": fail, "workflow": pass}},
		{"workflow edit rejected", nil, func(s *orchestrator.Snapshot) { s.WorkflowError = "config: agent.kind: unknown" }, nil,
			http.StatusServiceUnavailable,
			map[string]string{"preflight": pass, "scheduler": pass, "draining": pass, "workflow": fail}},
		{"scheduler gone", nil, nil, orchestrator.ErrNotRunning, http.StatusServiceUnavailable,
			map[string]string{"preflight": pass, "scheduler": fail, "draining": fail, "workflow": fail}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, func(o *Options) { o.Ready = func() error { return tt.ready } })
			if tt.snap != nil {
				f.sched.set(tt.snap)
			}
			f.sched.err = tt.snapErr
			w := f.get(t, "/readyz")
			if w.Code != tt.wantStatus {
				t.Fatalf("status = %d, want %d (%s)", w.Code, tt.wantStatus, w.Body)
			}
			var body readyz
			decode(t, w, &body)
			wantOverall := pass
			if tt.wantStatus != http.StatusOK {
				wantOverall = fail
			}
			if body.Status != wantOverall || body.Version != "1.2.3" {
				t.Errorf("status %q version %q, want %q and 1.2.3", body.Status, body.Version, wantOverall)
			}
			for k, v := range tt.wantChecks {
				if body.Checks[k] != v {
					t.Errorf("checks[%s] = %q, want %q (all: %v)", k, body.Checks[k], v, body.Checks)
				}
				if v == fail && body.Errors[k] == "" {
					t.Errorf("errors[%s] is empty, want why the check fails", k)
				}
			}
			if tt.snapErr == nil && body.UptimeSeconds != 600 {
				t.Errorf("uptime_seconds = %v, want 600", body.UptimeSeconds)
			}
		})
	}
}
