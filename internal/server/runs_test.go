package server

import (
	"encoding/json"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"sortie/internal/store"
)

// seedHistory records seven runs of three issues, oldest first, and returns their ids.
// The newest is still running.
func seedHistory(t *testing.T, st store.Store) []int64 {
	var ids []int64
	for i, issue := range []string{"A", "B", "A", "C", "A", "B"} {
		status := store.StatusSucceeded
		if i%2 == 1 {
			status = store.StatusFailed
		}
		started := t0.Add(time.Duration(i-10) * time.Minute)
		ids = append(ids, seedRun(t, st, "id-"+issue, "PROJ-"+issue, i+1, started, &store.RunEnd{
			Status: status, Error: map[bool]string{true: "turn_failed: exit 1"}[status == store.StatusFailed],
			EndedAt: started.Add(45 * time.Second),
			Progress: store.Progress{Turns: 2, Tokens: store.Tokens{Input: 100, Output: 20, Total: 120, CacheRead: 7},
				CostUSD: 0.05, Model: "claude-opus-4", SessionID: "sess-" + issue},
		}))
	}
	return append(ids, seedRun(t, st, "id-C", "PROJ-C", 7, t0.Add(-30*time.Second), nil))
}

func runIDsOf(runs []runJSON) []int64 {
	out := []int64{}
	for _, r := range runs {
		out = append(out, r.ID)
	}
	return out
}

func reversed(ids []int64) []int64 {
	out := make([]int64, len(ids))
	for i, id := range ids {
		out[len(ids)-1-i] = id
	}
	return out
}

func TestRuns_NewestFirstWithEveryField(t *testing.T) {
	f := newFixture(t, nil)
	ids := seedHistory(t, f.st)
	w := f.get(t, "/api/v1/runs")
	if w.Code != http.StatusOK {
		t.Fatalf("status = %d (%s)", w.Code, w.Body)
	}
	var got runsBody
	decode(t, w, &got)
	if !reflect.DeepEqual(runIDsOf(got.Runs), reversed(ids)) || got.NextBefore != nil {
		t.Fatalf("runs %v next_before %v, want %v and null", runIDsOf(got.Runs), got.NextBefore, reversed(ids))
	}
	running := got.Runs[0]
	if running.Status != "running" || running.EndedAt != nil || running.DurationSeconds != 30 {
		t.Errorf("running run: status %q ended_at %v duration %v, want running, null, 30 (until now)",
			running.Status, running.EndedAt, running.DurationSeconds)
	}
	failed := got.Runs[1] // PROJ-B, attempt 6
	started := t0.Add(-5 * time.Minute)
	ended := started.Add(45 * time.Second)
	want := runJSON{ID: ids[5], IssueID: "id-B", Identifier: "PROJ-B", Attempt: 6, AgentKind: "claude-code",
		Status: "failed", StartedAt: started, EndedAt: &ended, DurationSeconds: 45, Turns: 2,
		Tokens: store.Tokens{Input: 100, Output: 20, Total: 120, CacheRead: 7}, CostUSD: 0.05, Model: "claude-opus-4",
		Error: "turn_failed: exit 1", WorkspacePath: "/ws/PROJ-B", CLIVersion: "2.1.3", SessionID: "sess-B",
		WorkflowPath: "/srv/proj/WORKFLOW.md"}
	if !reflect.DeepEqual(failed, want) {
		t.Errorf("failed run =\n%+v\nwant\n%+v", failed, want)
	}
	for _, key := range []string{`"ended_at":null`, `"ssh_host":""`, `"next_before":null`} {
		if !strings.Contains(w.Body.String(), key) {
			t.Errorf("body lacks %s", key)
		}
	}
}

func TestRuns_PagesAndFilters(t *testing.T) {
	f := newFixture(t, nil)
	ids := seedHistory(t, f.st)
	list := func(query string) runsBody {
		t.Helper()
		w := f.get(t, "/api/v1/runs?"+query)
		if w.Code != http.StatusOK {
			t.Fatalf("GET /api/v1/runs?%s = %d (%s)", query, w.Code, w.Body)
		}
		var b runsBody
		decode(t, w, &b)
		return b
	}
	// Paging with limit 3 visits every run once and ends with next_before null.
	var seen []int64
	q := "limit=3"
	for page := 0; ; page++ {
		if page > 5 {
			t.Fatalf("paging did not end: %v", seen)
		}
		b := list(q)
		seen = append(seen, runIDsOf(b.Runs)...)
		if b.NextBefore == nil {
			break
		}
		if *b.NextBefore != b.Runs[len(b.Runs)-1].ID {
			t.Fatalf("next_before = %d, want the last id of the page %d", *b.NextBefore, b.Runs[len(b.Runs)-1].ID)
		}
		q = "limit=3&before=" + strconv.FormatInt(*b.NextBefore, 10)
	}
	if !reflect.DeepEqual(seen, reversed(ids)) {
		t.Errorf("pages visited %v, want %v", seen, reversed(ids))
	}
	// A page that ends exactly at the last run says there is no next page.
	if b := list("limit=7"); len(b.Runs) != 7 || b.NextBefore != nil {
		t.Errorf("limit=7 of 7 runs: %d runs, next_before %v; want 7 and null", len(b.Runs), b.NextBefore)
	}
	tests := []struct {
		query string
		want  []int64
	}{
		{"issue=PROJ-A", []int64{ids[4], ids[2], ids[0]}},
		{"status=failed", []int64{ids[5], ids[3], ids[1]}},
		{"status=running", []int64{ids[6]}},
		{"issue=PROJ-B&status=failed", []int64{ids[5], ids[1]}},
		{"issue=PROJ-A&before=" + strconv.FormatInt(ids[4], 10), []int64{ids[2], ids[0]}},
		{"issue=PROJ-Z", []int64{}},
		{"issue=" + url.QueryEscape("PROJ-%"), []int64{}},
	}
	for _, tt := range tests {
		if got := runIDsOf(list(tt.query).Runs); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("?%s = %v, want %v", tt.query, got, tt.want)
		}
	}
	if w := f.get(t, "/api/v1/runs?issue=PROJ-Z"); !strings.Contains(w.Body.String(), `"runs":[]`) {
		t.Errorf("an empty page is %s, want runs:[]", w.Body)
	}
}

func TestRuns_RejectsBadQueries(t *testing.T) {
	f := newFixture(t, nil)
	for _, q := range []string{
		"limit=0", "limit=501", "limit=-3", "limit=ten", "limit=1.5",
		"before=0", "before=-1", "before=x",
		"status=done", "status=RUNNING",
		"issue=" + strings.Repeat("x", maxIdentifierLen+1),
		"identifier=PROJ-1", "limit=5&limit=6",
	} {
		e := wantError(t, f.get(t, "/api/v1/runs?"+q), http.StatusBadRequest, codeInvalidQuery)
		name, _, _ := strings.Cut(q, "=")
		if !strings.Contains(e.Message, name) {
			t.Errorf("?%s: message %q does not name the parameter %q", clip(q), e.Message, name)
		}
	}
	if w := f.get(t, "/api/v1/runs?limit=500"); w.Code != http.StatusOK {
		t.Errorf("limit=500: status %d, want 200", w.Code)
	}
}

func TestRuns_WithoutHistoryIs503(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.Runs = nil })
	wantError(t, f.get(t, "/api/v1/runs"), http.StatusServiceUnavailable, codeHistoryUnavailable)
}

func TestRuns_StoreFailureIs500(t *testing.T) {
	f := newFixture(t, nil)
	f.st.Close() // reads now fail
	wantError(t, f.get(t, "/api/v1/runs"), http.StatusInternalServerError, codeStoreError)
}

// A run's self-review is in short (self_review) in the run history and whole
// (review_metadata) in the issue's detail only; a run without one has null and no
// review_metadata. A reaction run says which.
func TestRuns_SelfReviewInShortAndWholeInTheIssue(t *testing.T) {
	f := newFixture(t, nil)
	const meta = `{"enabled":true,"iterations":[{"iteration":1,"verdict":"iterate"},{"iteration":2,"verdict":"pass"}],` +
		`"total_iterations":2,"final_verdict":"pass","cap_reached":false}`
	plain := seedRun(t, f.st, "id-R", "PROJ-R", 1, t0.Add(-time.Hour), &store.RunEnd{Status: store.StatusFailed, EndedAt: t0.Add(-50 * time.Minute)})
	reviewed := seedRun(t, f.st, "id-R", "PROJ-R", 2, t0.Add(-10*time.Minute), &store.RunEnd{Status: store.StatusHandedOff,
		EndedAt: t0.Add(-time.Minute), ReviewMetadata: meta})

	type row struct {
		ID             int64            `json:"id"`
		SelfReview     *json.RawMessage `json:"self_review"`
		ReviewMetadata *json.RawMessage `json:"review_metadata"`
	}
	check := func(what string, rows []row, whole bool) {
		t.Helper()
		if len(rows) != 2 || rows[0].ID != reviewed || rows[1].ID != plain {
			t.Fatalf("%s: runs %+v, want %d then %d", what, rows, reviewed, plain)
		}
		var short struct {
			FinalVerdict    string `json:"final_verdict"`
			TotalIterations int    `json:"total_iterations"`
			Iterations      []any  `json:"iterations"`
		}
		if rows[0].SelfReview == nil || json.Unmarshal(*rows[0].SelfReview, &short) != nil || short.FinalVerdict != "pass" ||
			short.TotalIterations != 2 || short.Iterations != nil {
			t.Errorf("%s: self_review %s, want the verdict and iterations in short", what, deref(rows[0].SelfReview))
		}
		if rows[1].SelfReview != nil || rows[1].ReviewMetadata != nil {
			t.Errorf("%s: a run without a self-review has %s / %s", what, deref(rows[1].SelfReview), deref(rows[1].ReviewMetadata))
		}
		if !whole {
			if rows[0].ReviewMetadata != nil {
				t.Errorf("%s: review_metadata %s in the history list, want it left out", what, deref(rows[0].ReviewMetadata))
			}
			return
		}
		var got struct {
			Iterations []any `json:"iterations"`
		}
		if rows[0].ReviewMetadata == nil || json.Unmarshal(*rows[0].ReviewMetadata, &got) != nil || len(got.Iterations) != 2 {
			t.Errorf("%s: review_metadata %s, want the stored object", what, deref(rows[0].ReviewMetadata))
		}
	}

	var runs struct {
		Runs []row `json:"runs"`
	}
	decode(t, f.get(t, "/api/v1/runs?issue=PROJ-R"), &runs)
	check("/api/v1/runs", runs.Runs, false)
	var issue struct {
		Runs []row `json:"runs"`
	}
	decode(t, f.get(t, "/api/v1/PROJ-R"), &issue)
	check("/api/v1/PROJ-R", issue.Runs, true)

	if reviewMetadataOf("") != nil || reviewMetadataOf(`{"cut`) != nil {
		t.Error("reviewMetadataOf: empty or invalid text must be null")
	}
}

func deref(m *json.RawMessage) string {
	if m == nil {
		return "<absent>"
	}
	return string(*m)
}
