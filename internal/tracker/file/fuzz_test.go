package file

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"sortie/internal/tracker"
)

// FuzzParse feeds arbitrary bytes to the parser: it must never panic, and whenever a
// file parses, a transition and a comment on one of its issues must leave a file that
// parses to the same issues, changed only where they say, with every byte outside the
// edited issue untouched.
func FuzzParse(f *testing.F) {
	for _, name := range []string{"issues.json", "normalization.json", "empty.json", "malformed.json"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	// sortie 1.9's files too, when the shared data is beside the repository.
	for _, rel := range []string{
		"internal/tracker/file/testdata/basic.json",
		"internal/tracker/file/testdata/normalization.json",
		"examples/issues.json",
	} {
		if data, err := readReference(rel); err == nil {
			f.Add(data)
		}
	}
	for _, s := range []string{
		twoIssues,
		oneIssue(`"comments": null, "State": "x", "state": "y"`),
		`[{"id":"a","identifier":"A","title":"t","state":"s","comments":[ ]}]`,
		"\xef\xbb\xbf[\r\n {\"id\":\"a\",\r\n  \"identifier\":\"A\",\"title\":\"t\",\"state\":\"s\"}]",
		`[{"id":"a","identifier":"A","title":"t","state":"s","blocked_by":[{"id":"a"}],"priority":-0}]`,
		"[", "", "null", `[null]`, `{"id":1}`,
	} {
		f.Add([]byte(s))
	}

	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := parse(data)
		if err != nil || len(doc.issues) == 0 {
			return
		}
		i := len(data) % len(doc.issues)
		sp := doc.spans[i]
		tr := &Tracker{path: "issues.json", newCommentID: randomCommentID}

		out, patched := editOne(t, tr, data, doc, i, func(obj []byte, _ *tracker.Issue, _ string) ([]byte, error) {
			return setState(obj, `Fuzzed <&> "state"`, "2026-01-02T03:04:05Z")
		})
		after := roundTrip(t, data, out, doc, patched, i)
		if got := after.issues[i]; got.State != `Fuzzed <&> "state"` || got.UpdatedAt != "2026-01-02T03:04:05Z" {
			t.Fatalf("after transition: state %q updated_at %q", got.State, got.UpdatedAt)
		}
		want := *doc.issues[i]
		want.State, want.UpdatedAt = after.issues[i].State, after.issues[i].UpdatedAt
		sameIssue(t, *after.issues[i], want)

		c := tracker.Comment{ID: "sortie-1", Author: "sortie", Body: "a\nb </x> \u2028", CreatedAt: "2026-01-02T03:04:05Z"}
		out, patched = editOne(t, tr, data, doc, i, func(obj []byte, _ *tracker.Issue, indent string) ([]byte, error) {
			return appendComment(obj, indent, c)
		})
		after = roundTrip(t, data, out, doc, patched, i)
		want = *doc.issues[i]
		want.Comments = append(append([]tracker.Comment{}, doc.issues[i].Comments...), c)
		sameIssue(t, *after.issues[i], want)
		if !bytes.Equal(out[:sp.start], data[:sp.start]) {
			t.Fatal("bytes before the edited issue changed")
		}

		// Both in one write, and a transition of the first issue too, as a group
		// commit makes them: the patched document is the file's parse.
		reqs := []*request{
			{ctx: context.Background(), op: "transition", id: doc.issues[i].ID, done: make(chan struct{}), edit: func(obj []byte, _ *tracker.Issue, _ string) ([]byte, error) {
				return setState(obj, "Batched", "2026-01-02T03:04:05Z")
			}},
			{ctx: context.Background(), op: "comment", id: doc.issues[i].ID, done: make(chan struct{}), edit: func(obj []byte, _ *tracker.Issue, indent string) ([]byte, error) {
				return appendComment(obj, indent, c)
			}},
			{ctx: context.Background(), op: "transition", id: doc.issues[0].ID, done: make(chan struct{}), edit: func(obj []byte, _ *tracker.Issue, _ string) ([]byte, error) {
				return setState(obj, "First", "2026-01-02T03:04:05Z")
			}},
		}
		out, patched, applied := tr.apply(data, doc, reqs)
		if len(applied) != len(reqs) {
			for _, r := range reqs {
				select {
				case <-r.done:
					t.Fatalf("a batched %s failed: %v", r.op, r.err)
				default:
				}
			}
		}
		full, err := parse(out)
		if err != nil {
			t.Fatalf("the batched edit does not parse: %v\nbefore: %q\nafter:  %q", err, data, out)
		}
		samePatch(t, patched, full)
		if got := full.issues[0].State; got != "First" {
			t.Fatalf("first issue's state %q after the batch", got)
		}
		if i != 0 && (full.issues[i].State != "Batched" || len(full.issues[i].Comments) != len(doc.issues[i].Comments)+1) {
			t.Fatalf("issue %d after the batch: state %q, %d comments", i, full.issues[i].State, len(full.issues[i].Comments))
		}
	})
}

// editOne runs one edit of issue i through the tracker's write path (apply) and
// returns the new content and its patched document.
func editOne(t *testing.T, tr *Tracker, data []byte, doc *document, i int, edit editFunc) ([]byte, *document) {
	t.Helper()
	r := &request{ctx: context.Background(), op: "edit", id: doc.issues[i].ID, edit: edit, done: make(chan struct{})}
	out, patched, applied := tr.apply(data, doc, []*request{r})
	if len(applied) != 1 {
		<-r.done
		t.Fatalf("an edit on a file that parsed: %v", r.err)
	}
	return out, patched
}

// samePatch checks that a document patched after an edit is the one a full parse of
// the new content gives.
func samePatch(t *testing.T, patched, full *document) {
	t.Helper()
	if !reflect.DeepEqual(patched.issues, full.issues) || !reflect.DeepEqual(patched.spans, full.spans) ||
		!reflect.DeepEqual(patched.blockers, full.blockers) {
		t.Fatalf("the patched document differs from the file's parse:\npatched %+v\nfull    %+v", patched.issues, full.issues)
	}
}

// roundTrip parses out and checks it has the same issues as before, that issues other
// than i are unchanged, and that only the bytes of issue i differ.
func roundTrip(t *testing.T, data, out []byte, before, patched *document, i int) *document {
	t.Helper()
	after, err := parse(out)
	if err != nil {
		t.Fatalf("edited file does not parse: %v\nbefore: %q\nafter:  %q", err, data, out)
	}
	if len(after.issues) != len(before.issues) {
		t.Fatalf("edited content has %d issues, want %d", len(after.issues), len(before.issues))
	}
	samePatch(t, patched, after)
	sp := before.spans[i]
	if !bytes.Equal(out[:sp.start], data[:sp.start]) || !bytes.Equal(out[len(out)-(len(data)-sp.end):], data[sp.end:]) {
		t.Fatalf("bytes outside the edited issue changed:\nbefore: %q\nafter:  %q", data, out)
	}
	for j := range after.issues {
		if j != i {
			// A blocker's state may follow the edited issue's; everything else is fixed.
			a, b := *after.issues[j], *before.issues[j]
			a.BlockedBy, b.BlockedBy = nil, nil
			sameIssue(t, a, b)
		}
	}
	return after
}

func sameIssue(t *testing.T, got, want tracker.Issue) {
	t.Helper()
	// Blockers referring to the edited issue itself may have followed its state.
	got.BlockedBy, want.BlockedBy = nil, nil
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("issue changed:\ngot  %+v\nwant %+v", got, want)
	}
}
