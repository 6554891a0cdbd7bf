package fakegithub

import (
	"cmp"
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ActionsApp is the slug of the GitHub App behind GitHub Actions' check runs.
const ActionsApp = "github-actions"

// CheckRun is a check run on a commit, as the Checks API shows it. A run made by GitHub
// Actions (App ActionsApp, the default) is a workflow job, and its ID is the job's id,
// as on GitHub.
type CheckRun struct {
	ID      int64
	HeadSHA string
	Name    string
	// Status is queued, in_progress or completed (or waiting, requested, pending,
	// which only Actions uses). Conclusion is set exactly when Status is completed:
	// success, failure, neutral, cancelled, skipped, timed_out, action_required or
	// stale; "" is null.
	Status     string
	Conclusion string
	App        string // the slug of the app that made it
	// StartedAt is when it was created; CompletedAt when it completed, zero before.
	StartedAt   time.Time
	CompletedAt time.Time
	// Title and Summary are output.title and output.summary; "" is null.
	Title, Summary string
	// HTMLURL is the run's page on GitHub; DetailsURL the app's own page for it (for
	// Actions, the same job page).
	HTMLURL, DetailsURL string
}

// CheckRunOption changes a check run before AddCheckRun stores it.
type CheckRunOption func(*CheckRun)

// Completed makes the check run completed with conclusion.
func Completed(conclusion string) CheckRunOption {
	return func(c *CheckRun) { c.Status, c.Conclusion = "completed", conclusion }
}

// InProgress makes the check run in_progress.
func InProgress() CheckRunOption { return func(c *CheckRun) { c.Status = "in_progress" } }

// ByApp makes the check run another app's than GitHub Actions' (a CI service's, say,
// "circleci-checks"); it is then no Actions job and has no log.
func ByApp(slug string) CheckRunOption { return func(c *CheckRun) { c.App = slug } }

var (
	checkStatuses    = []string{"queued", "in_progress", "completed", "waiting", "requested", "pending"}
	checkConclusions = []string{"success", "failure", "neutral", "cancelled", "skipped", "timed_out", "action_required", "stale"}
)

func mustCheckState(who, status, conclusion string) {
	switch {
	case !slices.Contains(checkStatuses, status):
		panic(fmt.Sprintf("fakegithub: %s: status %q is none of %v", who, status, checkStatuses))
	case status == "completed" && !slices.Contains(checkConclusions, conclusion):
		panic(fmt.Sprintf("fakegithub: %s: a completed check run needs a conclusion, one of %v (got %q)", who, checkConclusions, conclusion))
	case status != "completed" && conclusion != "":
		panic(fmt.Sprintf("fakegithub: %s: only a completed check run has a conclusion (status %q, conclusion %q)", who, status, conclusion))
	}
}

// AddCheckRun creates check run name on commit sha (40 hex digits), now, queued and by
// GitHub Actions unless opts say otherwise, and returns it. Its id is new; for an Actions
// run it is also the job id SetJobLog and the logs route take.
func (s *Server) AddCheckRun(sha, name string, opts ...CheckRunOption) CheckRun {
	mustSHA("AddCheckRun", sha)
	s.mu.Lock()
	defer s.mu.Unlock()
	c := &CheckRun{ID: s.newID(), HeadSHA: sha, Name: name, Status: "queued", App: ActionsApp, StartedAt: s.now()}
	for _, o := range opts {
		o(c)
	}
	mustCheckState("AddCheckRun", c.Status, c.Conclusion)
	if c.Status == "completed" {
		c.CompletedAt = c.StartedAt
	}
	suite := s.suite(sha, c.App)
	switch {
	case c.App == ActionsApp:
		// The workflow run's page, with the job in it; the fake has one run per suite.
		c.HTMLURL = fmt.Sprintf("%s/actions/runs/%d/job/%d", s.webRepo(), suite, c.ID)
		c.DetailsURL = cmp.Or(c.DetailsURL, c.HTMLURL)
	default:
		c.HTMLURL = fmt.Sprintf("%s/runs/%d", s.webRepo(), c.ID)
		c.DetailsURL = cmp.Or(c.DetailsURL, fmt.Sprintf("https://ci.example.com/%s/%d", c.App, c.ID))
	}
	s.commits[sha] = true
	s.checks = append(s.checks, c)
	return *c
}

// SetCheckRun moves check run id to status and conclusion ("" unless completed), as
// the app reporting it would; completing sets completed_at to now. It panics when
// there is no such check run.
func (s *Server) SetCheckRun(id int64, status, conclusion string) {
	mustCheckState("SetCheckRun", status, conclusion)
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.mustCheckRun(id)
	c.Status, c.Conclusion, c.CompletedAt = status, conclusion, time.Time{}
	if status == "completed" {
		c.CompletedAt = s.now()
	}
}

// CheckRuns returns copies of the check runs on commit sha, oldest first.
func (s *Server) CheckRuns(sha string) []CheckRun {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []CheckRun
	for _, c := range s.checks {
		if c.HeadSHA == sha {
			out = append(out, *c)
		}
	}
	return out
}

func (s *Server) mustCheckRun(id int64) *CheckRun {
	for _, c := range s.checks {
		if c.ID == id {
			return c
		}
	}
	panic(fmt.Sprintf("fakegithub: no check run %d", id))
}

// suite is the id of app's check suite on sha, made the first time it is asked for.
func (s *Server) suite(sha, app string) int64 {
	k := sha + " " + app
	id, ok := s.suites[k]
	if !ok {
		id = s.newID()
		s.suites[k] = id
	}
	return id
}

// appID is an app's id: GitHub Actions' real one, a stable made-up one for others.
func appID(slug string) int64 {
	if slug == ActionsApp {
		return 15368
	}
	sum := sha1.Sum([]byte(slug))
	return 100_000 + int64(binary.BigEndian.Uint16(sum[:]))
}

// Status is a commit status, as the Statuses API shows it.
type Status struct {
	ID      int64
	SHA     string
	Context string // the reporter's name for it: ci/jenkins, security/scan, ...
	State   string // error, failure, pending or success
	// Description and TargetURL are "" for null.
	Description string
	TargetURL   string
	Creator     User
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

var statusStates = []string{"error", "failure", "pending", "success"}

// AddStatus reports state for context on commit sha (40 hex digits), now, by the
// account "ci-runner", with a target URL on a made-up CI host; mutate, when given,
// changes the status before it is stored. A later status for the same context
// supersedes it in the combined status, as on GitHub; all stay in the list.
func (s *Server) AddStatus(sha, context, state string, mutate ...func(*Status)) Status {
	mustSHA("AddStatus", sha)
	if !slices.Contains(statusStates, state) {
		panic(fmt.Sprintf("fakegithub: AddStatus: state %q is none of %v", state, statusStates))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	st := &Status{ID: s.newID(), SHA: sha, Context: context, State: state, Creator: s.user("ci-runner"), CreatedAt: now, UpdatedAt: now}
	st.TargetURL = fmt.Sprintf("https://ci.example.com/%s/%d", context, st.ID)
	for _, m := range mutate {
		m(st)
	}
	s.commits[sha] = true
	s.statuses = append(s.statuses, st)
	return *st
}

// resolveRef is the commit ref names: a known SHA or a unique prefix of seven or more
// of its digits, or a branch (name, heads/name or refs/heads/name).
func (s *Server) resolveRef(ref string) (string, bool) {
	if s.commits[ref] {
		return ref, true
	}
	if sha, ok := s.branches[strings.TrimPrefix(strings.TrimPrefix(ref, "refs/"), "heads/")]; ok {
		return sha, true
	}
	if len(ref) >= 7 && strings.Trim(ref, "0123456789abcdef") == "" {
		var found []string
		for sha := range s.commits {
			if strings.HasPrefix(sha, ref) {
				found = append(found, sha)
			}
		}
		if len(found) == 1 {
			return found[0], true
		}
	}
	return "", false
}

// routeCommits answers GET /commits/{ref}/{check-runs,status,statuses}; parts[0] is
// "commits", and the ref may hold slashes (heads/feature/x).
func (s *Server) routeCommits(r *http.Request, parts []string) reply {
	if len(parts) < 3 {
		return notFound()
	}
	what, ref := parts[len(parts)-1], strings.Join(parts[1:len(parts)-1], "/")
	if what != "check-runs" && what != "status" && what != "statuses" {
		return notFound()
	}
	sha, ok := s.resolveRef(ref)
	if !ok {
		return failJSON(http.StatusUnprocessableEntity, "No commit found for SHA: "+ref)
	}
	switch what {
	case "check-runs":
		return s.listCheckRuns(r, sha)
	case "status":
		return s.combinedStatus(r, sha)
	}
	return s.listStatuses(r, sha)
}

type wireCheckRun struct {
	ID           int64           `json:"id"`
	Name         string          `json:"name"`
	NodeID       string          `json:"node_id"`
	HeadSHA      string          `json:"head_sha"`
	ExternalID   string          `json:"external_id"`
	URL          string          `json:"url"`
	HTMLURL      string          `json:"html_url"`
	DetailsURL   string          `json:"details_url"`
	Status       string          `json:"status"`
	Conclusion   *string         `json:"conclusion"`
	StartedAt    *string         `json:"started_at"`
	CompletedAt  *string         `json:"completed_at"`
	Output       wireCheckOutput `json:"output"`
	CheckSuite   wireID          `json:"check_suite"`
	App          wireApp         `json:"app"`
	PullRequests []wirePRMinimal `json:"pull_requests"`
}

type wireCheckOutput struct {
	Title            *string `json:"title"`
	Summary          *string `json:"summary"`
	Text             *string `json:"text"`
	AnnotationsCount int     `json:"annotations_count"`
	AnnotationsURL   string  `json:"annotations_url"`
}

type wireID struct {
	ID int64 `json:"id"`
}

type wireApp struct {
	ID          int64    `json:"id"`
	Slug        string   `json:"slug"`
	NodeID      string   `json:"node_id"`
	Owner       wireUser `json:"owner"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	ExternalURL string   `json:"external_url"`
	HTMLURL     string   `json:"html_url"`
	CreatedAt   string   `json:"created_at"`
	UpdatedAt   string   `json:"updated_at"`
}

// wirePRMinimal is a pull request as a check run lists it.
type wirePRMinimal struct {
	ID     int64             `json:"id"`
	Number int64             `json:"number"`
	URL    string            `json:"url"`
	Head   wireBranchMinimal `json:"head"`
	Base   wireBranchMinimal `json:"base"`
}

type wireBranchMinimal struct {
	Ref  string `json:"ref"`
	SHA  string `json:"sha"`
	Repo struct {
		ID   int64  `json:"id"`
		URL  string `json:"url"`
		Name string `json:"name"`
	} `json:"repo"`
}

func (s *Server) wireApp(slug string) wireApp {
	id := appID(slug)
	since := ts(time.Date(2018, 7, 30, 9, 30, 17, 0, time.UTC))
	a := wireApp{
		ID: id, Slug: slug, NodeID: "A_" + strconv.FormatInt(id, 10), Name: slug,
		HTMLURL: "https://github.com/apps/" + slug, ExternalURL: "https://ci.example.com/" + slug,
		CreatedAt: since, UpdatedAt: since,
		Owner: s.wireUser(User{Login: slug, ID: id + 1, Type: "Organization"}),
	}
	if slug == ActionsApp {
		a.Name, a.ExternalURL = "GitHub Actions", "https://help.github.com/en/actions"
		a.Owner = s.wireUser(User{Login: "github", ID: 9919, Type: "Organization"})
	}
	return a
}

func (s *Server) wireBranchMinimal(b Branch) wireBranchMinimal {
	r := s.wireRepo(b.Repo)
	w := wireBranchMinimal{Ref: b.Ref, SHA: b.SHA}
	w.Repo.ID, w.Repo.URL, w.Repo.Name = r.ID, r.URL, r.Name
	return w
}

func (s *Server) wireCheckRun(c *CheckRun) wireCheckRun {
	id := strconv.FormatInt(c.ID, 10)
	w := wireCheckRun{
		ID: c.ID, Name: c.Name, NodeID: "CR_" + id, HeadSHA: c.HeadSHA, ExternalID: SHA(id)[:32],
		URL: s.apiRepo() + "/check-runs/" + id, HTMLURL: c.HTMLURL, DetailsURL: c.DetailsURL,
		Status: c.Status, Conclusion: strOrNull(c.Conclusion), StartedAt: tsOrNull(c.StartedAt),
		CompletedAt: tsOrNull(c.CompletedAt),
		Output: wireCheckOutput{
			Title: strOrNull(c.Title), Summary: strOrNull(c.Summary),
			AnnotationsURL: s.apiRepo() + "/check-runs/" + id + "/annotations",
		},
		CheckSuite: wireID{s.suite(c.HeadSHA, c.App)}, App: s.wireApp(c.App), PullRequests: []wirePRMinimal{},
	}
	if c.Conclusion == "failure" {
		// Actions makes an annotation of the step's ##[error].
		w.Output.AnnotationsCount = 1
	}
	for _, n := range slices.Sorted(maps.Keys(s.pulls)) {
		p := s.pulls[n]
		if is := s.issues[n]; is != nil && is.PR && is.State == "open" && p.head.SHA == c.HeadSHA && p.head.Repo == p.base.Repo {
			w.PullRequests = append(w.PullRequests, wirePRMinimal{
				ID: p.id, Number: n, URL: s.apiRepo() + "/pulls/" + strconv.FormatInt(n, 10),
				Head: s.wireBranchMinimal(p.head), Base: s.wireBranchMinimal(p.base),
			})
		}
	}
	return w
}

// listCheckRuns lists sha's check runs, newest first (GitHub documents no order):
// filter=latest (the default) keeps the newest run of each name and app, as a re-run
// supersedes a run; check_name, status and app_id narrow the list.
func (s *Server) listCheckRuns(r *http.Request, sha string) reply {
	q := r.URL.Query()
	filter := cmp.Or(q.Get("filter"), "latest")
	if filter != "latest" && filter != "all" {
		return failJSON(http.StatusUnprocessableEntity, "Validation Failed")
	}
	seen := map[string]bool{}
	var list []*CheckRun
	for _, c := range slices.Backward(s.checks) {
		if c.HeadSHA != sha {
			continue
		}
		// The latest run of a name is chosen before the other filters: a re-run in
		// progress hides the failure it replaces even from status=completed.
		key := c.App + "\x00" + c.Name
		superseded := filter == "latest" && seen[key]
		seen[key] = true
		switch {
		case superseded,
			q.Has("check_name") && c.Name != q.Get("check_name"),
			q.Has("status") && c.Status != q.Get("status"),
			q.Has("app_id") && strconv.FormatInt(appID(c.App), 10) != q.Get("app_id"):
			continue
		}
		list = append(list, c)
	}
	lo, hi, link := s.paginate(r, len(list))
	runs := make([]wireCheckRun, 0, hi-lo)
	for _, c := range list[lo:hi] {
		runs = append(runs, s.wireCheckRun(c))
	}
	return reply{status: http.StatusOK, body: jsonBody(map[string]any{"total_count": len(list), "check_runs": runs}), link: link}
}

type wireStatus struct {
	URL         string    `json:"url"`
	AvatarURL   string    `json:"avatar_url"`
	ID          int64     `json:"id"`
	NodeID      string    `json:"node_id"`
	State       string    `json:"state"`
	Description *string   `json:"description"`
	TargetURL   *string   `json:"target_url"`
	Context     string    `json:"context"`
	CreatedAt   string    `json:"created_at"`
	UpdatedAt   string    `json:"updated_at"`
	Creator     *wireUser `json:"creator,omitempty"` // in the list, not the combined status
}

func (s *Server) wireStatus(st *Status, withCreator bool) wireStatus {
	creator := s.wireUser(st.Creator)
	w := wireStatus{
		URL: s.apiRepo() + "/statuses/" + st.SHA, AvatarURL: creator.AvatarURL, ID: st.ID,
		NodeID: "SC_" + strconv.FormatInt(st.ID, 10), State: st.State, Description: strOrNull(st.Description),
		TargetURL: strOrNull(st.TargetURL), Context: st.Context, CreatedAt: ts(st.CreatedAt), UpdatedAt: ts(st.UpdatedAt),
	}
	if withCreator {
		w.Creator = &creator
	}
	return w
}

// combinedStatus is sha's latest status of each context, newest first, and their
// combined state: failure when any is error or failure, else pending when any is
// pending or there are none, else success. Pages cut the statuses; total_count counts
// them all.
func (s *Server) combinedStatus(r *http.Request, sha string) reply {
	seen := map[string]bool{}
	var latest []*Status
	for _, st := range slices.Backward(s.statuses) {
		if st.SHA == sha && !seen[st.Context] {
			seen[st.Context] = true
			latest = append(latest, st)
		}
	}
	state := "success"
	switch {
	case slices.ContainsFunc(latest, func(st *Status) bool { return st.State == "error" || st.State == "failure" }):
		state = "failure"
	case len(latest) == 0 || slices.ContainsFunc(latest, func(st *Status) bool { return st.State == "pending" }):
		state = "pending"
	}
	lo, hi, link := s.paginate(r, len(latest))
	out := make([]wireStatus, 0, hi-lo)
	for _, st := range latest[lo:hi] {
		out = append(out, s.wireStatus(st, false))
	}
	body := map[string]any{
		"state": state, "statuses": out, "sha": sha, "total_count": len(latest),
		"repository": s.wireRepo(s.owner + "/" + s.repo),
		"commit_url": s.apiRepo() + "/commits/" + sha, "url": s.apiRepo() + "/commits/" + sha + "/status",
	}
	return reply{status: http.StatusOK, body: jsonBody(body), link: link}
}

// listStatuses is every status on sha, newest first, as GitHub lists them.
func (s *Server) listStatuses(r *http.Request, sha string) reply {
	var items []any
	for _, st := range slices.Backward(s.statuses) {
		if st.SHA == sha {
			items = append(items, s.wireStatus(st, true))
		}
	}
	if items == nil {
		items = []any{}
	}
	return s.pageAny(r, items)
}
