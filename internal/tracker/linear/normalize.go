package linear

import (
	"encoding/json"
	"errors"
	"math"
	"sort"
	"strings"

	"sortie/internal/tracker"
)

// apiIssue is the part of a Linear Issue the adapter asks for (issueFields).
type apiIssue struct {
	ID          string       `json:"id"`
	Identifier  string       `json:"identifier"`
	Title       string       `json:"title"`
	Description *string      `json:"description"`
	Priority    *float64     `json:"priority"` // Float in Linear's schema: 0 none, 1 urgent … 4 low
	URL         string       `json:"url"`
	BranchName  string       `json:"branchName"`
	CreatedAt   string       `json:"createdAt"`
	UpdatedAt   string       `json:"updatedAt"`
	State       *apiState    `json:"state"`
	Labels      *apiLabels   `json:"labels"`
	Assignee    *apiUser     `json:"assignee"`
	Team        *apiTeam     `json:"team"`
	Project     *apiProject  `json:"project"`
	Parent      *apiRef      `json:"parent"`
	Inverse     *apiRelation `json:"inverseRelations"`
}

type apiState struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Type string `json:"type"` // triage, backlog, unstarted, started, completed, canceled
}

type apiLabels struct {
	Nodes []struct {
		Name string `json:"name"`
	} `json:"nodes"`
}

type apiUser struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	DisplayName string `json:"displayName"`
	Email       string `json:"email"`
}

type apiTeam struct {
	ID   string `json:"id"`
	Key  string `json:"key"`
	Name string `json:"name"` // asked for by queryIssueLabels only
}

type apiProject struct {
	ID     string `json:"id"`
	SlugID string `json:"slugId"`
}

type apiRef struct {
	ID         string    `json:"id"`
	Identifier string    `json:"identifier"`
	State      *apiState `json:"state"`
}

// apiRelation is inverseRelations: the relations other issues hold to this one. A
// relation of type "blocks" there means its issue blocks this one.
type apiRelation struct {
	Nodes []struct {
		Type  string  `json:"type"`
		Issue *apiRef `json:"issue"`
	} `json:"nodes"`
}

type apiComment struct {
	ID        string   `json:"id"`
	Body      string   `json:"body"`
	CreatedAt string   `json:"createdAt"`
	User      *apiUser `json:"user"`
	BotActor  *struct {
		Name string `json:"name"`
	} `json:"botActor"`
}

type pageInfo struct {
	HasNextPage bool    `json:"hasNextPage"`
	EndCursor   *string `json:"endCursor"`
}

var (
	errNoID         = errors.New("issue has no id")
	errNoIdentifier = errors.New("issue has no identifier")
)

// parseIssue decodes one Issue object. An issue without an id or identifier is not one
// the adapter can address, and is an error.
func parseIssue(data []byte) (apiIssue, error) {
	var a apiIssue
	if err := json.Unmarshal(data, &a); err != nil {
		return a, err
	}
	return a, a.check()
}

func (a *apiIssue) check() error {
	switch {
	case strings.TrimSpace(a.ID) == "":
		return errNoID
	case strings.TrimSpace(a.Identifier) == "":
		return errNoIdentifier
	}
	return nil
}

// normalize turns an API issue into a tracker.Issue with nil comments. The id is
// Linear's UUID, the identifier its key (ENG-42).
func normalize(a *apiIssue) tracker.Issue {
	is := tracker.Issue{
		ID:         a.ID,
		Identifier: a.Identifier,
		Title:      a.Title,
		Priority:   priority(a.Priority),
		BranchName: a.BranchName,
		URL:        a.URL,
		Labels:     []string{},
		BlockedBy:  []tracker.BlockerRef{},
		CreatedAt:  a.CreatedAt,
		UpdatedAt:  a.UpdatedAt,
	}
	if a.Description != nil {
		is.Description = *a.Description
	}
	if a.State != nil {
		is.State = a.State.Name
	}
	if a.Labels != nil {
		for _, l := range a.Labels.Nodes {
			if n := strings.ToLower(strings.TrimSpace(l.Name)); n != "" {
				is.Labels = append(is.Labels, n)
			}
		}
	}
	if u := a.Assignee; u != nil {
		is.Assignee = firstOf(u.Name, u.DisplayName, u.Email)
	}
	if a.Parent != nil && a.Parent.ID != "" {
		is.Parent = &tracker.ParentRef{ID: a.Parent.ID, Identifier: a.Parent.Identifier}
	}
	if a.Inverse != nil {
		for _, r := range a.Inverse.Nodes {
			if !strings.EqualFold(r.Type, "blocks") || r.Issue == nil || r.Issue.ID == "" {
				continue
			}
			b := tracker.BlockerRef{ID: r.Issue.ID, Identifier: r.Issue.Identifier}
			if r.Issue.State != nil {
				b.State = r.Issue.State.Name
			}
			is.BlockedBy = append(is.BlockedBy, b)
		}
	}
	return is
}

// priority keeps Linear's 1 (urgent) to 4 (low); 0 is "no priority" and anything else
// (not a whole number in range) is none too.
func priority(p *float64) *int {
	if p == nil || math.IsNaN(*p) || *p != math.Trunc(*p) || *p < 1 || *p > 4 {
		return nil
	}
	n := int(*p)
	return &n
}

func normalizeComment(c *apiComment) tracker.Comment {
	out := tracker.Comment{ID: c.ID, Body: c.Body, CreatedAt: c.CreatedAt}
	switch {
	case c.User != nil:
		out.Author = firstOf(c.User.Name, c.User.DisplayName, c.User.Email)
		out.AuthorID = c.User.ID
		// displayName is the user's handle, unique within the workspace: the login.
		out.AuthorLogin = c.User.DisplayName
		out.AuthorEmail = c.User.Email
	case c.BotActor != nil:
		// An integration's or an application's comment: no user, a bot actor.
		out.Author, out.AuthorBot = c.BotActor.Name, true
	default:
		// Neither a user nor a bot (an external user, e.g. through Slack or an
		// e-mail intake): not a member of the workspace, never an answerer.
		out.AuthorBot = true
	}
	return out
}

func sortComments(cs []tracker.Comment) {
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].CreatedAt < cs[j].CreatedAt })
}

func firstOf(ss ...string) string {
	for _, s := range ss {
		if s = strings.TrimSpace(s); s != "" {
			return s
		}
	}
	return ""
}
