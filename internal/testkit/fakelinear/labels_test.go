package fakelinear_test

import (
	"fmt"
	"slices"
	"testing"

	"sortie/internal/testkit/fakelinear"
)

// TestLabels_LookupAndAddAsLinearDoes: issueLabels filters by name, group, and team
// (null for the workspace's); issueAddLabel takes a label of the issue's team or the
// workspace, not a group nor another team's, and changes nothing for one it has; the
// issue's labels then carry the label's id.
func TestLabels_LookupAndAddAsLinearDoes(t *testing.T) {
	s := fakelinear.New(t, fixed)
	eng := s.AddTeam("ENG", "Engineering")
	s.AddTeam("OPS", "Operations")
	is := s.AddIssue("ENG", "a", "Todo", nil)
	team := s.AddLabel("ENG", "needs-human", false)
	ws := s.AddLabel("", "Needs-Human", false)
	group := s.AddLabel("ENG", "Needs-Human", true)
	other := s.AddLabel("OPS", "needs-human", false)

	lookup := func(filter map[string]any) []string {
		t.Helper()
		_, r := post(t, s, fakelinear.Key, `query L($f: IssueLabelFilter!) { issueLabels(filter: $f) { nodes { id name isGroup team { id } } } }`, map[string]any{"f": filter})
		if len(r.Errors) > 0 {
			t.Fatalf("issueLabels(%v): %v", filter, r.Errors)
		}
		var ids []string
		for _, n := range r.Data["issueLabels"].(map[string]any)["nodes"].([]any) {
			ids = append(ids, n.(map[string]any)["id"].(string))
		}
		return ids
	}
	name := map[string]any{"name": map[string]any{"eqIgnoreCase": "NEEDS-HUMAN"}}
	if got := lookup(name); !slices.Equal(got, []string{team.ID, ws.ID, group.ID, other.ID}) {
		t.Errorf("by name: %v", got)
	}
	mine := map[string]any{"and": []any{name, map[string]any{"isGroup": map[string]any{"eq": false}}, map[string]any{"or": []any{
		map[string]any{"team": map[string]any{"id": map[string]any{"eq": eng.ID}}},
		map[string]any{"team": map[string]any{"null": true}},
	}}}}
	if got := lookup(mine); !slices.Equal(got, []string{team.ID, ws.ID}) {
		t.Errorf("the team's and the workspace's, no group: %v", got)
	}

	add := func(labelID string) string {
		t.Helper()
		_, r := post(t, s, fakelinear.Key, `mutation A($id: String!, $l: String!) { issueAddLabel(id: $id, labelId: $l) { success issue { labels { nodes { id name } } } } }`,
			map[string]any{"id": is.Identifier, "l": labelID})
		if len(r.Errors) > 0 {
			return r.code() + ": " + r.Errors[0].Message
		}
		return fmt.Sprint(r.Data["issueAddLabel"].(map[string]any)["issue"])
	}
	want := fmt.Sprint(map[string]any{"labels": map[string]any{"nodes": []any{map[string]any{"id": team.ID, "name": "needs-human"}}}})
	if got := add(team.ID); got != want {
		t.Errorf("adding the team's label: %s, want %s", got, want)
	}
	before, _ := s.Issue(is.ID)
	if got := add(team.ID); got != want {
		t.Errorf("adding it again: %s", got)
	}
	if after, _ := s.Issue(is.ID); !after.UpdatedAt.Equal(before.UpdatedAt) || len(after.Labels) != 1 {
		t.Errorf("adding a label the issue has changed it: %+v", after)
	}
	for _, c := range []struct{ id, want string }{
		{group.ID, "INVALID_INPUT: Label groups cannot be applied to issues."},
		{other.ID, "INVALID_INPUT: Label does not belong to the issue's team."},
		{"label-nope", "INVALID_INPUT: Entity not found: IssueLabel - Could not find referenced IssueLabel."},
	} {
		if got := add(c.id); got != c.want {
			t.Errorf("issueAddLabel(%s) = %s, want %s", c.id, got, c.want)
		}
	}
}
