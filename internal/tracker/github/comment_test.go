package github

import (
	"encoding/json"
	"testing"
)

// TestNormalizeComment_KeepsTheAuthorsAssociation: the author's relation to the
// repository decides whether a "/sortie choose" comment answers a checkpoint.
func TestNormalizeComment_KeepsTheAuthorsAssociation(t *testing.T) {
	var c apiComment
	body := `{"id": 7, "user": {"login": "erin"}, "body": "/sortie choose approve", "created_at": "2026-11-25T08:00:00Z", "author_association": "MEMBER"}`
	if err := json.Unmarshal([]byte(body), &c); err != nil {
		t.Fatal(err)
	}
	got := normalizeComment(&c)
	if got.Author != "erin" || got.AuthorAssociation != "MEMBER" || got.ID != "7" {
		t.Errorf("comment = %+v, want erin, MEMBER, id 7", got)
	}
}
