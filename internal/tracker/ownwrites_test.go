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
