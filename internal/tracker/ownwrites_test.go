package tracker

import "testing"

// TestAnsweredSince: a comment by someone else after Sortie's newest comment means the
// change a read-back saw is not only Sortie's.
func TestAnsweredSince(t *testing.T) {
	ours := []string{"Sortie session completed."}
	c := func(author, body string) Comment { return Comment{Author: author, Body: body} }
	cases := []struct {
		name     string
		comments []Comment
		want     bool
	}{
		{"ours last", []Comment{c("alice", "hi"), c("bot", "Sortie session completed.\n")}, false},
		{"a human after ours", []Comment{c("bot", "Sortie session completed."), c("alice", "use staging")}, true},
		{"ours again after a human", []Comment{c("bot", "Sortie session completed."), c("alice", "x"), c("bot", "Sortie session completed.")}, false},
		{"same account after ours", []Comment{c("bot", "Sortie session completed."), c("bot", "/sortie choose a")}, false},
		{"ours not found (text rewritten)", []Comment{c("bot", "*Sortie* session completed"), c("alice", "x")}, false},
	}
	for _, tc := range cases {
		if got := answeredSince(tc.comments, ours); got != tc.want {
			t.Errorf("%s: answeredSince = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestOwnWrites_ALabelIsAWriteLikeATransition: a label Sortie adds (escalating to a
// human) is recorded as any change that is not a comment is, with Begin and End and
// no Posted: the poll that sees the issue as the read-back found it is Sortie's own
// write, a later change is not.
func TestOwnWrites_ALabelIsAWriteLikeATransition(t *testing.T) {
	var w OwnWrites
	w.Begin("1")
	if got := w.Explains("1", "Human Review", "t2"); got != OwnPending {
		t.Fatalf("during the label write: %v, want OwnPending", got)
	}
	w.End("1", &Issue{ID: "1", State: "Human Review", UpdatedAt: "t2", Labels: []string{"needs-human"}, Comments: []Comment{}})
	if got := w.Explains("1", "Human Review", "t2"); got != OwnWrite {
		t.Errorf("the issue as the label left it: %v, want OwnWrite", got)
	}
	if got := w.Explains("1", "Human Review", "t3"); got != NotOwn {
		t.Errorf("a later change: %v, want NotOwn", got)
	}
}
