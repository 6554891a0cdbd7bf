package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// Error codes of the JSON error envelope {"error":{"code","message"}}. They are part of
// the API: clients switch on them.
const (
	codeUnauthorized        = "unauthorized"         // 401: no or wrong token
	codeForbiddenHost       = "forbidden_host"       // 403: Host is not loopback on an open server (DNS rebinding)
	codeCrossOrigin         = "cross_origin"         // 403: a browser sent a state-changing request from another site
	codeNotFound            = "not_found"            // 404: no such route
	codeIssueNotFound       = "issue_not_found"      // 404: neither the scheduler nor the history knows the issue
	codeMethodNotAllowed    = "method_not_allowed"   // 405
	codeInvalidQuery        = "invalid_query"        // 400: a query parameter is malformed or out of range
	codeDraining            = "draining"             // 409: the daemon is shutting down
	codeSnapshotUnavailable = "snapshot_unavailable" // 503: the scheduler did not answer in time
	codeHistoryUnavailable  = "history_unavailable"  // 503: no run history is wired in
	codeEventsUnavailable   = "events_unavailable"   // 503: no live feed is wired in
	codeRefreshUnavailable  = "refresh_unavailable"  // 503: no refresh is wired in
	codeStoreError          = "store_error"          // 500: reading run history (or recording an answer) failed

	codeInvalidBody            = "invalid_body"            // 400: a request body is malformed or out of bounds
	codeCheckpointNotFound     = "checkpoint_not_found"    // 404: the issue has no such pending checkpoint
	codeCheckpointAnswered     = "checkpoint_answered"     // 409: the checkpoint has an answer already
	codeInvalidOption          = "invalid_option"          // 422: the answer is not one of the checkpoint's options
	codeCheckpointsUnavailable = "checkpoints_unavailable" // 503: structured workflows are off
)

// errorBody is the error envelope.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// writeJSON writes v as the response with status. It encodes into a pooled buffer
// first, so an encoding error becomes a clean 500 instead of a truncated body.
func writeJSON(w http.ResponseWriter, status int, v any) {
	buf := bufPool.Get().(*bytes.Buffer)
	defer putBuf(buf)
	if err := json.NewEncoder(buf).Encode(v); err != nil {
		status = http.StatusInternalServerError
		buf.Reset()
		_ = json.NewEncoder(buf).Encode(errorBody{errorDetail{"internal_error", "encoding the response failed: " + err.Error()}})
	}
	writeBody(w, status, buf.Bytes())
}

// writeBody writes a JSON body with the API's headers.
func writeBody(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// putBuf returns buf to the pool, emptied, unless one huge response grew it.
func putBuf(buf *bytes.Buffer) {
	if buf.Cap() <= 4<<20 {
		buf.Reset()
		bufPool.Put(buf)
	}
}

// writeError writes the error envelope.
func writeError(w http.ResponseWriter, status int, code, message string) {
	writeJSON(w, status, errorBody{errorDetail{code, message}})
}

// methods serves h for the given methods (GET implies HEAD) and answers any other
// method with a 405 JSON error and an Allow header.
func methods(h http.HandlerFunc, allowed ...string) http.Handler {
	if i := slices.Index(allowed, http.MethodGet); i >= 0 {
		allowed = slices.Insert(allowed, i+1, http.MethodHead)
	}
	allow := strings.Join(allowed, ", ")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, m := range allowed {
			if r.Method == m {
				h(w, r)
				return
			}
		}
		w.Header().Set("Allow", allow)
		writeError(w, http.StatusMethodNotAllowed, codeMethodNotAllowed,
			r.Method+" is not allowed on "+r.URL.Path+"; use "+allow)
	})
}

// optTime is t for JSON, or nil (null) when t is zero: "never" reads better than year 1.
func optTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// seconds is d in seconds, to the millisecond.
func seconds(d time.Duration) float64 {
	return float64(d.Milliseconds()) / 1000
}
