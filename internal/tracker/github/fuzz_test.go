package github

import (
	"strings"
	"testing"

	"sortie/internal/tracker"
)

// FuzzNormalize feeds arbitrary bytes to the issue normaliser: it must never panic, and
// any issue that parses normalises to an issue with a numeric id, a configured state,
// lowercased labels and a non-nil blocked_by.
func FuzzNormalize(f *testing.F) {
	for _, name := range []string{"issue.json", "parent.json"} {
		f.Add(ownFile(f, name))
		// sortie 1.9's bodies too, when the shared data is beside the repository.
		if data, err := readReference(name); err == nil {
			f.Add(data)
		}
	}
	for _, s := range []string{
		`{"number":1,"title":"t","state":"open","labels":[{"name":"In Progress"}]}`,
		`{"number":2,"state":"closed","labels":["Done", {"name":null}],"body":null,"pull_request":null}`,
		`{"number":3,"labels":[{"name":"  TODO  "}],"assignee":{"login":"a"},"assignees":[{"login":"b"}],"type":{"name":"Bug"}}`,
		`{"number":4,"repository_url":"https://api.github.com/repos/x/y","pull_request":{}}`,
		`{"number":-1}`, `{"number":1e3}`, `null`, `[]`, `{"labels":{}}`, "",
	} {
		f.Add([]byte(s))
	}
	st := newStates(tracker.Config{ActiveStates: []string{"Todo", "In Progress"}, TerminalStates: []string{"Done"}, HandoffState: "Review"})
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := parseIssue(data)
		if err != nil {
			return
		}
		is := st.normalize(&a, "octo/hello")
		if n, ok := issueNumber(is.ID); !ok || n != a.Number {
			t.Fatalf("id %q for number %d", is.ID, a.Number)
		}
		if _, ok := st.isState(is.State); !ok {
			t.Fatalf("state %q is not a configured state", is.State)
		}
		if a.State == "closed" && tracker.StateIn(is.State, st.active) {
			t.Fatalf("closed issue in active state %q", is.State)
		}
		if is.BlockedBy == nil || is.Labels == nil || is.Comments != nil {
			t.Fatalf("blocked_by %v labels %v comments %v", is.BlockedBy, is.Labels, is.Comments)
		}
		for _, l := range is.Labels {
			if l != strings.ToLower(l) || l == "" {
				t.Fatalf("label %q not lowercased and trimmed", l)
			}
		}
	})
}
