package linear

import (
	"encoding/json"
	"os"
	"testing"
)

// FuzzNormalize feeds arbitrary JSON to the issue and comment decoders and the
// normaliser: they never panic, a payload without an id or identifier is an error, and
// whatever parses normalises into an issue with non-nil lists and a priority of 1..4 or
// none.
func FuzzNormalize(f *testing.F) {
	raw, err := os.ReadFile("testdata/issue.json")
	if err != nil {
		f.Fatal(err)
	}
	var env struct {
		Data struct {
			Issue json.RawMessage `json:"issue"`
		} `json:"data"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		f.Fatal(err)
	}
	f.Add([]byte(env.Data.Issue))
	f.Add([]byte(`{"id":"a","identifier":"E-1","priority":0,"labels":null,"inverseRelations":{"nodes":[{"type":"blocks","issue":null}]}}`))
	f.Add([]byte(`{"id":"a","identifier":"E-1","priority":1e308,"state":null,"assignee":{}}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := parseIssue(data)
		if err != nil {
			return
		}
		if a.ID == "" || a.Identifier == "" {
			t.Fatalf("parsed an issue without id or identifier: %s", data)
		}
		is := normalize(&a)
		if is.Labels == nil || is.BlockedBy == nil {
			t.Fatalf("nil lists from %s", data)
		}
		if is.Priority != nil && (*is.Priority < 1 || *is.Priority > 4) {
			t.Fatalf("priority %d out of range from %s", *is.Priority, data)
		}
		var c apiComment
		if json.Unmarshal(data, &c) == nil {
			normalizeComment(&c)
		}
	})
}
