package server

import (
	"net/http"
	"reflect"
	"testing"

	"sortie/internal/orchestrator"
)

func TestRefresh_QueuesAndCoalesces(t *testing.T) {
	f := newFixture(t, nil)
	for i, wantCoalesced := range []bool{false, true} {
		w := f.serve(request(http.MethodPost, "/api/v1/refresh"))
		if w.Code != http.StatusAccepted {
			t.Fatalf("POST %d: status %d, want 202 (%s)", i, w.Code, w.Body)
		}
		var got refreshBody
		decode(t, w, &got)
		want := refreshBody{Queued: true, Coalesced: wantCoalesced, RequestedAt: t0, Operations: []string{"poll", "reconcile"}}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("POST %d = %+v, want %+v", i, got, want)
		}
	}
	if f.sched.refreshes != 2 {
		t.Errorf("Refresh called %d times, want 2", f.sched.refreshes)
	}
}

func TestRefresh_DrainingIs409(t *testing.T) {
	f := newFixture(t, nil)
	f.sched.set(func(s *orchestrator.Snapshot) { s.Draining = true })
	w := f.serve(request(http.MethodPost, "/api/v1/refresh"))
	wantError(t, w, http.StatusConflict, codeDraining)
	var got refreshBody
	decode(t, w, &got)
	if got.Queued || got.Operations == nil || len(got.Operations) != 0 {
		t.Errorf("body = %+v, want queued false and operations []", got)
	}
	if f.sched.refreshes != 0 {
		t.Errorf("Refresh called %d times while draining, want 0", f.sched.refreshes)
	}
}

func TestRefresh_Unavailable(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.Refresh = nil })
	wantError(t, f.serve(request(http.MethodPost, "/api/v1/refresh")), http.StatusServiceUnavailable, codeRefreshUnavailable)
	g := newFixture(t, nil)
	g.sched.err = errNotRunning
	wantError(t, g.serve(request(http.MethodPost, "/api/v1/refresh")), http.StatusServiceUnavailable, codeSnapshotUnavailable)
}
