package github

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"sortie/internal/tracker"
)

// TestNormalizeComment_KeepsTheAuthorsAssociation: the author's relation to the
// repository decides whether a "/sortie choose" comment answers a checkpoint.
func TestNormalizeComment_KeepsTheAuthorsAssociation(t *testing.T) {
	var c apiComment
	body := `{"id": 7, "user": {"login": "erin"}, "body": "/sortie choose approve", "created_at": "2026-11-25T08:00:00Z", "author_association": "MEMBER"}`
	if err := json.Unmarshal([]byte(body), &c); err != nil {
		t.Fatal(err)
	}
	got := normalizeComment(&c)
	if got.Author != "erin" || got.AuthorAssociation != "MEMBER" || got.ID != "7" {
		t.Errorf("comment = %+v, want erin, MEMBER, id 7", got)
	}
}

// TestFetchIssueByID_DoesNotFollowARedirectToAnotherRepository: GitHub answers 301 for
// an issue transferred elsewhere; the adapter neither follows it nor sends the token
// there, and says why.
func TestFetchIssueByID_DoesNotFollowARedirectToAnotherRepository(t *testing.T) {
	clock := newTestClock()
	f := newFakeGitHub(t, clock.Now)
	var followed atomic.Bool
	f.setHook(func(w http.ResponseWriter, r *http.Request) bool {
		switch {
		case strings.HasPrefix(r.URL.Path, "/repos/evil/"):
			followed.Store(true)
			w.Write([]byte(`{"number": 5, "title": "elsewhere", "state": "open", "repository_url": "` + f.srv.URL + `/repos/evil/repo"}`))
			return true
		case strings.HasPrefix(r.URL.Path, "/repos/octo/hello/issues/5"):
			w.Header().Set("Location", f.srv.URL+strings.Replace(r.URL.Path, "/octo/hello/", "/evil/repo/", 1))
			w.WriteHeader(http.StatusMovedPermanently)
			w.Write([]byte(`{"message": "Moved Permanently"}`))
			return true
		}
		return false
	})
	tr := newTestTracker(t, f, clock)
	_, err := tr.FetchIssueByID(context.Background(), "5")
	if tracker.KindOf(err) != tracker.ErrNotFound || !strings.Contains(err.Error(), "does not follow redirects") {
		t.Fatalf("FetchIssueByID of a transferred issue: %v, want tracker_not_found saying redirects are not followed (requests %q)", err, f.log)
	}
	if followed.Load() {
		t.Error("the adapter followed the redirect to another repository")
	}
}
