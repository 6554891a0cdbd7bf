package server

import (
	"net/http"
	"time"
)

// refreshOperations is what a refresh makes the scheduler do.
var refreshOperations = []string{"poll", "reconcile"}

// refreshBody is the answer of POST /api/v1/refresh.
type refreshBody struct {
	Queued      bool      `json:"queued"`
	Coalesced   bool      `json:"coalesced"`
	RequestedAt time.Time `json:"requested_at"`
	Operations  []string  `json:"operations"`
	// Error is set only on 409 draining: the body is the error envelope plus queued:false.
	Error *errorDetail `json:"error,omitempty"`
}

// handleRefresh is POST /api/v1/refresh: poll the tracker and reconcile now. 202 with
// coalesced true when a refresh was already pending; 409 while draining.
func (s *Server) handleRefresh(w http.ResponseWriter, r *http.Request) {
	if s.opts.Refresh == nil {
		writeError(w, http.StatusServiceUnavailable, codeRefreshUnavailable, "this daemon cannot be refreshed over HTTP")
		return
	}
	snap, err := s.snapshot(r.Context())
	if err != nil {
		s.snapshotFailed(w, r, err)
		return
	}
	now := s.now()
	if snap.Draining {
		writeJSON(w, http.StatusConflict, refreshBody{RequestedAt: now, Operations: []string{},
			Error: &errorDetail{codeDraining, "the daemon is shutting down and polls no more"}})
		return
	}
	coalesced := s.opts.Refresh()
	writeJSON(w, http.StatusAccepted, refreshBody{Queued: true, Coalesced: coalesced, RequestedAt: now,
		Operations: refreshOperations})
}
