package github

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"sortie/internal/testkit/fakegithub"
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
	f := fakegithub.New(t, fakegithub.WithClock(clock.Now))
	var followed atomic.Bool
	f.SetHook(func(w http.ResponseWriter, r *http.Request) bool {
		switch {
		case strings.HasPrefix(r.URL.Path, "/repos/evil/"):
			followed.Store(true)
			w.Write([]byte(`{"number": 5, "title": "elsewhere", "state": "open", "repository_url": "` + f.URL() + `/repos/evil/repo"}`))
			return true
		case strings.HasPrefix(r.URL.Path, "/repos/octo/hello/issues/5"):
			w.Header().Set("Location", f.URL()+strings.Replace(r.URL.Path, "/octo/hello/", "/evil/repo/", 1))
			w.WriteHeader(http.StatusMovedPermanently)
			w.Write([]byte(`{"message": "Moved Permanently"}`))
			return true
		}
		return false
	})
	tr := newTestTracker(t, f, clock)
	_, err := tr.FetchIssueByID(context.Background(), "5")
	if tracker.KindOf(err) != tracker.ErrNotFound || !strings.Contains(err.Error(), "does not follow redirects") {
		t.Fatalf("FetchIssueByID of a transferred issue: %v, want tracker_not_found saying redirects are not followed (requests %q)", err, f.Log())
	}
	if followed.Load() {
		t.Error("the adapter followed the redirect to another repository")
	}
}

// TestSelf_NamesTheTokensAccountAndItsComments: Self is the account GET /user names,
// asked once; the comments the adapter posts are by it, and Identity.Wrote says so.
func TestSelf_NamesTheTokensAccountAndItsComments(t *testing.T) {
	clock := newTestClock()
	f := fakegithub.New(t, fakegithub.WithClock(clock.Now))
	f.AddIssue(1, "one", "open")
	tr := newTestTracker(t, f, clock)
	ctx := context.Background()
	me, err := tr.Self(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if me.Login != "sortie-bot" || me.ID != "4242" || me.App {
		t.Fatalf("Self = %+v, want sortie-bot, id 4242, not an app", me)
	}
	before := f.Counts().Requests
	if again, err := tr.Self(ctx); err != nil || again != me {
		t.Fatalf("second Self = %+v, %v", again, err)
	}
	if after := f.Counts().Requests; after != before {
		t.Errorf("the second Self asked GitHub again (%d requests, was %d)", after, before)
	}
	if err := tr.CommentIssue(ctx, "1", "/sortie choose approve"); err != nil {
		t.Fatal(err)
	}
	comments, err := tr.FetchIssueComments(ctx, "1")
	if err != nil || len(comments) != 1 {
		t.Fatalf("comments = %+v, %v", comments, err)
	}
	if c := comments[0]; !me.Wrote(c) || c.AuthorID != "4242" || c.AuthorBot {
		t.Errorf("the adapter's own comment %+v is not recognised as Self's", c)
	}
	// Someone else's comment, even by a login differing only in case from a stranger's
	// display, is not Self's.
	if me.Wrote(tracker.Comment{Author: "erin", AuthorLogin: "erin", AuthorID: "7"}) {
		t.Error("erin's comment counts as Sortie's")
	}
}

// TestSelf_AnAppTokenIsABot: a GitHub App installation token cannot read GET /user
// (403); Self says the account is an app's, whose comments are by a bot account.
func TestSelf_AnAppTokenIsABot(t *testing.T) {
	clock := newTestClock()
	f := fakegithub.New(t, fakegithub.WithClock(clock.Now))
	f.SetHook(func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path != "/user" {
			return false
		}
		w.WriteHeader(http.StatusForbidden)
		w.Write([]byte(`{"message": "Resource not accessible by integration"}`))
		return true
	})
	me, err := newTestTracker(t, f, clock).Self(context.Background())
	if err != nil || !me.App {
		t.Fatalf("Self with an app token = %+v, %v; want an app identity", me, err)
	}
	var c apiComment
	if err := json.Unmarshal([]byte(`{"id": 9, "user": {"login": "sortie[bot]", "id": 99, "type": "Bot"}, "body": "x", "author_association": "NONE"}`), &c); err != nil {
		t.Fatal(err)
	}
	if got := normalizeComment(&c); !got.AuthorBot || got.AuthorLogin != "sortie[bot]" {
		t.Errorf("a bot's comment = %+v, want AuthorBot", got)
	}
}

// TestFetchIssueByID_AnIssueOfAnotherRepositoryIsOutOfProject: an answer whose
// repository_url names another repository is refused as out of project, whatever path
// led there.
func TestFetchIssueByID_AnIssueOfAnotherRepositoryIsOutOfProject(t *testing.T) {
	clock := newTestClock()
	f := fakegithub.New(t, fakegithub.WithClock(clock.Now))
	f.SetHook(func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path != "/repos/octo/hello/issues/6" {
			return false
		}
		w.Write([]byte(`{"number": 6, "title": "elsewhere", "state": "open", "repository_url": "` + f.URL() + `/repos/evil/repo"}`))
		return true
	})
	_, err := newTestTracker(t, f, clock).FetchIssueByID(context.Background(), "6")
	if !errors.Is(err, tracker.ErrOutOfProject) || tracker.KindOf(err) != tracker.ErrNotFound {
		t.Fatalf("FetchIssueByID of evil/repo's issue: %v, want tracker_not_found wrapping ErrOutOfProject", err)
	}
}
