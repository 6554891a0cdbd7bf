package server

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

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
	all := func(failing ...string) map[string]string {
		m := map[string]string{"scheduler": pass, "poll": pass, "store": pass, "draining": pass, "workflow": pass}
		for _, k := range failing {
			m[k] = fail
		}
		return m
	}
	tests := []struct {
		name       string
		storeErr   error
		snap       func(*orchestrator.Snapshot)
		snapErr    error
		wantStatus int
		wantChecks map[string]string
		wantError  map[string]string // check → a part of its error
	}{
		{"all pass", nil, nil, nil, http.StatusOK, all(), nil},
		{"store does not answer", errors.New("store: sortie.db does not answer: disk I/O error"), nil, nil,
			http.StatusServiceUnavailable, all("store"), map[string]string{"store": "disk I/O error"}},
		{"never polled", nil, func(s *orchestrator.Snapshot) {
			s.LastPollAt, s.LastPollOK, s.LastError = time.Time{}, false, "tracker_auth_error: 401"
		}, nil, http.StatusServiceUnavailable, all("poll"),
			map[string]string{"poll": "no poll of the tracker has succeeded yet; the last poll failed: tracker_auth_error: 401"}},
		{"one failed poll after a recent success", nil, func(s *orchestrator.Snapshot) {
			s.PollInterval, s.LastPollAt, s.LastPollOK, s.LastError = 30*time.Second, t0.Add(-40*time.Second), false, "timeout"
		}, nil, http.StatusOK, all(), nil},
		{"polls failing for longer than three intervals", nil, func(s *orchestrator.Snapshot) {
			s.PollInterval, s.LastPollAt, s.LastPollOK, s.LastError = 30*time.Second, t0.Add(-91*time.Second), false, "timeout"
		}, nil, http.StatusServiceUnavailable, all("poll"),
			map[string]string{"poll": "the last successful poll of the tracker was 1m31s ago (more than 1m30s); the last poll failed: timeout"}},
		{"a short interval still allows a minute", nil, func(s *orchestrator.Snapshot) {
			s.PollInterval, s.LastPollAt = time.Second, t0.Add(-59*time.Second)
		}, nil, http.StatusOK, all(), nil},
		{"no poll for long although the last one succeeded", nil, func(s *orchestrator.Snapshot) {
			s.PollInterval, s.LastPollAt = time.Second, t0.Add(-2*time.Minute)
		}, nil, http.StatusServiceUnavailable, all("poll"), map[string]string{"poll": "was 2m0s ago (more than 1m0s)"}},
		{"draining", nil, func(s *orchestrator.Snapshot) { s.Draining = true }, nil, http.StatusServiceUnavailable,
			all("draining"), nil},
		{"workflow edit rejected", nil, func(s *orchestrator.Snapshot) { s.WorkflowError = "config: agent.kind: unknown" }, nil,
			http.StatusServiceUnavailable, all("workflow"), nil},
		{"scheduler gone", nil, nil, errNotRunning, http.StatusServiceUnavailable,
			all("scheduler", "poll", "draining", "workflow"), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, func(o *Options) {
				o.StorePing = func(ctx context.Context) error {
					if _, ok := ctx.Deadline(); !ok {
						t.Error("StorePing got a context without a deadline")
					}
					return tt.storeErr
				}
			})
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
			if len(body.Checks) != len(tt.wantChecks) {
				t.Errorf("checks = %v, want %v", body.Checks, tt.wantChecks)
			}
			for k, v := range tt.wantChecks {
				if body.Checks[k] != v {
					t.Errorf("checks[%s] = %q, want %q (all: %v)", k, body.Checks[k], v, body.Checks)
				}
				if v == fail && body.Errors[k] == "" {
					t.Errorf("errors[%s] is empty, want why the check fails", k)
				}
			}
			for k, part := range tt.wantError {
				if !strings.Contains(body.Errors[k], part) {
					t.Errorf("errors[%s] = %q, want it to contain %q", k, body.Errors[k], part)
				}
			}
			if tt.snapErr == nil && body.UptimeSeconds != 600 {
				t.Errorf("uptime_seconds = %v, want 600", body.UptimeSeconds)
			}
		})
	}
}

// TestReadyz_WithoutTheTokenSaysPassOrFailOnly: a stranger probing /readyz learns
// whether the daemon is ready, not its version, uptime or why a check fails; the
// operator token still gets everything.
func TestReadyz_WithoutTheTokenSaysPassOrFailOnly(t *testing.T) {
	f := newFixture(t, func(o *Options) {
		o.AuthToken = testToken
		o.StorePing = func(context.Context) error { return errors.New("store: /srv/sortie/sortie.db does not answer") }
	})
	for _, hdr := range [][]string{nil, {"Authorization", "Bearer wrong-token"}} {
		w := f.get(t, "/readyz", hdr...)
		if w.Code != http.StatusServiceUnavailable || w.Body.String() != "{\"status\":\"fail\"}\n" {
			t.Errorf("GET /readyz %v = %d %q, want 503 {\"status\":\"fail\"} only", hdr, w.Code, w.Body)
		}
	}
	w := f.get(t, "/readyz", "Authorization", "Bearer "+testToken)
	var body readyz
	decode(t, w, &body)
	if w.Code != http.StatusServiceUnavailable || body.Version != "1.2.3" || !strings.Contains(body.Errors["store"], "does not answer") {
		t.Errorf("GET /readyz with the token = %d %+v, want the checks and their errors", w.Code, body)
	}
	// Ready: 200 and pass, nothing else.
	f2 := newFixture(t, func(o *Options) { o.AuthToken = testToken })
	if w := f2.get(t, "/readyz"); w.Code != http.StatusOK || w.Body.String() != "{\"status\":\"pass\"}\n" {
		t.Errorf("GET /readyz = %d %q, want 200 {\"status\":\"pass\"} only", w.Code, w.Body)
	}
}

// errNotRunning is what the fake scheduler answers when a test has it gone.
var errNotRunning = errors.New("orchestrator: not running")
