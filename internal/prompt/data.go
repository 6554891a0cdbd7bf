package prompt

import (
	"fmt"
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
