package tracker

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

type nopTracker struct{ Tracker }

func TestNew_ChecksRequiredFieldsAndKnownKinds(t *testing.T) {
	Register("test-remote", Meta{RequiresAPIKey: true, RequiresProject: true}, func(Config) (Tracker, error) { return nopTracker{}, nil })
	cases := []struct {
		name string
		cfg  Config
		kind ErrorKind
		text string
	}{
		{"unknown kind", Config{Kind: "nope"}, ErrUnsupportedKind, "known: "},
		{"missing key", Config{Kind: "test-remote", Project: "p"}, ErrMissingAPIKey, "tracker.api_key"},
		{"missing project", Config{Kind: "test-remote", APIKey: "k"}, ErrMissingProject, "tracker.project"},
	}
	for _, c := range cases {
		_, err := New(c.cfg)
		if KindOf(err) != c.kind || !strings.Contains(err.Error(), c.text) {
			t.Errorf("%s: error = %v, want kind %s mentioning %q", c.name, err, c.kind, c.text)
		}
	}
	if _, err := New(Config{Kind: "test-remote", APIKey: "k", Project: "p"}); err != nil {
		t.Fatalf("complete config: %v", err)
	}
}

func TestErrorKind_Retryable(t *testing.T) {
	for _, k := range []ErrorKind{ErrUnsupportedKind, ErrMissingAPIKey, ErrMissingProject, ErrAuth, ErrNotFound, ErrPayload} {
		if k.Retryable() {
			t.Errorf("%s should not be retryable", k)
		}
	}
	for _, k := range []ErrorKind{ErrTransport, ErrAPI, ErrMissingEndCursor, ErrorKind("something_new")} {
		if !k.Retryable() {
			t.Errorf("%s should be retryable", k)
		}
	}
}

func TestError_MessageAndUnwrap(t *testing.T) {
	cause := context.DeadlineExceeded
	err := fmt.Errorf("poll: %w", &Error{Kind: ErrTransport, Op: "fetch_candidates", Message: "GET /issues", Err: cause})
	if got, want := err.Error(), "poll: tracker_transport_error: fetch_candidates: GET /issues: context deadline exceeded"; got != want {
		t.Fatalf("message = %q, want %q", got, want)
	}
	if KindOf(err) != ErrTransport {
		t.Fatalf("KindOf = %q", KindOf(err))
	}
}

func TestStateIn_IsCaseAndSpaceInsensitive(t *testing.T) {
	states := []string{"To Do", " In Progress "}
	for _, s := range []string{"to do", "IN PROGRESS", " in progress"} {
		if !StateIn(s, states) {
			t.Errorf("StateIn(%q) = false, want true", s)
		}
	}
	if StateIn("Done", states) {
		t.Error(`StateIn("Done") = true, want false`)
	}
}

func TestIssue_CloneSharesNothing(t *testing.T) {
	p := 2
	orig := Issue{ID: "1", Priority: &p, Labels: []string{"a"}, BlockedBy: []BlockerRef{{ID: "2"}},
		Parent: &ParentRef{ID: "0"}, Comments: []Comment{{ID: "c"}}}
	c := orig.Clone()
	*c.Priority, c.Labels[0], c.BlockedBy[0].ID, c.Parent.ID, c.Comments[0].ID = 9, "z", "z", "z", "z"
	if *orig.Priority != 2 || orig.Labels[0] != "a" || orig.BlockedBy[0].ID != "2" || orig.Parent.ID != "0" || orig.Comments[0].ID != "c" {
		t.Fatalf("changing the clone changed the original: %+v", orig)
	}
	if (Issue{}).Clone().Comments != nil {
		t.Fatal("Clone turned nil comments (not fetched) into non-nil")
	}
}

// asWrapper hides its tracker's optional interfaces, as the metrics' counting tracker
// does, but unwraps to it.
type asWrapper struct{ Tracker }

func (w asWrapper) Unwrap() Tracker { return w.Tracker }

type accountTracker struct{ Tracker }

func (accountTracker) Self(context.Context) (Identity, error) { return Identity{Login: "sortie"}, nil }

func TestAs_FindsAnInterfaceThroughWrappers(t *testing.T) {
	inner := accountTracker{}
	if _, ok := Tracker(asWrapper{inner}).(Account); ok {
		t.Fatal("the test wrapper should hide Account")
	}
	acc, ok := As[Account](asWrapper{asWrapper{inner}})
	if !ok {
		t.Fatal("As did not find the Account two wrappers down")
	}
	if id, _ := acc.Self(context.Background()); id.Login != "sortie" {
		t.Errorf("Self = %+v", id)
	}
	if _, ok := As[RateLimiter](asWrapper{inner}); ok {
		t.Error("As found a RateLimiter no tracker implements")
	}
	if _, ok := As[Account](nil); ok {
		t.Error("As found an Account in nil")
	}
}
