// Package tracker defines the normalised issue model Sortie schedules from, the small
// Tracker interface every issue-tracker adapter implements (file, GitHub, Jira), the
// tracker error kinds and the registry that builds adapters by kind. It owns no
// scheduling state: the orchestrator decides what to do with what a tracker returns.
package tracker

import (
	"context"
	"slices"
	"strings"
	"time"
)

// Issue is one tracker issue in normalised form. Labels are lowercased by adapters;
// State keeps the tracker's casing and is compared case-insensitively.
type Issue struct {
	ID          string       `json:"id"`
	Identifier  string       `json:"identifier"`
	Title       string       `json:"title"`
	Description string       `json:"description"`
	Priority    *int         `json:"priority"` // nil when the tracker has none or it is not an integer
	State       string       `json:"state"`
	BranchName  string       `json:"branch_name"`
	URL         string       `json:"url"`
	Labels      []string     `json:"labels"`
	Assignee    string       `json:"assignee"`
	IssueType   string       `json:"issue_type"`
	Parent      *ParentRef   `json:"parent"`
	BlockedBy   []BlockerRef `json:"blocked_by"`
	// Comments is nil when not fetched (listing calls) and empty when there are none.
	Comments  []Comment `json:"comments"`
	CreatedAt string    `json:"created_at"` // RFC 3339 as the tracker gave it; "" when unknown
	UpdatedAt string    `json:"updated_at"`
}

// ParentRef names an issue's parent.
type ParentRef struct {
	ID         string `json:"id"`
	Identifier string `json:"identifier"`
}

// BlockerRef names an issue that blocks another. An empty State counts as not terminal.
type BlockerRef struct {
	ID         string `json:"id"`
	Identifier string `json:"identifier"`
	State      string `json:"state"`
}

// Comment is one comment on an issue.
type Comment struct {
	ID        string `json:"id"`
	Author    string `json:"author"`
	Body      string `json:"body"`
	CreatedAt string `json:"created_at"`
	// AuthorAssociation is the author's relation to the repository on GitHub (OWNER,
	// MEMBER, COLLABORATOR, CONTRIBUTOR, NONE, ...); "" elsewhere.
	AuthorAssociation string `json:"author_association,omitempty"`

	// The author's account, for deciding whether the comment may answer a checkpoint
	// (never shown to agents: tracker_api returns the fields above). Author is what the
	// tracker displays, which on Jira is a display name anyone can choose; these are
	// what identify the account.
	//
	// AuthorID is the account's stable id: GitHub's numeric user id, Jira Cloud's
	// accountId, Jira Data Center's user key; "" when unknown.
	AuthorID string `json:"-"`
	// AuthorLogin is the account's unique user name: the GitHub login, the Jira Data
	// Center user name; "" on Jira Cloud, which has none.
	AuthorLogin string `json:"-"`
	// AuthorEmail is the account's e-mail address where the tracker shows it (Jira,
	// subject to the user's privacy settings); "" otherwise.
	AuthorEmail string `json:"-"`
	// AuthorBot is set when the account is an application's rather than a person's:
	// a GitHub user of type Bot (a GitHub App), a Jira account of type app.
	AuthorBot bool `json:"-"`
}

// Identity is the account a tracker adapter acts as: the owner of tracker.api_key,
// the author of every comment Sortie posts. Fields the tracker does not give are "".
type Identity struct {
	ID    string // stable account id: GitHub user id, Jira Cloud accountId, Jira Data Center user key
	Login string // GitHub login, Jira Data Center user name
	Email string // where the tracker shows it
	Name  string // display name, for messages only: not unique
	// App is set when the credential is an application's whose account the tracker does
	// not name (a GitHub App installation token): its comments are by a bot account.
	App bool
}

// Wrote reports whether c was written by the account id names: by its id, login or
// e-mail. A comment that carries none of those (a payload without them) is matched by
// its displayed author against the login and display name instead.
func (id Identity) Wrote(c Comment) bool {
	same := func(a, b string) bool { return a != "" && strings.EqualFold(a, b) }
	if same(id.ID, c.AuthorID) || same(id.Login, c.AuthorLogin) || same(id.Email, c.AuthorEmail) {
		return true
	}
	if c.AuthorID == "" && c.AuthorLogin == "" && c.AuthorEmail == "" {
		return same(id.Login, c.Author) || same(id.Name, c.Author)
	}
	return false
}

// String names the account for logs and messages: its login, e-mail, id or name.
func (id Identity) String() string {
	for _, s := range []string{id.Login, id.Email, id.ID, id.Name} {
		if s != "" {
			return s
		}
	}
	if id.App {
		return "an app's bot account"
	}
	return "an unknown account"
}

// As finds the optional interface T (Account, Labeler, RateLimiter, Watcher...) in t
// or in the trackers it wraps, following Unwrap() Tracker as errors.As follows Unwrap:
// a wrapper such as the metrics' counting tracker must not hide what its tracker can do.
func As[T any](t Tracker) (T, bool) {
	for t != nil {
		if v, ok := t.(T); ok {
			return v, true
		}
		u, ok := t.(interface{ Unwrap() Tracker })
		if !ok {
			break
		}
		t = u.Unwrap()
	}
	var zero T
	return zero, false
}

// Account is implemented by trackers that can say which account they act as. The
// orchestrator uses it so that a comment Sortie posted (or one posted with its
// credentials) never passes for a human's checkpoint answer. Self asks the tracker
// once and keeps the answer; a failed ask is not kept, so the next call asks again.
type Account interface {
	Self(ctx context.Context) (Identity, error)
}

// Tracker is what the orchestrator needs from an issue tracker. Implementations are safe
// for concurrent use. Errors are *Error values carrying a Kind.
type Tracker interface {
	// FetchCandidateIssues returns issues in the configured active states. Comments are nil.
	FetchCandidateIssues(ctx context.Context) ([]Issue, error)
	// FetchIssueByID returns one fully populated issue (comments non-nil), or a
	// tracker_not_found error.
	FetchIssueByID(ctx context.Context, id string) (Issue, error)
	// FetchIssueStatesByIDs returns id → state. Unknown ids are omitted, not an error.
	FetchIssueStatesByIDs(ctx context.Context, ids []string) (map[string]string, error)
	// FetchIssueStatesByIdentifiers returns identifier → state. Unknown ones are omitted.
	FetchIssueStatesByIdentifiers(ctx context.Context, identifiers []string) (map[string]string, error)
	// FetchIssueComments returns the comments of one issue, oldest first.
	FetchIssueComments(ctx context.Context, id string) ([]Comment, error)
	// TransitionIssue moves an issue to the named state.
	TransitionIssue(ctx context.Context, id, targetState string) error
	// CommentIssue appends a plain-text comment to an issue.
	CommentIssue(ctx context.Context, id, text string) error
}

// Labeler is a tracker that can put a label on an issue: Sortie escalates to a human
// with one (needs-human) when it gives up on an issue. Adapters that have it: github,
// file, jira, linear. The label is written as given (trackers compare labels
// case-insensitively, and Issue.Labels are lowercased); one the tracker refuses is a
// tracker_payload_error saying why (a Jira label with a space, a Linear label that does
// not exist in the issue's team), an issue outside tracker.project tracker_not_found.
type Labeler interface {
	// AddLabel puts label on issue id; a label already there is not an error.
	AddLabel(ctx context.Context, id, label string) error
}

// Watcher is implemented by trackers that can tell when their issues may have changed
// (a file watch, a webhook). The channel receives a value, coalesced, after each change
// and is closed when ctx ends. Trackers without it are polled only.
type Watcher interface {
	Watch(ctx context.Context) <-chan struct{}
}

// StateIn reports whether state is one of states, case-insensitively.
func StateIn(state string, states []string) bool {
	s := strings.TrimSpace(state)
	for _, c := range states {
		if strings.EqualFold(s, strings.TrimSpace(c)) {
			return true
		}
	}
	return false
}

// Clone returns a deep copy of i: its slices and pointers are copied, so a caller that
// changes the copy never changes i (or a tracker's cached issue). Nil comments stay nil.
func (i Issue) Clone() Issue {
	c := i
	c.Labels = slices.Clone(i.Labels)
	c.BlockedBy = slices.Clone(i.BlockedBy)
	c.Comments = slices.Clone(i.Comments)
	if i.Priority != nil {
		p := *i.Priority
		c.Priority = &p
	}
	if i.Parent != nil {
		p := *i.Parent
		c.Parent = &p
	}
	return c
}

// RateLimit is what a remote tracker's API allows this daemon right now, as its last
// response said.
type RateLimit struct {
	Resource  string    `json:"resource,omitempty"` // e.g. core, search (GitHub); "" when the API has one budget
	Limit     int       `json:"limit"`              // requests per window; 0 when unknown
	Remaining int       `json:"remaining"`          // requests left in the window
	Reset     time.Time `json:"reset"`              // when the window refills; zero when unknown
	// ThrottledUntil is set while the adapter holds back on its own (a 429, a
	// secondary limit, Retry-After, or a budget nearly spent): no request before it.
	ThrottledUntil time.Time `json:"throttled_until,omitempty"`
	UpdatedAt      time.Time `json:"updated_at"`
}

// RateLimiter is implemented by trackers whose API is rate-limited. The daemon shows
// the budgets in its API and metrics.
type RateLimiter interface {
	RateLimits() []RateLimit
}
