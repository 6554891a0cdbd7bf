package jira

import (
	"context"
	"errors"
	"testing"

	"sortie/internal/tracker"
)

// TestSelf_IdentifiesTheAccountBehindItsComments: Self is the account GET /myself names
// (Cloud: accountId; Data Center: key and name), asked once, and the comments the
// adapter posts are recognised as its own by that account, not by display name, which
// anyone can choose.
func TestSelf_IdentifiesTheAccountBehindItsComments(t *testing.T) {
	for _, fl := range flavours() {
		t.Run(fl.name, func(t *testing.T) {
			f := newFake(t, fl.cloud)
			f.AddIssue("1", "PROJ-1", "To Do")
			tr := newFakeTracker(t, f, fl.cloud, nil)
			ctx := context.Background()
			me, err := tr.Self(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if me.ID == "" || me.Name != "Sortie Bot" || me.Email != "sortie@example.com" {
				t.Fatalf("Self = %+v", me)
			}
			n := f.RequestCount()
			if _, err := tr.Self(ctx); err != nil || f.RequestCount() != n {
				t.Errorf("the second Self asked Jira again (%v)", err)
			}
			if err := tr.CommentIssue(ctx, "1", "/sortie choose approve"); err != nil {
				t.Fatal(err)
			}
			got, err := tr.FetchIssueComments(ctx, "1")
			if err != nil || len(got) != 1 {
				t.Fatalf("comments = %+v, %v", got, err)
			}
			if !me.Wrote(got[0]) {
				t.Errorf("the adapter's own comment %+v is not recognised as Self's (%+v)", got[0], me)
			}
			impostor := tracker.Comment{Author: "Sortie Bot", AuthorID: "someone-else"}
			if me.Wrote(impostor) {
				t.Error("a comment by another account with Sortie's display name counts as Sortie's")
			}
		})
	}
}

// TestIssuePath_AnotherProjectsKeyIsRefusedBeforeJiraIsAsked: the token may see other
// projects; a key of one is out of project without a request.
func TestIssuePath_AnotherProjectsKeyIsRefusedBeforeJiraIsAsked(t *testing.T) {
	f := newFake(t, true)
	f.AddIssue("9", "SECRET-9", "To Do")
	tr := newFakeTracker(t, f, true, nil)
	for name, call := range map[string]func() error{
		"fetch":      func() error { _, err := tr.FetchIssueByID(context.Background(), "SECRET-9"); return err },
		"comments":   func() error { _, err := tr.FetchIssueComments(context.Background(), "SECRET-9"); return err },
		"transition": func() error { return tr.TransitionIssue(context.Background(), "SECRET-9", "Done") },
	} {
		if err := call(); !errors.Is(err, tracker.ErrOutOfProject) {
			t.Errorf("%s of SECRET-9: %v, want ErrOutOfProject", name, err)
		}
	}
	if n := f.RequestCount(); n != 0 {
		t.Errorf("Jira was asked %d times about another project's issue", n)
	}
}
