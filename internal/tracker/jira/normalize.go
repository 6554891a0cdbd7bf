package jira

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"sortie/internal/tracker"
)

// issueFields are the fields Sortie asks Jira for; nothing else is transferred.
const issueFields = "summary,status,priority,labels,assignee,issuetype,parent,issuelinks,description,created,updated"

// wireIssue is an issue as the search and issue endpoints return it (v2 and v3 share the
// shape; only description and comment bodies differ: a string on v2, ADF on v3).
type wireIssue struct {
	ID     string `json:"id"`
	Key    string `json:"key"`
	Fields struct {
		Summary  string `json:"summary"`
		Status   *named `json:"status"`
		Priority *struct {
			ID   string `json:"id"`
			Name string `json:"name"`
		} `json:"priority"`
		Labels      []string        `json:"labels"`
		Assignee    *wireUser       `json:"assignee"`
		IssueType   *named          `json:"issuetype"`
		Parent      *wireRef        `json:"parent"`
		IssueLinks  []wireLink      `json:"issuelinks"`
		Description json.RawMessage `json:"description"`
		Created     string          `json:"created"`
		Updated     string          `json:"updated"`
		Comment     *commentPage    `json:"comment"`
	} `json:"fields"`
}

type named struct {
	Name string `json:"name"`
}

type wireUser struct {
	DisplayName  string `json:"displayName"`
	Name         string `json:"name"`        // Data Center user name
	Key          string `json:"key"`         // Data Center user key
	AccountID    string `json:"accountId"`   // Cloud
	AccountType  string `json:"accountType"` // Cloud: atlassian, app or customer
	EmailAddress string `json:"emailAddress"`
}

// identity is the account u names: by accountId on Cloud, by key and name on Data
// Center.
func (u *wireUser) identity() tracker.Identity {
	if u == nil {
		return tracker.Identity{}
	}
	id := tracker.Identity{ID: u.AccountID, Login: u.Name, Email: u.EmailAddress, Name: u.DisplayName,
		App: strings.EqualFold(u.AccountType, "app")}
	if id.ID == "" {
		id.ID = u.Key
	}
	return id
}

type wireRef struct {
	ID     string `json:"id"`
	Key    string `json:"key"`
	Fields struct {
		Status *named `json:"status"`
	} `json:"fields"`
}

type wireLink struct {
	Type struct {
		Name    string `json:"name"`
		Inward  string `json:"inward"`
		Outward string `json:"outward"`
	} `json:"type"`
	InwardIssue  *wireRef `json:"inwardIssue"`
	OutwardIssue *wireRef `json:"outwardIssue"`
}

type wireComment struct {
	ID      string          `json:"id"`
	Author  *wireUser       `json:"author"`
	Body    json.RawMessage `json:"body"`
	Created string          `json:"created"`
}

type commentPage struct {
	StartAt    int           `json:"startAt"`
	MaxResults int           `json:"maxResults"`
	Total      int           `json:"total"`
	Comments   []wireComment `json:"comments"`
}

// priorityRanks maps Jira's default priority names to ranks, for a priority whose id is
// not a number (1 is the most urgent, as Jira's default ids are).
var priorityRanks = map[string]int{"highest": 1, "high": 2, "medium": 3, "low": 4, "lowest": 5}

// normalize turns one wire issue into a tracker.Issue. browse is the site URL used to
// build the issue's web address. An issue without id, key or status is malformed.
func normalize(w *wireIssue, browse string) (tracker.Issue, error) {
	if strings.TrimSpace(w.ID) == "" || strings.TrimSpace(w.Key) == "" {
		return tracker.Issue{}, fmt.Errorf("issue without id or key (id %q, key %q)", w.ID, w.Key)
	}
	f := &w.Fields
	if f.Status == nil || f.Status.Name == "" {
		return tracker.Issue{}, fmt.Errorf("issue %s has no status", w.Key)
	}
	desc, err := richText(f.Description)
	if err != nil {
		return tracker.Issue{}, fmt.Errorf("issue %s: description: %w", w.Key, err)
	}
	is := tracker.Issue{
		ID:          w.ID,
		Identifier:  w.Key,
		Title:       f.Summary,
		Description: desc,
		State:       f.Status.Name,
		URL:         browse + "/browse/" + w.Key,
		Labels:      make([]string, 0, len(f.Labels)),
		BlockedBy:   []tracker.BlockerRef{},
		CreatedAt:   jiraTime(f.Created),
		UpdatedAt:   jiraTime(f.Updated),
	}
	if f.Priority != nil {
		if n, err := strconv.Atoi(f.Priority.ID); err == nil {
			is.Priority = &n
		} else if n, ok := priorityRanks[strings.ToLower(strings.TrimSpace(f.Priority.Name))]; ok {
			is.Priority = &n
		}
	}
	for _, l := range f.Labels {
		is.Labels = append(is.Labels, strings.ToLower(l))
	}
	if f.Assignee != nil {
		is.Assignee = f.Assignee.display()
	}
	if f.IssueType != nil {
		is.IssueType = f.IssueType.Name
	}
	if f.Parent != nil && (f.Parent.ID != "" || f.Parent.Key != "") {
		is.Parent = &tracker.ParentRef{ID: f.Parent.ID, Identifier: f.Parent.Key}
	}
	for _, l := range f.IssueLinks {
		// The inward side of a Blocks link reads "is blocked by": the linked issue
		// blocks this one. Custom link types are recognised by that phrase.
		if l.InwardIssue == nil || !(strings.EqualFold(l.Type.Name, "Blocks") || strings.EqualFold(strings.TrimSpace(l.Type.Inward), "is blocked by")) {
			continue
		}
		b := tracker.BlockerRef{ID: l.InwardIssue.ID, Identifier: l.InwardIssue.Key}
		if s := l.InwardIssue.Fields.Status; s != nil {
			b.State = s.Name
		}
		is.BlockedBy = append(is.BlockedBy, b)
	}
	return is, nil
}

func (u *wireUser) display() string {
	if u == nil {
		return ""
	}
	if u.DisplayName != "" {
		return u.DisplayName
	}
	return u.Name
}

func normalizeComment(c *wireComment) (tracker.Comment, error) {
	body, err := richText(c.Body)
	if err != nil {
		return tracker.Comment{}, fmt.Errorf("comment %s: body: %w", c.ID, err)
	}
	who := c.Author.identity()
	return tracker.Comment{ID: c.ID, Author: c.Author.display(), Body: body, CreatedAt: jiraTime(c.Created),
		AuthorID: who.ID, AuthorLogin: who.Login, AuthorEmail: who.Email, AuthorBot: who.App}, nil
}

// jiraTime turns Jira's timestamp (2025-01-15T10:30:00.000+0000, no colon in the offset)
// into RFC 3339. A value in another form is kept as it is.
func jiraTime(s string) string {
	for _, layout := range []string{"2006-01-02T15:04:05.000-0700", time.RFC3339Nano} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.Format(time.RFC3339)
		}
	}
	return s
}

// decodeIssue parses one issue body and normalises it; used by the fuzz target too.
func decodeIssue(data []byte, browse string) (tracker.Issue, error) {
	var w wireIssue
	if err := json.Unmarshal(data, &w); err != nil {
		return tracker.Issue{}, err
	}
	return normalize(&w, browse)
}
