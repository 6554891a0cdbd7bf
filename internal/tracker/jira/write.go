package jira

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"sortie/internal/tracker"
)

type wireTransition struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	To   named  `json:"to"`
}

// TransitionIssue moves an issue to the status named targetState. Jira moves issues by
// transition, not by status, so this asks which transitions the issue has now and takes
// the one whose target status matches (case-insensitively). None or more than one is a
// tracker_payload_error that names the statuses reachable from here.
func (t *Tracker) TransitionIssue(ctx context.Context, id, targetState string) error {
	const op = "transition"
	p, err := t.issuePath(op, id)
	if err != nil {
		return err
	}
	var resp struct {
		Transitions []wireTransition `json:"transitions"`
	}
	if err := t.c.do(ctx, op, http.MethodGet, p+"/transitions", nil, nil, &resp); err != nil {
		return err
	}
	tr, err := pickTransition(resp.Transitions, targetState)
	if err != nil {
		return &tracker.Error{Kind: tracker.ErrPayload, Op: op, Message: "issue " + id, Err: err}
	}
	body := map[string]any{"transition": map[string]string{"id": tr.ID}}
	return t.c.do(ctx, op, http.MethodPost, p+"/transitions", nil, body, nil)
}

func pickTransition(ts []wireTransition, target string) (wireTransition, error) {
	var match []wireTransition
	for _, tr := range ts {
		if strings.EqualFold(strings.TrimSpace(tr.To.Name), strings.TrimSpace(target)) {
			match = append(match, tr)
		}
	}
	switch {
	case len(match) == 1:
		return match[0], nil
	case len(match) > 1:
		return wireTransition{}, fmt.Errorf("%d transitions lead to %q: %s; make one of them unavailable in the Jira workflow or name the status uniquely", len(match), target, describe(match))
	case len(ts) == 0:
		return wireTransition{}, fmt.Errorf("no transition to %q: the issue has no transitions available to this user (check the Transition issues permission and the workflow)", target)
	}
	return wireTransition{}, fmt.Errorf("no transition to %q; available: %s; fix the state name in WORKFLOW.md or add the transition to the Jira workflow", target, describe(ts))
}

func describe(ts []wireTransition) string {
	parts := make([]string, len(ts))
	for i, tr := range ts {
		parts[i] = fmt.Sprintf("%q (transition %q, id %s)", tr.To.Name, tr.Name, tr.ID)
	}
	return strings.Join(parts, ", ")
}

// FetchIssueComments returns an issue's comments, oldest first, paging by startAt.
func (t *Tracker) FetchIssueComments(ctx context.Context, id string) ([]tracker.Comment, error) {
	const op = "fetch_comments"
	p, err := t.issuePath(op, id)
	if err != nil {
		return nil, err
	}
	out := []tracker.Comment{}
	for page := 0; page < MaxPages; page++ {
		q := url.Values{"startAt": {strconv.Itoa(len(out))}, "maxResults": {"100"}, "orderBy": {"created"}}
		var resp commentPage
		if err := t.c.do(ctx, op, http.MethodGet, p+"/comment", q, nil, &resp); err != nil {
			return nil, err
		}
		for i := range resp.Comments {
			c, err := normalizeComment(&resp.Comments[i])
			if err != nil {
				return nil, &tracker.Error{Kind: tracker.ErrPayload, Op: op, Err: err}
			}
			out = append(out, c)
		}
		if len(resp.Comments) == 0 || len(out) >= resp.Total {
			return out, nil
		}
	}
	return nil, tracker.Errorf(tracker.ErrAPI, op, "issue %s has more than %d pages of comments", id, MaxPages)
}

// CommentIssue adds a plain-text comment: wrapped in ADF on Cloud, as text on Data
// Center (where Jira renders it as wiki markup).
func (t *Tracker) CommentIssue(ctx context.Context, id, text string) error {
	const op = "comment"
	p, err := t.issuePath(op, id)
	if err != nil {
		return err
	}
	var body map[string]any
	if t.cloud {
		body = map[string]any{"body": textADF(text)}
	} else {
		body = map[string]any{"body": text}
	}
	return t.c.do(ctx, op, http.MethodPost, p+"/comment", nil, body, nil)
}

// maxLabelRunes is the longest label Jira accepts.
const maxLabelRunes = 255

// AddLabel puts label on an issue: PUT /issue/{ref} with
// {"update": {"labels": [{"add": label}]}}, which keeps the other labels. It reads the
// issue's labels first (one GET of that field), so an issue of another project is
// tracker_not_found, as FetchIssueByID says, and nothing is sent when the issue has
// the label already (compared case-insensitively, as Sortie reads labels). Jira labels
// cannot contain spaces: such a label is a tracker_payload_error naming the rule,
// before Jira is asked. The token's user needs the Edit issues permission.
func (t *Tracker) AddLabel(ctx context.Context, id, label string) error {
	const op = "add_label"
	label = strings.TrimSpace(label)
	switch {
	case label == "":
		return tracker.Errorf(tracker.ErrPayload, op, "the label to add to issue %s is empty", id)
	case strings.ContainsFunc(label, unicode.IsSpace):
		return tracker.Errorf(tracker.ErrPayload, op, "cannot add label %q to issue %s: Jira labels cannot contain spaces; use a hyphen or an underscore instead (such as %q)",
			label, id, strings.Join(strings.FieldsFunc(label, unicode.IsSpace), "-"))
	case utf8.RuneCountInString(label) > maxLabelRunes:
		return tracker.Errorf(tracker.ErrPayload, op, "cannot add a label of %d characters to issue %s: Jira labels are at most %d characters",
			utf8.RuneCountInString(label), id, maxLabelRunes)
	}
	p, err := t.issuePath(op, id)
	if err != nil {
		return err
	}
	var w wireIssue
	if err := t.c.do(ctx, op, http.MethodGet, p, url.Values{"fields": {"labels"}}, nil, &w); err != nil {
		return err
	}
	if prefix, _, _ := strings.Cut(w.Key, "-"); !strings.EqualFold(prefix, t.project) {
		return &tracker.Error{Kind: tracker.ErrNotFound, Op: op, Err: tracker.ErrOutOfProject,
			Message: fmt.Sprintf("issue %s is not in project %s", w.Key, t.project)}
	}
	for _, l := range w.Fields.Labels {
		if strings.EqualFold(l, label) {
			return nil
		}
	}
	body := map[string]any{"update": map[string]any{"labels": []map[string]string{{"add": label}}}}
	return t.c.do(ctx, op, http.MethodPut, p, nil, body, nil)
}
