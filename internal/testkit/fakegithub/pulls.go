package fakegithub

import (
	"cmp"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// PullRequest is a pull request as the fake serves it: the issue it also is (number,
// title, body, state, author, times, all shared with /issues) and the change it
// proposes (head and base). It is a copy; the mutators change the stored one.
type PullRequest struct {
	Number int64
	ID     int64 // the pull request's own id, 1,000,000 + number: not its issue's
	Title  string
	Body   string
	State  string // open or closed; a merged pull request is closed
	Draft  bool
	Merged bool
	// MergedAt is when it was merged, zero while not. MergeCommitSHA is the merge
	// commit once merged.
	MergedAt       time.Time
	MergeCommitSHA string
	Head           Branch // the branch with the change
	Base           Branch // the branch it would be merged into
	User           User   // the author
	HTMLURL        string // https://github.com/{owner}/{repo}/pull/{number}
	CreatedAt      time.Time
	UpdatedAt      time.Time
	ClosedAt       time.Time // zero while open
}

// Branch is one end of a pull request.
type Branch struct {
	Ref  string // the branch name, without refs/heads/
	SHA  string // the commit the branch points at, 40 hex digits
	Repo string // owner/name of the repository the branch is in: a fork's for a head from a fork
}

// PullRequestOption changes a pull request before AddPullRequest stores it. Of its
// fields, Title, Body, User (a Login is enough), Draft, Head.SHA, Head.Repo and Base.SHA
// are kept; the others are the fake's.
type PullRequestOption func(*PullRequest)

// Draft opens the pull request as a draft.
func Draft() PullRequestOption { return func(p *PullRequest) { p.Draft = true } }

// HeadSHA sets the commit the head branch points at (40 hex digits), instead of one
// made up from the branch name.
func HeadSHA(sha string) PullRequestOption { return func(p *PullRequest) { p.Head.SHA = sha } }

// FromFork puts the head branch in owner's fork of the repository (owner/{repo}), as
// a contributor without write access opens a pull request.
func FromFork(owner string) PullRequestOption {
	return func(p *PullRequest) { p.Head.Repo = owner + "/" + strings.SplitN(p.Head.Repo, "/", 2)[1] }
}

// SHA is a made-up commit SHA (40 hex digits), the same for the same seed: a test
// names commits SHA("first push"), SHA("fix").
func SHA(seed string) string {
	sum := sha1.Sum([]byte(seed))
	return hex.EncodeToString(sum[:])
}

// pull is what a pull request has beyond the issue it is.
type pull struct {
	id         int64
	draft      bool
	head, base Branch
	mergedAt   time.Time
	mergeSHA   string
}

// AddPullRequest opens (or replaces) pull request number from branch head into branch
// base of the repository, by the account "reporter", titled head. Like an issue it is
// created at 2026-01-01T00:00Z plus number hours; it shares the issues' numbers and is
// listed by /issues with a pull_request key. Its head commit is SHA(head + "#" +
// number) unless HeadSHA says otherwise; base's is the branch's current commit.
func (s *Server) AddPullRequest(number int64, head, base string, opts ...PullRequestOption) PullRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addPull(number, head, head, base, nil, opts)
	return s.pullRequest(number)
}

// AddPR opens (or replaces) pull request number, from branch pr-{number} into main,
// with the given labels, and returns it as the issues API shows it.
func (s *Server) AddPR(number int64, labels ...string) Issue {
	s.mu.Lock()
	defer s.mu.Unlock()
	return *s.addPull(number, "a pull request", fmt.Sprintf("pr-%d", number), "main", labels, nil)
}

func (s *Server) addPull(number int64, title, head, base string, labels []string, opts []PullRequestOption) *Issue {
	full := s.owner + "/" + s.repo
	baseSHA, ok := s.branches[base]
	if !ok {
		baseSHA = SHA(full + ":" + base)
	}
	p := PullRequest{
		Number: number, Title: title, Body: "body of " + title, User: s.users["reporter"],
		Head: Branch{Ref: head, SHA: SHA(fmt.Sprintf("%s#%d", head, number)), Repo: full},
		Base: Branch{Ref: base, SHA: baseSHA, Repo: full},
	}
	for _, o := range opts {
		o(&p)
	}
	mustSHA("AddPullRequest", p.Head.SHA)
	mustSHA("AddPullRequest", p.Base.SHA)

	is := s.add(number, title, "open", labels)
	is.PR, is.Title, is.Body, is.User = true, p.Title, p.Body, s.account(p.User)
	s.pulls[number] = &pull{id: 1_000_000 + number, draft: p.Draft, head: p.Head, base: Branch{Ref: base, SHA: p.Base.SHA, Repo: full}}
	s.commits[p.Head.SHA], s.commits[p.Base.SHA] = true, true
	if p.Head.Repo == full {
		s.branches[head] = p.Head.SHA
	}
	if _, ok := s.branches[base]; !ok {
		s.branches[base] = p.Base.SHA
	}
	return is
}

// PullRequest returns pull request number and whether there is one.
func (s *Server) PullRequest(number int64) (PullRequest, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pulls[number] == nil {
		return PullRequest{}, false
	}
	return s.pullRequest(number), true
}

func (s *Server) pullRequest(number int64) PullRequest {
	is, p := s.issues[number], s.pulls[number]
	return PullRequest{
		Number: number, ID: p.id, Title: is.Title, Body: is.Body, State: is.State, Draft: p.draft,
		Merged: !p.mergedAt.IsZero(), MergedAt: p.mergedAt, MergeCommitSHA: p.mergeSHA,
		Head: p.head, Base: p.base, User: is.User,
		HTMLURL:   fmt.Sprintf("%s/pull/%d", s.webRepo(), number),
		CreatedAt: is.CreatedAt, UpdatedAt: is.UpdatedAt, ClosedAt: is.ClosedAt,
	}
}

// Push moves pull request number's head to commit sha (40 hex digits), as a push to
// its branch does, and moves its updated_at. It panics when there is no such pull
// request or it is merged.
func (s *Server) Push(number int64, sha string) {
	mustSHA("Push", sha)
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.mustPull(number)
	if !p.mergedAt.IsZero() {
		panic(fmt.Sprintf("fakegithub: Push(%d): the pull request is merged", number))
	}
	p.head.SHA = sha
	s.commits[sha] = true
	if p.head.Repo == s.owner+"/"+s.repo {
		s.branches[p.head.Ref] = sha
	}
	s.bump(s.issues[number])
}

// ClosePullRequest closes pull request number without merging it.
func (s *Server) ClosePullRequest(number int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mustPull(number)
	is := s.issues[number]
	s.setState(is, "closed", "")
	s.bump(is)
}

// MergePullRequest merges pull request number: it is closed, merged_at and
// merge_commit_sha are set, and its base branch moves to the merge commit, which it
// returns. It panics when the pull request is closed.
func (s *Server) MergePullRequest(number int64) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.mustPull(number)
	is := s.issues[number]
	if is.State != "open" {
		panic(fmt.Sprintf("fakegithub: MergePullRequest(%d): the pull request is closed", number))
	}
	p.mergeSHA = SHA("merge " + p.base.SHA + " " + p.head.SHA)
	s.setState(is, "closed", "")
	p.mergedAt = is.ClosedAt
	s.commits[p.mergeSHA] = true
	s.branches[p.base.Ref] = p.mergeSHA
	s.bump(is)
	return p.mergeSHA
}

func (s *Server) mustPull(number int64) *pull {
	p := s.pulls[number]
	if p == nil || s.issues[number] == nil || !s.issues[number].PR {
		panic(fmt.Sprintf("fakegithub: no pull request #%d", number))
	}
	return p
}

func mustSHA(who, sha string) {
	if len(sha) != 40 || strings.Trim(sha, "0123456789abcdef") != "" {
		panic(fmt.Sprintf("fakegithub: %s: %q is not a commit SHA (40 lowercase hex digits; SHA makes one)", who, sha))
	}
}

// wirePull is GitHub REST's pull request as lists show it; wirePullFull adds what
// GET /pulls/{n} shows.
type wirePull struct {
	URL                string              `json:"url"`
	ID                 int64               `json:"id"`
	NodeID             string              `json:"node_id"`
	HTMLURL            string              `json:"html_url"`
	DiffURL            string              `json:"diff_url"`
	PatchURL           string              `json:"patch_url"`
	IssueURL           string              `json:"issue_url"`
	CommitsURL         string              `json:"commits_url"`
	ReviewCommentsURL  string              `json:"review_comments_url"`
	ReviewCommentURL   string              `json:"review_comment_url"`
	CommentsURL        string              `json:"comments_url"`
	StatusesURL        string              `json:"statuses_url"`
	Number             int64               `json:"number"`
	State              string              `json:"state"`
	Locked             bool                `json:"locked"`
	Title              string              `json:"title"`
	User               wireUser            `json:"user"`
	Body               *string             `json:"body"`
	Labels             []wireLabel         `json:"labels"`
	Milestone          any                 `json:"milestone"`
	ActiveLockReason   *string             `json:"active_lock_reason"`
	CreatedAt          string              `json:"created_at"`
	UpdatedAt          string              `json:"updated_at"`
	ClosedAt           *string             `json:"closed_at"`
	MergedAt           *string             `json:"merged_at"`
	MergeCommitSHA     *string             `json:"merge_commit_sha"`
	Assignee           *wireUser           `json:"assignee"`
	Assignees          []wireUser          `json:"assignees"`
	RequestedReviewers []wireUser          `json:"requested_reviewers"`
	RequestedTeams     []any               `json:"requested_teams"`
	Head               wireBranch          `json:"head"`
	Base               wireBranch          `json:"base"`
	Links              map[string]wireHref `json:"_links"`
	AuthorAssociation  string              `json:"author_association"`
	AutoMerge          any                 `json:"auto_merge"`
	Draft              bool                `json:"draft"`
}

type wirePullFull struct {
	wirePull
	Merged              bool      `json:"merged"`
	Mergeable           *bool     `json:"mergeable"`
	Rebaseable          *bool     `json:"rebaseable"`
	MergeableState      string    `json:"mergeable_state"`
	MergedBy            *wireUser `json:"merged_by"`
	Comments            int       `json:"comments"`
	ReviewComments      int       `json:"review_comments"`
	MaintainerCanModify bool      `json:"maintainer_can_modify"`
	Commits             int       `json:"commits"`
	Additions           int       `json:"additions"`
	Deletions           int       `json:"deletions"`
	ChangedFiles        int       `json:"changed_files"`
}

type wireBranch struct {
	Label string   `json:"label"` // owner:ref
	Ref   string   `json:"ref"`
	SHA   string   `json:"sha"`
	User  wireUser `json:"user"`
	Repo  wireRepo `json:"repo"`
}

type wireRepo struct {
	ID            int64    `json:"id"`
	NodeID        string   `json:"node_id"`
	Name          string   `json:"name"`
	FullName      string   `json:"full_name"`
	Private       bool     `json:"private"`
	Owner         wireUser `json:"owner"`
	HTMLURL       string   `json:"html_url"`
	URL           string   `json:"url"`
	Fork          bool     `json:"fork"`
	DefaultBranch string   `json:"default_branch"`
}

type wireHref struct {
	Href string `json:"href"`
}

// repoOwner is the account owning repository full (owner/name): the fake's repository
// belongs to an organization, forks to people.
func (s *Server) repoOwner(full string) User {
	login, _, _ := strings.Cut(full, "/")
	if login == s.owner {
		return User{Login: login, ID: 3000, Type: "Organization"}
	}
	return s.user(login)
}

func (s *Server) wireRepo(full string) wireRepo {
	o := s.repoOwner(full)
	_, name, _ := strings.Cut(full, "/")
	r := wireRepo{
		ID: 777, NodeID: "R_777", Name: name, FullName: full, Owner: s.wireUser(o),
		HTMLURL: "https://github.com/" + full, URL: s.srv.URL + "/repos/" + full, DefaultBranch: "main",
	}
	if full != s.owner+"/"+s.repo {
		r.ID, r.Fork = 800_000+o.ID, true
		r.NodeID = "R_" + strconv.FormatInt(r.ID, 10)
	}
	return r
}

func (s *Server) wireBranch(b Branch) wireBranch {
	o := s.repoOwner(b.Repo)
	return wireBranch{Label: o.Login + ":" + b.Ref, Ref: b.Ref, SHA: b.SHA, User: s.wireUser(o), Repo: s.wireRepo(b.Repo)}
}

// association is how u relates to the repository, as author_association says it on
// pull requests, reviews and review comments: the token's account can push, bots are
// strangers, the people tests name are members.
func association(u User) string {
	switch {
	case u.Login == BotLogin:
		return "COLLABORATOR"
	case u.Type == "Bot":
		return "NONE"
	}
	return "MEMBER"
}

func (s *Server) wirePull(number int64) wirePull {
	pr := s.pullRequest(number)
	api := s.apiRepo()
	n := strconv.FormatInt(number, 10)
	self := api + "/pulls/" + n
	mergeSHA := pr.MergeCommitSHA
	if mergeSHA == "" && pr.State == "open" {
		// GitHub keeps a test merge commit for an open pull request.
		mergeSHA = SHA("test merge " + pr.Base.SHA + " " + pr.Head.SHA)
	}
	return wirePull{
		URL: self, ID: pr.ID, NodeID: "PR_" + strconv.FormatInt(pr.ID, 10), HTMLURL: pr.HTMLURL,
		DiffURL: pr.HTMLURL + ".diff", PatchURL: pr.HTMLURL + ".patch", IssueURL: api + "/issues/" + n,
		CommitsURL: self + "/commits", ReviewCommentsURL: self + "/comments",
		ReviewCommentURL: api + "/pulls/comments{/number}", CommentsURL: api + "/issues/" + n + "/comments",
		StatusesURL: api + "/statuses/" + pr.Head.SHA, Number: number, State: pr.State, Title: pr.Title,
		User: s.wireUser(pr.User), Body: strOrNull(pr.Body), Labels: s.wireLabels(s.issues[number].Labels),
		CreatedAt: ts(pr.CreatedAt), UpdatedAt: ts(pr.UpdatedAt), ClosedAt: tsOrNull(pr.ClosedAt),
		MergedAt: tsOrNull(pr.MergedAt), MergeCommitSHA: strOrNull(mergeSHA),
		Assignees: []wireUser{}, RequestedReviewers: []wireUser{}, RequestedTeams: []any{},
		Head: s.wireBranch(pr.Head), Base: s.wireBranch(pr.Base),
		Links: map[string]wireHref{
			"self": {self}, "html": {pr.HTMLURL}, "issue": {api + "/issues/" + n},
			"comments": {api + "/issues/" + n + "/comments"}, "review_comments": {self + "/comments"},
			"review_comment": {api + "/pulls/comments{/number}"}, "commits": {self + "/commits"},
			"statuses": {api + "/statuses/" + pr.Head.SHA},
		},
		AuthorAssociation: association(pr.User), Draft: pr.Draft,
	}
}

func (s *Server) wirePullFull(number int64) wirePullFull {
	pr := s.pullRequest(number)
	w := wirePullFull{
		wirePull: s.wirePull(number), Merged: pr.Merged, MergeableState: "unknown",
		Comments: len(s.comments[number]), ReviewComments: len(s.reviewComments[number]),
		MaintainerCanModify: pr.Head.Repo != pr.Base.Repo, Commits: 1, Additions: 10, Deletions: 2, ChangedFiles: 1,
	}
	if pr.State == "open" {
		// GitHub computes mergeability in the background; the fake has it ready.
		t := true
		w.Mergeable, w.Rebaseable, w.MergeableState = &t, &t, "clean"
		if pr.Draft {
			w.MergeableState = "draft"
		}
	}
	if pr.Merged {
		u := s.wireUser(s.users[BotLogin])
		w.MergedBy = &u
	}
	return w
}

// routePulls answers GET under /pulls; parts[0] is "pulls".
func (s *Server) routePulls(r *http.Request, parts []string) reply {
	if len(parts) == 1 {
		return s.listPulls(r)
	}
	num, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil || s.pulls[num] == nil || s.issues[num] == nil || !s.issues[num].PR {
		return notFound()
	}
	switch {
	case len(parts) == 2:
		return okJSON(s.wirePullFull(num))
	case len(parts) == 3 && parts[2] == "reviews":
		return s.listReviews(r, num)
	case len(parts) == 4 && parts[2] == "reviews":
		return s.getReview(num, parts[3])
	case len(parts) == 5 && parts[2] == "reviews" && parts[4] == "comments":
		return s.listReviewComments(r, num, parts[3])
	case len(parts) == 3 && parts[2] == "comments":
		return s.listPullComments(r, num)
	}
	return notFound()
}

// listPulls filters by state (open by default), head (owner:branch; GitHub ignores a
// head without the owner, and so does the fake) and base, and sorts by created (the
// default) or updated, newest first unless direction=asc.
func (s *Server) listPulls(r *http.Request) reply {
	q := r.URL.Query()
	state := cmp.Or(q.Get("state"), "open")
	if state != "open" && state != "closed" && state != "all" {
		return failJSON(http.StatusUnprocessableEntity, "Validation Failed")
	}
	headOwner, headRef, byHead := strings.Cut(q.Get("head"), ":")
	var list []PullRequest
	for n := range s.pulls {
		if is := s.issues[n]; is == nil || !is.PR {
			continue
		}
		pr := s.pullRequest(n)
		switch {
		case state != "all" && pr.State != state,
			byHead && (!strings.EqualFold(s.repoOwner(pr.Head.Repo).Login, headOwner) || pr.Head.Ref != headRef),
			q.Has("base") && pr.Base.Ref != q.Get("base"):
			continue
		}
		list = append(list, pr)
	}
	sortBy := cmp.Or(q.Get("sort"), "created")
	desc := q.Get("direction") == "desc" || q.Get("direction") == "" && sortBy == "created"
	slices.SortFunc(list, func(a, b PullRequest) int {
		c := a.CreatedAt.Compare(b.CreatedAt)
		if sortBy == "updated" {
			c = a.UpdatedAt.Compare(b.UpdatedAt)
		}
		c = cmp.Or(c, cmp.Compare(a.Number, b.Number))
		if desc {
			return -c
		}
		return c
	})
	items := make([]any, len(list))
	for i, pr := range list {
		items[i] = s.wirePull(pr.Number)
	}
	return s.pageAny(r, items)
}
