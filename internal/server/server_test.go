package server

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestNew_RefusesNonLoopbackHostWithoutToken(t *testing.T) {
	snap := (&fakeScheduler{}).Snapshot
	tests := []struct {
		host, token string
		generated   bool // the daemon generated the token: it is printed in a login link
		ok          bool
	}{
		{"127.0.0.1", "", false, true},
		{"127.0.0.2", "", false, true},
		{"::1", "", false, true},
		{"localhost", "", false, true},
		{"0.0.0.0", "", false, false},
		{"::", "", false, false},
		{"", "", false, false},
		{"192.168.1.20", "", false, false},
		{"192.168.1.20", "   ", false, false}, // blank is no token
		{"0.0.0.0", testToken, false, true},
		{"", testToken, false, true},
		{"0.0.0.0", testToken, true, false}, // a generated token never guards a network
		{"127.0.0.1", testToken, true, true},
	}
	for _, tt := range tests {
		_, err := New(Options{Host: tt.host, AuthToken: tt.token, TokenGenerated: tt.generated, Snapshot: snap})
		if tt.ok && err != nil {
			t.Errorf("New(host %q, token %q): %v, want success", tt.host, tt.token, err)
		}
		if !tt.ok {
			if err == nil {
				t.Errorf("New(host %q, no token) succeeded, want a refusal", tt.host)
			} else if !strings.Contains(err.Error(), "server.auth_token") || !strings.Contains(err.Error(), "127.0.0.1") {
				t.Errorf("New(host %q) error = %q, want it to name server.auth_token and 127.0.0.1 as the fixes", tt.host, err)
			}
		}
	}
}

func TestNew_RequiresSnapshotAndAValidPort(t *testing.T) {
	if _, err := New(Options{Host: "127.0.0.1"}); err == nil || !strings.Contains(err.Error(), "Snapshot") {
		t.Errorf("New without Snapshot: err = %v, want one naming Snapshot", err)
	}
	snap := (&fakeScheduler{}).Snapshot
	if _, err := New(Options{Host: "127.0.0.1", Port: 70000, Snapshot: snap}); err == nil || !strings.Contains(err.Error(), "server.port") {
		t.Errorf("New with port 70000: err = %v, want one naming server.port", err)
	}
}

func TestRoutes_WrongMethodIs405WithAllow(t *testing.T) {
	f := newFixture(t, nil)
	tests := []struct {
		method, path, allow string
	}{
		{http.MethodPost, "/livez", "GET, HEAD"},
		{http.MethodPost, "/readyz", "GET, HEAD"},
		{http.MethodDelete, "/api/v1/state", "GET, HEAD"},
		{http.MethodPost, "/api/v1/runs", "GET, HEAD"},
		{http.MethodPost, "/api/v1/events", "GET, HEAD"},
		{http.MethodGet, "/api/v1/refresh", "POST"},
		{http.MethodPut, "/api/v1/PROJ-1", "GET, HEAD"},
		{http.MethodDelete, "/login", "GET, HEAD, POST"},
	}
	for _, tt := range tests {
		w := f.serve(request(tt.method, tt.path))
		wantError(t, w, http.StatusMethodNotAllowed, codeMethodNotAllowed)
		if got := w.Header().Get("Allow"); got != tt.allow {
			t.Errorf("%s %s: Allow = %q, want %q", tt.method, tt.path, got, tt.allow)
		}
	}
}

func TestRoutes_UnknownPathsAreJSON404s(t *testing.T) {
	f := newFixture(t, nil)
	for _, path := range []string{"/api/v1/state/extra", "/api/v2/state", "/api/v1/", "/", "/metrics", "/favicon.ico"} {
		wantError(t, f.get(t, path), http.StatusNotFound, codeNotFound)
	}
}

func TestRoutes_MountsMetricsAndDashboard(t *testing.T) {
	mark := func(name string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(name + " " + r.URL.Path)) })
	}
	f := newFixture(t, func(o *Options) { o.Metrics, o.Dashboard = mark("metrics"), mark("dashboard") })
	tests := map[string]string{
		"/metrics":             "metrics /metrics",
		"/":                    "dashboard /",
		"/static/app.js":       "dashboard /static/app.js",
		"/issues/PROJ-1":       "dashboard /issues/PROJ-1",
		"/livez/not-the-probe": "dashboard /livez/not-the-probe",
	}
	for path, want := range tests {
		if w := f.get(t, path); w.Code != http.StatusOK || w.Body.String() != want {
			t.Errorf("GET %s = %d %q, want 200 %q", path, w.Code, w.Body, want)
		}
	}
	// The API keeps its own 404s.
	wantError(t, f.get(t, "/api/v1/nope/nope"), http.StatusNotFound, codeNotFound)
}

func TestServe_ShutsDownWhenContextEnds(t *testing.T) {
	f := newFixture(t, nil)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- f.srv.Serve(ctx, l) }()

	resp, err := http.Get("http://" + l.Addr().String() + "/livez")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /livez = %d, want 200", resp.StatusCode)
	}
	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("Serve after cancel = %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return within 10s of its context ending")
	}
	if _, err := http.Get("http://" + l.Addr().String() + "/livez"); err == nil {
		t.Fatal("the server still answers after Serve returned")
	}
}

func TestListenAndServe_NamesTheAddressWhenThePortIsTaken(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	f := newFixture(t, func(o *Options) { o.Port = port })
	err = f.srv.ListenAndServe(context.Background())
	if err == nil || !strings.Contains(err.Error(), l.Addr().String()) || !strings.Contains(err.Error(), "server.port") {
		t.Fatalf("ListenAndServe on a busy port: err = %v, want one naming %s and server.port", err, l.Addr())
	}
	var opErr *net.OpError
	if !errors.As(err, &opErr) {
		t.Errorf("err = %v, want it to wrap the *net.OpError", err)
	}
}
