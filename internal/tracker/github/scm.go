package github

// The code-host half of the adapter, for reactions: after an issue is handed off, the
// orchestrator watches its pull request on GitHub, the pull request's checks (checks.go)
// and its reviews (reviews.go), and reads a failing job's log (joblog.go). A *Tracker
// serves them through the client the issues use: one request at a time, within the
// rate-limit budget it already keeps, and conditionally through its ETag cache, so a poll
// that finds nothing new is answered with 304s that GitHub does not charge. The
// orchestrator defines the interface it needs; these methods are what it can ask for.
//
// The repository is an argument, "owner/name", because the pull request is named by the
// workspace's .sortie/scm.json and may live outside tracker.project. This client sends
// the token to whichever repository it is given: scm.json is written by the agent, so
// the caller decides which repositories it accepts (tracker.project, normally; a pull
// request from a fork still lives in the base repository).

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"

	"sortie/internal/tracker"
)

// PullRequest is the part of a GitHub pull request reactions need.
type PullRequest struct {
	Number int64
	State  string // open or closed
	Draft  bool
	Merged bool
	// HeadRef and HeadSHA are the branch and commit under review; HeadRepo is the
	// head branch's repository as owner/name ("" when that fork was deleted).
	HeadRef, HeadSHA, HeadRepo string
	BaseRef                    string
	URL                        string // the page on github.com
	UpdatedAt                  time.Time
}

type apiPull struct {
	Number    int64      `json:"number"`
	State     string     `json:"state"`
	Draft     bool       `json:"draft"`
	Merged    bool       `json:"merged"`    // only on a single pull request
	MergedAt  *string    `json:"merged_at"` // on lists too
	HTMLURL   string     `json:"html_url"`
	UpdatedAt string     `json:"updated_at"`
	Head      apiPullRef `json:"head"`
	Base      apiPullRef `json:"base"`
}

type apiPullRef struct {
	Label string `json:"label"` // owner:branch
	Ref   string `json:"ref"`
	SHA   string `json:"sha"`
	Repo  *struct {
		FullName string `json:"full_name"`
	} `json:"repo"` // null when the fork is gone
}

func (p *apiPull) normalize() PullRequest {
	out := PullRequest{
		Number: p.Number, State: p.State, Draft: p.Draft,
		Merged:  p.Merged || p.MergedAt != nil && *p.MergedAt != "",
		HeadRef: p.Head.Ref, HeadSHA: p.Head.SHA, BaseRef: p.Base.Ref,
		URL: p.HTMLURL, UpdatedAt: parseTime(p.UpdatedAt),
	}
	if p.Head.Repo != nil {
		out.HeadRepo = p.Head.Repo.FullName
	}
	return out
}

// errStop ends a listing early once the item sought is found.
var errStop = errors.New("stop")

// FindPullRequest returns the newest open pull request of repo whose head is branch,
// and false when there is none. branch is a branch of repo, or owner:branch for one of
// a fork. Every page is a conditional request.
func (t *Tracker) FindPullRequest(ctx context.Context, repo, branch string) (PullRequest, bool, error) {
	const op = "find_pull_request"
	r, err := t.codeHostRepo(op, repo)
	if err != nil {
		return PullRequest{}, false, err
	}
	owner, _, _ := strings.Cut(r, "/")
	head := strings.TrimSpace(branch)
	if o, b, ok := strings.Cut(head, ":"); ok {
		owner, head = o, b
	}
	if !ownerRe().MatchString(owner) || !validBranch(head) {
		return PullRequest{}, false, tracker.Errorf(tracker.ErrPayload, op, "%q is not a branch name (or owner:branch); check branch in .sortie/scm.json", branch)
	}
	first := t.codeHostURL(r, "/pulls", url.Values{
		"state": {"open"}, "head": {owner + ":" + head}, "sort": {"created"}, "direction": {"desc"}, "per_page": {"100"},
	})
	var found PullRequest
	ok := false
	err = t.pages(ctx, op, first, func(body []byte) error {
		var list []apiPull
		if err := json.Unmarshal(body, &list); err != nil {
			return t.payloadErr(op, "pull request list", err)
		}
		for i := range list {
			p := &list[i]
			// The head filter is GitHub's; checking it again keeps a server that
			// ignores it (an old GitHub Enterprise) from naming another branch's PR.
			if p.Number > 0 && strings.EqualFold(p.State, "open") && headIs(p.Head, owner, head) {
				found, ok = p.normalize(), true
				return errStop
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return PullRequest{}, false, err
	}
	return found, ok, nil
}

func headIs(h apiPullRef, owner, branch string) bool {
	if h.Label != "" {
		o, b, ok := strings.Cut(h.Label, ":")
		return ok && strings.EqualFold(o, owner) && b == branch
	}
	if h.Ref != branch {
		return false
	}
	if h.Repo == nil {
		return true
	}
	o, _, _ := strings.Cut(h.Repo.FullName, "/")
	return strings.EqualFold(o, owner)
}

// PullRequest returns pull request number of repo, conditionally. One that does not
// exist is tracker_not_found.
func (t *Tracker) PullRequest(ctx context.Context, repo string, number int64) (PullRequest, error) {
	const op = "pull_request"
	r, err := t.codeHostRepo(op, repo)
	if err != nil {
		return PullRequest{}, err
	}
	if number <= 0 {
		return PullRequest{}, tracker.Errorf(tracker.ErrPayload, op, "pull request number %d is not positive; check pr_number in .sortie/scm.json", number)
	}
	resp, err := t.get(ctx, op, t.codeHostURL(r, "/pulls/"+strconv.FormatInt(number, 10), nil))
	if err != nil {
		return PullRequest{}, err
	}
	var p apiPull
	if err := json.Unmarshal(resp.body, &p); err != nil {
		return PullRequest{}, t.payloadErr(op, "pull request", err)
	}
	if p.Number != number {
		return PullRequest{}, tracker.Errorf(tracker.ErrPayload, op, "GitHub answered pull request %d for #%d of %s", p.Number, number, r)
	}
	return p.normalize(), nil
}

// parseRepo checks repo, owner/name as scm.json or tracker.project names it (a ".git"
// suffix is dropped: GitHub refuses repository names that end so), and returns it.
func parseRepo(op, repo string) (string, error) {
	r := strings.TrimSuffix(strings.TrimSpace(repo), ".git")
	owner, name, ok := strings.Cut(r, "/")
	if !ok || !ownerRe().MatchString(owner) || name == "." || name == ".." || !repoRe().MatchString(name) {
		return "", tracker.Errorf(tracker.ErrPayload, op, "%q is not a GitHub repository as owner/name; check owner and repo in .sortie/scm.json", repo)
	}
	return owner + "/" + name, nil
}

// codeHostRepo is parseRepo, limited to tracker.project: the repository comes from
// .sortie/scm.json, which the agent writes, and the token must not read another
// repository's pull requests, checks or logs into an agent's prompt. A pull request from
// a fork lives in the base repository, so this loses nothing.
func (t *Tracker) codeHostRepo(op, repo string) (string, error) {
	r, err := parseRepo(op, repo)
	if err != nil {
		return "", err
	}
	if !strings.EqualFold(r, t.repo) {
		return "", tracker.Errorf(tracker.ErrPayload, op, "%q is not tracker.project (%s): Sortie reads pull requests, checks and reviews of that repository only", r, t.repo)
	}
	return r, nil
}

// validBranch is a loose check of git's ref-name rules: enough to refuse what no branch
// can be, with a clear error, before asking GitHub.
func validBranch(b string) bool {
	if b == "" || len(b) > 255 || strings.HasPrefix(b, "-") || strings.HasPrefix(b, "/") || strings.HasSuffix(b, "/") ||
		strings.HasSuffix(b, ".lock") || strings.Contains(b, "..") || strings.Contains(b, "//") || strings.Contains(b, "@{") {
		return false
	}
	for _, c := range b {
		if unicode.IsControl(c) || unicode.IsSpace(c) || strings.ContainsRune("~^:?*[\\", c) {
			return false
		}
	}
	return true
}

// codeHostURL is the API URL of path under repo (already checked by parseRepo).
func (t *Tracker) codeHostURL(repo, path string, query url.Values) string {
	u := *t.base
	u.Path = strings.TrimRight(t.base.Path, "/") + "/repos/" + repo + path
	u.RawQuery = query.Encode()
	return u.String()
}

// codeHostRequest reports whether rawURL is a reactions request (pull requests, checks,
// commit statuses, Actions) and names its repository and the fine-grained permission
// it needs, for statusError's advice.
func (t *Tracker) codeHostRequest(rawURL string) (repo, permission string, ok bool) {
	path := strings.TrimPrefix(pathOf(rawURL), strings.TrimRight(t.base.Path, "/"))
	rest, found := strings.CutPrefix(path, "/repos/")
	if !found {
		return "", "", false
	}
	parts := strings.Split(rest, "/")
	if len(parts) < 3 {
		return "", "", false
	}
	repo = parts[0] + "/" + parts[1]
	switch last := parts[len(parts)-1]; {
	case parts[2] == "pulls":
		return repo, "Pull requests", true
	case parts[2] == "actions":
		return repo, "Actions", true
	case parts[2] == "commits" && last == "check-runs":
		return repo, "Checks", true
	case parts[2] == "commits" && last == "status":
		return repo, "Commit statuses", true
	}
	return "", "", false
}

// callCost is what one call sent: its requests, and how many of them GitHub answered
// with a body rather than a 304.
type callCost struct{ requests, fresh int }

func (c *callCost) add(r response) {
	c.requests++
	if !r.notModified {
		c.fresh++
	}
}

func (c *callCost) notModified() bool { return c.requests > 0 && c.fresh == 0 }

// parseTime reads GitHub's RFC 3339 timestamps; anything else is the zero time.
func parseTime(s string) time.Time {
	ts, err := time.Parse(time.RFC3339, strings.TrimSpace(s))
	if err != nil {
		return time.Time{}
	}
	return ts
}
