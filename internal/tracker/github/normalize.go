package github

import (
	"encoding/json"
	"strconv"
	"strings"

	"sortie/internal/tracker"
)

// apiIssue is the part of a GitHub REST issue object the adapter reads. Fields the API
// may send as null are pointers or tolerate null through their zero value.
type apiIssue struct {
	ID            int64           `json:"id"`
	Number        int64           `json:"number"`
	Title         string          `json:"title"`
	Body          *string         `json:"body"`
	State         string          `json:"state"` // open or closed
	HTMLURL       string          `json:"html_url"`
	RepositoryURL string          `json:"repository_url"`
	Labels        []apiLabel      `json:"labels"`
	Assignee      *apiUser        `json:"assignee"`
	Assignees     []apiUser       `json:"assignees"`
	Type          *apiIssueType   `json:"type"`
	PullRequest   json.RawMessage `json:"pull_request"` // present and not null on pull requests
	CreatedAt     string          `json:"created_at"`
	UpdatedAt     string          `json:"updated_at"`
}

// apiLabel is a label as the issues API returns it. The API documents labels as objects,
// but a label given as a bare string is accepted too.
type apiLabel struct {
	Name string
}

func (l *apiLabel) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err == nil {
		l.Name = s
		return nil
	}
	var o struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(data, &o); err != nil {
		return err
	}
	l.Name = o.Name
	return nil
}

type apiUser struct {
	Login string `json:"login"`
	ID    int64  `json:"id"`
	Type  string `json:"type"` // User, Bot (a GitHub App) or Organization
}

type apiIssueType struct {
	Name string `json:"name"`
}

type apiComment struct {
	ID                int64    `json:"id"`
	User              *apiUser `json:"user"`
	Body              *string  `json:"body"`
	CreatedAt         string   `json:"created_at"`
	AuthorAssociation string   `json:"author_association"`
}

type apiSearch struct {
	TotalCount        int        `json:"total_count"`
	IncompleteResults bool       `json:"incomplete_results"`
	Items             []apiIssue `json:"items"`
}

// isPullRequest reports whether the issues API returned a pull request: it lists them
// with the issues and marks them with a non-null pull_request key.
func (a *apiIssue) isPullRequest() bool {
	p := strings.TrimSpace(string(a.PullRequest))
	return p != "" && p != "null"
}

// states is the adapter's view of the configured state lists: the label names that are
// states, in the order an issue's state is chosen from them.
type states struct {
	active, terminal []string
	handoff          string
}

// Adapter defaults when a list is empty (reference §3.2).
var (
	defaultActive   = []string{"backlog", "in-progress", "review"}
	defaultTerminal = []string{"done", "wontfix"}
)

func newStates(cfg tracker.Config) states {
	s := states{active: clean(cfg.ActiveStates), terminal: clean(cfg.TerminalStates), handoff: strings.TrimSpace(cfg.HandoffState)}
	if len(s.active) == 0 {
		s.active = defaultActive
	}
	if len(s.terminal) == 0 {
		s.terminal = defaultTerminal
	}
	return s
}

func clean(list []string) []string {
	var out []string
	for _, s := range list {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// isState reports whether label names one of the configured states and returns the
// state in its configured casing.
func (s states) isState(label string) (string, bool) {
	label = strings.TrimSpace(label)
	for _, list := range [][]string{s.active, s.terminal, {s.handoff}} {
		for _, st := range list {
			if st != "" && strings.EqualFold(st, label) {
				return st, true
			}
		}
	}
	return "", false
}

func (s states) terminalState(state string) bool { return tracker.StateIn(state, s.terminal) }

// of returns an issue's state. The first label matching an active, then a terminal, then
// the handoff state wins, in the configured casing. An open issue without one is in the
// first active state and a closed one in the first terminal state (reference §3.2). A
// closed issue is never active, whatever its labels say: closing an issue on GitHub is
// how a person stops work on it, and a stale in-progress label must not keep an agent
// running.
func (s states) of(open bool, labels []apiLabel) string {
	match := func(list []string) string {
		for _, st := range list {
			for _, l := range labels {
				if st != "" && strings.EqualFold(strings.TrimSpace(l.Name), st) {
					return st
				}
			}
		}
		return ""
	}
	if open {
		for _, list := range [][]string{s.active, s.terminal, {s.handoff}} {
			if st := match(list); st != "" {
				return st
			}
		}
		return s.active[0]
	}
	for _, list := range [][]string{s.terminal, {s.handoff}} {
		if st := match(list); st != "" {
			return st
		}
	}
	return s.terminal[0]
}

// normalize turns an API issue into a tracker.Issue with nil comments. The id and the
// identifier are both the issue number, which is what people type and what the API
// addresses issues by. repo is owner/repo: an issue from another repository (a
// cross-repository blocker or parent) gets the identifier owner/repo#N.
func (s states) normalize(a *apiIssue, repo string) tracker.Issue {
	num := strconv.FormatInt(a.Number, 10)
	is := tracker.Issue{
		ID:         num,
		Identifier: refIdentifier(a, repo),
		Title:      a.Title,
		State:      s.of(!strings.EqualFold(a.State, "closed"), a.Labels),
		URL:        a.HTMLURL,
		Labels:     make([]string, 0, len(a.Labels)),
		BlockedBy:  []tracker.BlockerRef{},
		CreatedAt:  a.CreatedAt,
		UpdatedAt:  a.UpdatedAt,
	}
	if a.Body != nil {
		is.Description = *a.Body
	}
	for _, l := range a.Labels {
		if n := strings.ToLower(strings.TrimSpace(l.Name)); n != "" {
			is.Labels = append(is.Labels, n)
		}
	}
	switch {
	case a.Assignee != nil && a.Assignee.Login != "":
		is.Assignee = a.Assignee.Login
	case len(a.Assignees) > 0:
		is.Assignee = a.Assignees[0].Login
	}
	if a.Type != nil {
		is.IssueType = a.Type.Name
	}
	return is
}

// refIdentifier is N for an issue of repo and owner/repo#N for one of another
// repository, judged by its repository_url (…/repos/owner/repo).
func refIdentifier(a *apiIssue, repo string) string {
	num := strconv.FormatInt(a.Number, 10)
	if other := repoOf(a); other != "" && !strings.EqualFold(other, repo) {
		return other + "#" + num
	}
	return num
}

// repoOf is the owner/repo of an issue's repository_url (…/repos/owner/repo), "" when
// the payload has none or it is not in that form.
func repoOf(a *apiIssue) string {
	_, other, ok := strings.Cut(a.RepositoryURL, "/repos/")
	if !ok {
		return ""
	}
	return strings.TrimSuffix(other, "/")
}

func normalizeComment(c *apiComment) tracker.Comment {
	out := tracker.Comment{ID: strconv.FormatInt(c.ID, 10), CreatedAt: c.CreatedAt, AuthorAssociation: c.AuthorAssociation}
	if c.User != nil {
		out.Author, out.AuthorLogin = c.User.Login, c.User.Login
		if c.User.ID > 0 {
			out.AuthorID = strconv.FormatInt(c.User.ID, 10)
		}
		out.AuthorBot = strings.EqualFold(c.User.Type, "Bot")
	}
	if c.Body != nil {
		out.Body = *c.Body
	}
	return out
}

// parseIssue decodes one issue object. An object without a positive number is not an
// issue the adapter can address, and is a payload error.
func parseIssue(data []byte) (apiIssue, error) {
	var a apiIssue
	if err := json.Unmarshal(data, &a); err != nil {
		return a, err
	}
	if a.Number <= 0 {
		return a, errNoNumber
	}
	return a, nil
}

type payloadError string

func (e payloadError) Error() string { return string(e) }

const errNoNumber = payloadError("issue has no positive number")
