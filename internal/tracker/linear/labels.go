package linear

import (
	"context"
	"fmt"
	"strings"

	"sortie/internal/tracker"
)

// apiLabel is an IssueLabel as queryIssueLabels and queryLabelByName ask for it.
type apiLabel struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Team *struct {
		ID string `json:"id"`
	} `json:"team"`
}

// AddLabel puts the label named label on an issue. Linear adds labels by id, so it
// asks for the issue (its scope, team and labels: nothing is sent when the issue has
// the label already, compared case-insensitively), then for the label of that name
// (case-insensitively) in the issue's team or, failing that, the workspace, and adds it
// with issueAddLabel. It never creates a label: one that does not exist is a
// tracker_payload_error saying to create it in the team. It costs three requests, two
// when the issue has the label.
func (t *Tracker) AddLabel(ctx context.Context, id, label string) error {
	const op = "add_label"
	label = strings.TrimSpace(label)
	if label == "" {
		return tracker.Errorf(tracker.ErrPayload, op, "the label to add to %s is empty", id)
	}
	a, err := t.issueLabels(ctx, op, id)
	if err != nil {
		return err
	}
	for _, l := range a.labels {
		if strings.EqualFold(strings.TrimSpace(l.Name), label) {
			return nil
		}
	}
	l, err := t.labelByName(ctx, op, a, label)
	if err != nil {
		return err
	}
	var r struct {
		IssueAddLabel *struct {
			Success bool `json:"success"`
		} `json:"issueAddLabel"`
	}
	if err := t.query(ctx, op, mutationAddLabel, map[string]any{"id": a.ID, "label": l.ID}, &r); err != nil {
		return err
	}
	if r.IssueAddLabel == nil || !r.IssueAddLabel.Success {
		return tracker.Errorf(tracker.ErrPayload, op, "Linear did not add label %q to %s (success false)", l.Name, a.Identifier)
	}
	return nil
}

// labelledIssue is an issue with its team and labels, as queryIssueLabels answers.
type labelledIssue struct {
	apiIssue
	labels []apiLabel
}

// issueLabels asks for an issue's team and labels and refuses one outside the scope.
func (t *Tracker) issueLabels(ctx context.Context, op, id string) (labelledIssue, error) {
	id = strings.TrimSpace(id)
	if id == "" {
		return labelledIssue{}, tracker.Errorf(tracker.ErrNotFound, op, "empty issue id")
	}
	var r struct {
		Issue *struct {
			apiIssue
			Labels *struct {
				Nodes []apiLabel `json:"nodes"`
			} `json:"labels"`
		} `json:"issue"`
	}
	if err := t.query(ctx, op, queryIssueLabels, map[string]any{"id": id}, &r); err != nil {
		return labelledIssue{}, err
	}
	if r.Issue == nil {
		return labelledIssue{}, tracker.Errorf(tracker.ErrNotFound, op, "Linear has no issue %s (or the key's user cannot see it)", id)
	}
	a := labelledIssue{apiIssue: r.Issue.apiIssue}
	if r.Issue.Labels != nil {
		a.labels = r.Issue.Labels.Nodes
	}
	if err := a.check(); err != nil || a.Team == nil || a.Team.ID == "" {
		return labelledIssue{}, t.payloadErr(op, "issue", fmt.Errorf("issue %s without an id, identifier or team", id))
	}
	if !t.inScope(&a.apiIssue) {
		return labelledIssue{}, &tracker.Error{Kind: tracker.ErrNotFound, Op: op, Err: tracker.ErrOutOfProject,
			Message: fmt.Sprintf("%s is not in %s", a.Identifier, t.scopeName())}
	}
	return a, nil
}

// labelByName finds the label named name (case-insensitively) that issue a may carry:
// its team's, else the workspace's; of several, one spelt exactly as name first.
func (t *Tracker) labelByName(ctx context.Context, op string, a labelledIssue, name string) (apiLabel, error) {
	filter := map[string]any{"and": []any{
		map[string]any{"name": map[string]any{"eqIgnoreCase": name}},
		map[string]any{"isGroup": map[string]any{"eq": false}},
		map[string]any{"or": []any{
			map[string]any{"team": map[string]any{"id": map[string]any{"eq": a.Team.ID}}},
			map[string]any{"team": map[string]any{"null": true}},
		}},
	}}
	var r struct {
		IssueLabels *struct {
			Nodes []apiLabel `json:"nodes"`
		} `json:"issueLabels"`
	}
	if err := t.query(ctx, op, queryLabelByName, map[string]any{"filter": filter}, &r); err != nil {
		return apiLabel{}, err
	}
	if r.IssueLabels == nil {
		return apiLabel{}, tracker.Errorf(tracker.ErrPayload, op, "Linear's issueLabels answer is empty")
	}
	best, rank := apiLabel{}, -1
	for _, l := range r.IssueLabels.Nodes {
		if l.ID == "" || !strings.EqualFold(strings.TrimSpace(l.Name), name) {
			continue
		}
		score := 0
		if l.Team != nil && l.Team.ID == a.Team.ID {
			score += 2
		} else if l.Team != nil {
			continue // another team's: not for this issue
		}
		if l.Name == name {
			score++
		}
		if score > rank {
			best, rank = l, score
		}
	}
	if rank < 0 {
		team := a.Team.Key
		if a.Team.Name != "" {
			team = fmt.Sprintf("%s (%s)", a.Team.Name, a.Team.Key)
		}
		return apiLabel{}, tracker.Errorf(tracker.ErrPayload, op,
			"Linear has no label %q for %s: create label %q in team %s (Settings → Teams → %s → Labels) or in the workspace; Sortie does not create labels",
			name, a.Identifier, name, team, a.Team.Key)
	}
	return best, nil
}
