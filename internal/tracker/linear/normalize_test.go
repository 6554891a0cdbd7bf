package linear

import (
	"encoding/json"
	"os"
	"testing"
)

func TestNormalize_RealPayload(t *testing.T) {
	raw, err := os.ReadFile("testdata/issue.json")
	if err != nil {
		t.Fatal(err)
	}
	var env struct {
		Data struct {
			Issue json.RawMessage `json:"issue"`
		} `json:"data"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		t.Fatal(err)
	}
	a, err := parseIssue(env.Data.Issue)
	if err != nil {
		t.Fatal(err)
	}
	is := normalize(&a)
	if is.Identifier != "ENG-42" || is.State != "Todo" || *is.Priority != 2 || is.Assignee != "Alice Doe" ||
		is.BranchName != "alice/eng-42-retry-webhook-deliveries" || is.Parent != nil {
		t.Fatalf("normalised: %+v", is)
	}
	if len(is.Labels) != 2 || is.Labels[0] != "backend" || is.Labels[1] != "reliability" {
		t.Fatalf("labels: %v", is.Labels)
	}
	if len(is.BlockedBy) != 1 || is.BlockedBy[0].Identifier != "ENG-40" || is.BlockedBy[0].State != "In Progress" {
		t.Fatalf("only the blocks relation blocks: %+v", is.BlockedBy)
	}
}

func TestNormalizeComments_RealPayloadSortedWithAuthors(t *testing.T) {
	raw, err := os.ReadFile("testdata/comments.json")
	if err != nil {
		t.Fatal(err)
	}
	c, err := field("data")(rawData(raw))
	if err != nil {
		t.Fatal(err)
	}
	issue, _ := field("issue")(rawData(c.raw))
	conn, err := field("comments")(rawData(issue.raw))
	if err != nil {
		t.Fatal(err)
	}
	list, err := decodeNodes[apiComment](conn.Nodes)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 {
		t.Fatalf("want 2 comments, got %d", len(list))
	}
	bob := normalizeComment(&list[0])
	if bob.AuthorID != "u-bob" || bob.AuthorLogin != "bob" || bob.AuthorEmail != "bob@acme.test" || bob.AuthorBot {
		t.Fatalf("person: %+v", bob)
	}
	if gh := normalizeComment(&list[1]); !gh.AuthorBot || gh.Author != "GitHub" {
		t.Fatalf("integration: %+v", gh)
	}
}

func TestParseIssue_RejectsIssuesWithoutIDs(t *testing.T) {
	for _, in := range []string{`{}`, `{"id":"x"}`, `{"identifier":"ENG-1"}`, `[]`, `{"id":1}`, `{"id":"x","identifier":"E-1","priority":"high"}`} {
		if _, err := parseIssue([]byte(in)); err == nil {
			t.Errorf("parseIssue(%s): want an error", in)
		}
	}
}
