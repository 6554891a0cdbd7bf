package jira

import (
	"encoding/json"
	"testing"
)

// A whole description as Jira Cloud returns it: headings, lists, marks, code, and
// nodes the flattener does not know, whose text is kept.
func TestFlattenADF_Documents(t *testing.T) {
	cases := []struct {
		name string
		doc  func(testing.TB, string) []byte
		want string
	}{
		{"own", fixture, "### Steps to reproduce\n\n1. Add a gift card to the cart\n2. Pay with it\n\n" +
			"Expected: the order is paid. Actual:\n\n```text\nERROR balance_mismatch\n  at settle()\n```\n\n" +
			"- Seen on web\n- Not on mobile\n\nKept in the expand node\n\nText inside a node type no one knows yet"},
		{"reference", referenceFixture, "## Overview\n\nThis is the main description of the task.\n\n- Item one\n- Item two\n\n```bash\necho hello\n```\n\nInside unknown"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := richText(c.doc(t, "adf_description.json"))
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("got\n%s\nwant\n%s", got, c.want)
			}
		})
	}
}

func TestFlattenADF_NodeVariety(t *testing.T) {
	cases := []struct{ name, doc, want string }{
		{"mention and emoji", `{"type":"doc","version":1,"content":[{"type":"paragraph","content":[
			{"type":"text","text":"Ping "},{"type":"mention","attrs":{"id":"abc","text":"@Alice"}},
			{"type":"text","text":" and "},{"type":"mention","attrs":{"id":"def","text":"Bob"}},
			{"type":"text","text":" "},{"type":"emoji","attrs":{"shortName":":tada:","text":"🎉"}}]}]}`,
			"Ping @Alice and @Bob 🎉"},
		{"links and code", `{"type":"doc","version":1,"content":[{"type":"paragraph","content":[
			{"type":"text","text":"See "},{"type":"text","text":"the docs","marks":[{"type":"link","attrs":{"href":"https://example.com/d"}}]},
			{"type":"text","text":", run "},{"type":"text","text":"make test","marks":[{"type":"code"}]},
			{"type":"text","text":" and "},{"type":"inlineCard","attrs":{"url":"https://x.atlassian.net/browse/P-1"}}]}]}`,
			"See the docs (https://example.com/d), run `make test` and https://x.atlassian.net/browse/P-1"},
		{"ordered nested list and hard break", `{"type":"doc","version":1,"content":[{"type":"orderedList","attrs":{"order":3},"content":[
			{"type":"listItem","content":[{"type":"paragraph","content":[{"type":"text","text":"three"},{"type":"hardBreak"},{"type":"text","text":"more"}]},
				{"type":"bulletList","content":[{"type":"listItem","content":[{"type":"paragraph","content":[{"type":"text","text":"nested"}]}]}]}]},
			{"type":"listItem","content":[{"type":"paragraph","content":[{"type":"text","text":"four"}]}]}]}]}`,
			"3. three\n   more\n   - nested\n4. four"},
		{"quote rule table tasks", `{"type":"doc","version":1,"content":[
			{"type":"blockquote","content":[{"type":"paragraph","content":[{"type":"text","text":"quoted"}]}]},
			{"type":"rule"},
			{"type":"table","content":[{"type":"tableRow","content":[{"type":"tableHeader","content":[{"type":"paragraph","content":[{"type":"text","text":"a"}]}]},{"type":"tableCell","content":[{"type":"paragraph","content":[{"type":"text","text":"b"}]}]}]}]},
			{"type":"taskList","content":[{"type":"taskItem","attrs":{"state":"DONE"},"content":[{"type":"text","text":"done"}]},{"type":"taskItem","attrs":{"state":"TODO"},"content":[{"type":"text","text":"todo"}]}]},
			{"type":"panel","content":[{"type":"paragraph","content":[{"type":"status","attrs":{"text":"BLOCKED"}},{"type":"text","text":" since "},{"type":"date","attrs":{"timestamp":"1735689600000"}}]}]},
			{"type":"mediaSingle","content":[{"type":"media","attrs":{"id":"x"}}]}]}`,
			"> quoted\n\n---\n\n| a | b |\n\n- [x] done\n- [ ] todo\n\n[BLOCKED] since 2025-01-01"},
		{"empty doc", `{"type":"doc","version":1,"content":[]}`, ""},
		{"string body (Data Center)", `"h1. Title\n*bold*"`, "h1. Title\n*bold*"},
		{"null", `null`, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := richText(json.RawMessage(c.doc))
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("got\n%q\nwant\n%q", got, c.want)
			}
		})
	}
}

func TestRichText_RejectsOtherJSON(t *testing.T) {
	for _, doc := range []string{`42`, `[1]`, `true`, `{"type":`} {
		if _, err := richText(json.RawMessage(doc)); err == nil {
			t.Errorf("richText(%s) accepted", doc)
		}
	}
}

func TestTextADF_RoundTrips(t *testing.T) {
	for _, s := range []string{"one line", "a\nb", "p1\n\np2\nline", "ünïcode ✓ \"q\""} {
		data, _ := json.Marshal(textADF(s))
		got, err := richText(data)
		if err != nil || got != s {
			t.Errorf("round trip of %q: %q, %v (ADF %s)", s, got, err, data)
		}
	}
}
