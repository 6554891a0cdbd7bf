package jira

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// FuzzNormalize feeds arbitrary issue JSON to the normaliser (ADF flattening included):
// it must never panic, and an issue it accepts must have its id, key and status, a
// non-nil blocker list, lowercase labels and an address under the site.
func FuzzNormalize(f *testing.F) {
	for _, name := range []string{"issue_detail.json", "adf_description.json"} {
		f.Add(fixture(f, name))
		// sortie 1.9's bodies too, when the shared data is beside the repository.
		if data, err := readReference(name); err == nil {
			f.Add(data)
		}
	}
	for _, s := range []string{
		`{"id":"1","key":"P-1","fields":{"status":{"name":"To Do"},"labels":["A"],"priority":{"name":"High"}}}`,
		`{"id":"1","key":"P-1","fields":{"status":{"name":"x"},"description":{"type":"doc","content":[{"type":"orderedList","attrs":{"order":-5},"content":[{"type":"listItem"}]}]}}}`,
		`{"id":"1","key":"P-1","fields":{"status":{"name":"x"},"description":{"type":"heading","attrs":{"level":1e300}}}}`,
		`{"id":"1","key":"P-1","fields":{"status":{"name":"x"},"issuelinks":[{"type":{"inward":"is blocked by"},"inwardIssue":{}}]}}`,
		`{"id":"","key":"P-1"}`, `null`, `[]`, `{"fields":null}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		is, err := decodeIssue(data, "https://x.example")
		if err == nil {
			if is.ID == "" || is.Identifier == "" || is.State == "" || is.BlockedBy == nil {
				t.Fatalf("accepted an incomplete issue: %+v", is)
			}
			for _, l := range is.Labels {
				if l != strings.ToLower(l) {
					t.Fatalf("label %q not lowercased", l)
				}
			}
			if !strings.HasPrefix(is.URL, "https://x.example/browse/") {
				t.Fatalf("url %q", is.URL)
			}
		}
		// Any JSON value as a rich-text field: no panic; a document flattens to trimmed text.
		if s, err := richText(json.RawMessage(data)); err == nil && len(data) > 0 && data[0] == '{' && s != strings.TrimSpace(s) {
			t.Fatalf("flattened text not trimmed: %q", s)
		}
	})
}

func readReference(name string) ([]byte, error) {
	return readFile(referenceDir + "/" + name)
}

var readFile = os.ReadFile
