package fakegithub_test

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"sortie/internal/testkit/fakegithub"
)

// post sends POST path with the token, GitHub's headers and a JSON body.
func post(t *testing.T, f *fakegithub.Server, path, body string) response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, f.URL()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+fakegithub.Token)
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("User-Agent", "fakegithub-test")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

// TestAddLabels_AddsWhatTheIssueLacks: POST /issues/{n}/labels adds the labels the issue
// does not have (case-insensitively), answers every label of the issue, moves
// updated_at only when something changed, and refuses what GitHub refuses.
func TestAddLabels_AddsWhatTheIssueLacks(t *testing.T) {
	now := time.Date(2026, 4, 1, 12, 0, 0, 0, time.UTC)
	f := fakegithub.New(t, fakegithub.WithClock(func() time.Time { return now }))
	f.AddIssue(1, "one", "open", "Todo", "Bug")
	before, _ := f.Issue(1)

	r := post(t, f, "/repos/octo/hello/issues/1/labels", `{"labels": ["needs-human", "bug"]}`)
	if r.status != http.StatusOK {
		t.Fatalf("POST labels: %d %s", r.status, r.body)
	}
	var got []struct {
		ID   int64  `json:"id"`
		Name string `json:"name"`
	}
	if err := json.Unmarshal(r.body, &got); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range got {
		names = append(names, l.Name)
	}
	if want := []string{"Todo", "Bug", "needs-human"}; !slices.Equal(names, want) || got[2].ID == 0 {
		t.Fatalf("answer = %s, want the issue's labels %v with ids", r.body, want)
	}
	after, _ := f.Issue(1)
	if !slices.Equal(after.Labels, []string{"Todo", "Bug", "needs-human"}) || !after.UpdatedAt.After(before.UpdatedAt) {
		t.Errorf("issue after = labels %v updated %v (was %v)", after.Labels, after.UpdatedAt, before.UpdatedAt)
	}

	// Again, in other casing: nothing changes, updated_at stays.
	if r := post(t, f, "/repos/octo/hello/issues/1/labels", `{"labels": ["Needs-Human"]}`); r.status != http.StatusOK {
		t.Fatalf("POST an existing label: %d %s", r.status, r.body)
	}
	if again, _ := f.Issue(1); !slices.Equal(again.Labels, after.Labels) || !again.UpdatedAt.Equal(after.UpdatedAt) {
		t.Errorf("an existing label changed the issue: %v %v", again.Labels, again.UpdatedAt)
	}

	for _, c := range []struct {
		path, body string
		status     int
	}{
		{"/repos/octo/hello/issues/1/labels", `{}`, http.StatusUnprocessableEntity},
		{"/repos/octo/hello/issues/1/labels", `{"labels": ["` + strings.Repeat("x", 51) + `"]}`, http.StatusUnprocessableEntity},
		{"/repos/octo/hello/issues/1/labels", `{"labels": `, http.StatusBadRequest},
		{"/repos/octo/hello/issues/9/labels", `{"labels": ["x"]}`, http.StatusNotFound},
		{"/repos/octo/other/issues/1/labels", `{"labels": ["x"]}`, http.StatusNotFound},
	} {
		if r := post(t, f, c.path, c.body); r.status != c.status {
			t.Errorf("POST %s %s: %d %s, want %d", c.path, c.body, r.status, r.body, c.status)
		}
	}
	if log := f.Log(); !slices.Contains(log, "POST /repos/octo/hello/issues/1/labels") {
		t.Errorf("the log does not record the request: %v", log)
	}
}
