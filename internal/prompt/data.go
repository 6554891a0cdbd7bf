package prompt

import (
	"fmt"
	"maps"
	"slices"

	"sortie/internal/tracker"
)

// Data is what a prompt is rendered from.
type Data struct {
	Issue tracker.Issue
	// Attempt is 0 on an issue's first dispatch and counts retries and continuation
	// runs after that.
	Attempt int
	Run     Run
	// Extra holds further top-level keys for this render, such as "ci_failure" or
	// "review_comments" when a reaction triggered the run. "issue", "attempt" and "run"
	// are reserved.
	Extra map[string]any
}

// Run describes the current turn of the run.
type Run struct {
	TurnNumber     int // 1-based
	MaxTurns       int
	IsContinuation bool // true on turns after the first of a session
}

// alwaysPresentKeys exist in every render, nil unless Extra sets them, so templates can
// test them with {{ if .ci_failure }} under missingkey=error.
var alwaysPresentKeys = []string{"ci_failure", "review_comments"}

var reservedKeys = []string{"issue", "attempt", "run"}

// templateData builds the map a template sees. Keys are snake_case.
func (d Data) templateData() (map[string]any, error) {
	m := map[string]any{
		"issue":   issueData(d.Issue),
		"attempt": d.Attempt,
		"run": map[string]any{
			"turn_number":     d.Run.TurnNumber,
			"max_turns":       d.Run.MaxTurns,
			"is_continuation": d.Run.IsContinuation,
		},
	}
	for _, k := range alwaysPresentKeys {
		m[k] = nil
	}
	for k, v := range d.Extra {
		if slices.Contains(reservedKeys, k) {
			return nil, fmt.Errorf("prompt: Data.Extra key %q is reserved", k)
		}
		m[k] = v
	}
	return m, nil
}

// issueData is the template view of an issue. Lists a template ranges over are never
// nil except comments, which is nil when the tracker did not fetch them.
func issueData(is tracker.Issue) map[string]any {
	var priority any
	if is.Priority != nil {
		priority = *is.Priority
	}
	var parent any
	if is.Parent != nil {
		parent = map[string]any{"id": is.Parent.ID, "identifier": is.Parent.Identifier}
	}
	var comments any
	if is.Comments != nil {
		list := make([]any, len(is.Comments))
		for i, c := range is.Comments {
			list[i] = map[string]any{"id": c.ID, "author": c.Author, "body": c.Body, "created_at": c.CreatedAt}
		}
		comments = list
	}
	blockedBy := make([]any, len(is.BlockedBy))
	for i, b := range is.BlockedBy {
		blockedBy[i] = map[string]any{"id": b.ID, "identifier": b.Identifier, "state": b.State}
	}
	labels := slices.Clone(is.Labels)
	if labels == nil {
		labels = []string{}
	}
	return map[string]any{
		"id":          is.ID,
		"identifier":  is.Identifier,
		"title":       is.Title,
		"description": is.Description,
		"priority":    priority,
		"state":       is.State,
		"branch_name": is.BranchName,
		"url":         is.URL,
		"labels":      labels,
		"assignee":    is.Assignee,
		"issue_type":  is.IssueType,
		"parent":      parent,
		"comments":    comments,
		"blocked_by":  blockedBy,
		"created_at":  is.CreatedAt,
		"updated_at":  is.UpdatedAt,
	}
}

// Symphony's names for the issue data (SPEC §4 and its Liquid templates), which Liquid
// templates, Symphony's dialect, see beside Sortie's own. An alias is the value of the
// Sortie key it names, so the data has one source: issueData.
var (
	// symphonyIssueAliases maps a Symphony issue field to Sortie's. The assignee is what
	// the tracker gives (a login, an e-mail or an id, depending on the tracker).
	symphonyIssueAliases = map[string]string{"assignee_id": "assignee"}
	// symphonyCommentAliases maps a Symphony comment field to Sortie's. A comment has
	// one author, as the tracker shows it, and no edit time: author_id is that author
	// too, and updated_at is created_at.
	symphonyCommentAliases = map[string]string{"author_name": "author", "author_id": "author", "updated_at": "created_at"}
)

// symphonyIssueConstants are Symphony issue fields with one value in every render:
// native_ref (provider ids) is null, and dispatchable is true because a prompt is only
// rendered for an issue that was dispatched.
var symphonyIssueConstants = map[string]any{"native_ref": nil, "dispatchable": true}

// withSymphonyAliases returns templateData's map with Symphony's names added to the
// issue and its comments. It copies what it changes; data is not modified.
func withSymphonyAliases(data map[string]any) map[string]any {
	issue, ok := data["issue"].(map[string]any)
	if !ok {
		return data
	}
	out := maps.Clone(data)
	is := maps.Clone(issue)
	out["issue"] = is
	addAliases(is, symphonyIssueAliases)
	maps.Copy(is, symphonyIssueConstants)
	if comments, ok := is["comments"].([]any); ok {
		list := make([]any, len(comments))
		for i, c := range comments {
			if cm, ok := c.(map[string]any); ok {
				cm = maps.Clone(cm)
				addAliases(cm, symphonyCommentAliases)
				c = cm
			}
			list[i] = c
		}
		is["comments"] = list
	}
	return out
}

// addAliases sets m[alias] = m[key] for each alias whose key m has.
func addAliases(m map[string]any, aliases map[string]string) {
	for alias, key := range aliases {
		if v, ok := m[key]; ok {
			m[alias] = v
		}
	}
}
