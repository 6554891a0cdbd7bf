// Package jira is the tracker adapter for Jira (kind "jira"): Jira Cloud through REST v3
// (token-paged /search/jql, ADF text) and Jira Server/Data Center through REST v2
// (offset-paged /search, plain text), chosen by `jira.api`. It owns the HTTP traffic with
// one Jira site: auth, JQL, paging, rate limits, normalisation into tracker.Issue, status
// transitions and comments. Which issues to run and when is the orchestrator's business.
//
// Configuration, permissions and errors are documented for operators in
// docs/trackers/jira.md.
package jira

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"sortie/internal/tracker"
)

// Flavour names for `jira.api`.
const (
	APICloud      = "cloud"
	APIDataCenter = "datacenter"
)

// Defaults an operator can change in the `jira:` block.
const (
	DefaultPageSize = 50
	DefaultTimeout  = 30 * time.Second
	// MaxPages bounds one paged listing; a query that needs more is too broad to poll.
	MaxPages = 200
	// statesBatch is how many issues one state lookup asks for (bulkfetch takes 100).
	statesBatch = 100
)

// DefaultActiveStates are the candidate states when tracker.active_states is empty:
// those of Jira's default software workflow.
var DefaultActiveStates = []string{"Backlog", "Selected for Development", "In Progress"}

var (
	_ tracker.Tracker     = (*Tracker)(nil)
	_ tracker.RateLimiter = (*Tracker)(nil)
	_ tracker.Account     = (*Tracker)(nil)
	_ tracker.Labeler     = (*Tracker)(nil)
)

// Tracker talks to one Jira site about one project. It is safe for concurrent use and
// holds no issue state: every call asks Jira. Build it with New.
type Tracker struct {
	c            *client
	cloud        bool
	api          string // "/rest/api/3" or "/rest/api/2"
	project      string
	activeStates []string
	filter       string
	pageSize     int

	selfMu sync.Mutex
	self   *tracker.Identity // the token's account, once known (Self)
}

// New builds a Jira tracker from cfg: Endpoint is the site URL (https://example.atlassian.net
// or the Data Center base URL), APIKey is email:api_token on Cloud and a personal access
// token on Data Center, Project is a project key. Options come from the `jira:` block:
// api (cloud|datacenter), page_size and timeout_ms. New sends no request.
func New(cfg tracker.Config) (tracker.Tracker, error) {
	return newTracker(cfg, time.Now, nil)
}

// ValidateConfig checks everything New checks without building a tracker, for
// `sortie validate`. Its errors name the WORKFLOW.md key and the fix.
func ValidateConfig(cfg tracker.Config) error {
	_, err := newTracker(cfg, time.Now, nil)
	return err
}

func newTracker(cfg tracker.Config, now func() time.Time, transport http.RoundTripper) (*Tracker, error) {
	opts, err := parseOptions(cfg.Options)
	if err != nil {
		return nil, err
	}
	base, err := parseEndpoint(cfg.Endpoint)
	if err != nil {
		return nil, err
	}
	if err := ValidateProject(cfg.Project); err != nil {
		return nil, err
	}
	auth, err := authHeader(cfg.APIKey, opts.cloud)
	if err != nil {
		return nil, err
	}
	if err := checkQueryFilter(cfg.QueryFilter); err != nil {
		return nil, err
	}
	active := slices.Clone(cfg.ActiveStates)
	if len(active) == 0 {
		active = slices.Clone(DefaultActiveStates)
	}
	ua := cfg.UserAgent
	if ua == "" {
		ua = "sortie"
	}
	t := &Tracker{
		c: &client{
			base: base, auth: auth, userAgent: ua, now: now,
			http: &http.Client{Timeout: opts.timeout, Transport: transport},
		},
		cloud:        opts.cloud,
		api:          "/rest/api/2",
		project:      strings.ToUpper(strings.TrimSpace(cfg.Project)),
		activeStates: active,
		filter:       strings.TrimSpace(cfg.QueryFilter),
		pageSize:     opts.pageSize,
	}
	if opts.cloud {
		t.api = "/rest/api/3"
	}
	return t, nil
}

func parseEndpoint(raw string) (string, error) {
	s := strings.TrimRight(strings.TrimSpace(raw), "/")
	if s == "" {
		return "", fmt.Errorf("config: tracker.endpoint: Jira needs the site URL, such as https://your-site.atlassian.net (Cloud) or https://jira.example.com (Data Center)")
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return "", fmt.Errorf("config: tracker.endpoint: must be an http(s) URL such as https://your-site.atlassian.net (got %q)", raw)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("config: tracker.endpoint: must be a plain site URL without credentials, query or fragment; put the token in tracker.api_key")
	}
	if strings.Contains(u.Path, "/rest/") {
		return "", fmt.Errorf("config: tracker.endpoint: must be the site URL without /rest/api/… (got %q); Sortie adds the API path itself", raw)
	}
	return s, nil
}

// authHeader builds the Authorization header: Basic email:api_token on Cloud, Bearer
// personal access token on Data Center. Errors never include the key.
func authHeader(key string, cloud bool) (string, error) {
	k := strings.TrimSpace(key)
	if k == "" {
		return "", fmt.Errorf("config: tracker.api_key: Jira needs a token; set api_key: $JIRA_API_KEY and export JIRA_API_KEY (Cloud: email:api_token; Data Center: a personal access token)")
	}
	if !cloud {
		return "Bearer " + k, nil
	}
	email, token, ok := strings.Cut(k, ":")
	if !ok || strings.TrimSpace(email) == "" || strings.TrimSpace(token) == "" || !strings.Contains(email, "@") {
		return "", fmt.Errorf("config: tracker.api_key: Jira Cloud needs email:api_token (the account's e-mail, a colon, then an API token from id.atlassian.com); the value given is not in that form. For Data Center personal access tokens set jira.api: datacenter")
	}
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(k)), nil
}

// RateLimits returns Jira's budget as its last response reported it; empty until a
// response carries rate-limit headers or a 429 arrives.
func (t *Tracker) RateLimits() []tracker.RateLimit { return t.c.rateLimits() }

// issueRef accepts a numeric issue id or an issue key and rejects anything else, so an id
// from an agent cannot walk to another API path.
var issueRef = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(?:[0-9]{1,20}|[A-Za-z][A-Za-z0-9_]*-[0-9]{1,20})$`)
})

// issuePath is the API path of one issue. A key of another project than
// tracker.project is refused before Jira is asked: the token may see other projects,
// Sortie and its agents must not.
func (t *Tracker) issuePath(op, id string) (string, error) {
	if !issueRef().MatchString(id) {
		return "", tracker.Errorf(tracker.ErrNotFound, op, "%q is not a Jira issue id or key (such as 10001 or PROJ-1)", id)
	}
	if prefix, _, isKey := strings.Cut(id, "-"); isKey && !strings.EqualFold(prefix, t.project) {
		return "", &tracker.Error{Kind: tracker.ErrNotFound, Op: op, Err: tracker.ErrOutOfProject,
			Message: fmt.Sprintf("issue %s is not in project %s", id, t.project)}
	}
	return t.api + "/issue/" + url.PathEscape(id), nil
}

// FetchCandidateIssues returns the issues of the project in the active states that match
// query_filter, with nil comments. It costs one request per page.
func (t *Tracker) FetchCandidateIssues(ctx context.Context) ([]tracker.Issue, error) {
	const op = "fetch_candidates"
	wire, err := t.search(ctx, op, candidatesJQL(t.project, t.activeStates, t.filter), issueFields)
	if err != nil {
		return nil, err
	}
	out := make([]tracker.Issue, 0, len(wire))
	for i := range wire {
		is, err := normalize(&wire[i], t.c.base)
		if err != nil {
			return nil, &tracker.Error{Kind: tracker.ErrPayload, Op: op, Err: err}
		}
		out = append(out, is)
	}
	return out, nil
}

// search runs a JQL query to the end, page by page: by nextPageToken on Cloud, by
// startAt on Data Center.
func (t *Tracker) search(ctx context.Context, op, jql, fields string) ([]wireIssue, error) {
	var all []wireIssue
	var token string
	startAt := 0
	for page := 0; ; page++ {
		if page == MaxPages {
			return nil, tracker.Errorf(tracker.ErrAPI, op, "the query matches more than %d pages of %d issues; narrow tracker.query_filter", MaxPages, t.pageSize)
		}
		q := url.Values{"jql": {jql}, "fields": {fields}, "maxResults": {strconv.Itoa(t.pageSize)}}
		if t.cloud {
			if token != "" {
				q.Set("nextPageToken", token)
			}
			var resp struct {
				Issues        []wireIssue `json:"issues"`
				NextPageToken string      `json:"nextPageToken"`
				IsLast        *bool       `json:"isLast"`
			}
			if err := t.c.do(ctx, op, http.MethodGet, t.api+"/search/jql", q, nil, &resp); err != nil {
				return nil, err
			}
			all = append(all, resp.Issues...)
			if resp.NextPageToken == "" || (resp.IsLast != nil && *resp.IsLast) {
				if resp.IsLast != nil && !*resp.IsLast {
					return nil, tracker.Errorf(tracker.ErrMissingEndCursor, op, "Jira said isLast=false without a nextPageToken")
				}
				return all, nil
			}
			if resp.NextPageToken == token {
				return nil, tracker.Errorf(tracker.ErrMissingEndCursor, op, "Jira returned the same nextPageToken twice")
			}
			token = resp.NextPageToken
			continue
		}
		q.Set("startAt", strconv.Itoa(startAt))
		q.Set("validateQuery", "warn") // unknown keys in a lookup are not an error
		var resp struct {
			StartAt int         `json:"startAt"`
			Total   int         `json:"total"`
			Issues  []wireIssue `json:"issues"`
		}
		if err := t.c.do(ctx, op, http.MethodGet, t.api+"/search", q, nil, &resp); err != nil {
			return nil, err
		}
		all = append(all, resp.Issues...)
		// The server may cap maxResults below what was asked: advance by what came.
		startAt += len(resp.Issues)
		if len(resp.Issues) == 0 || startAt >= resp.Total {
			return all, nil
		}
	}
}

// FetchIssueByID returns one issue with its comments. An unknown id, or an issue of
// another project, is tracker_not_found.
func (t *Tracker) FetchIssueByID(ctx context.Context, id string) (tracker.Issue, error) {
	const op = "fetch_issue"
	p, err := t.issuePath(op, id)
	if err != nil {
		return tracker.Issue{}, err
	}
	var w wireIssue
	if err := t.c.do(ctx, op, http.MethodGet, p, url.Values{"fields": {issueFields}}, nil, &w); err != nil {
		return tracker.Issue{}, err
	}
	is, err := normalize(&w, t.c.base)
	if err != nil {
		return tracker.Issue{}, &tracker.Error{Kind: tracker.ErrPayload, Op: op, Err: err}
	}
	// Defence in depth: the token may see other projects; the agent must not.
	if prefix, _, _ := strings.Cut(is.Identifier, "-"); !strings.EqualFold(prefix, t.project) {
		return tracker.Issue{}, &tracker.Error{Kind: tracker.ErrNotFound, Op: op, Err: tracker.ErrOutOfProject,
			Message: fmt.Sprintf("issue %s is not in project %s", is.Identifier, t.project)}
	}
	if is.Comments, err = t.FetchIssueComments(ctx, id); err != nil {
		return tracker.Issue{}, err
	}
	return is, nil
}

// FetchIssueStatesByIDs returns id → status name for numeric issue ids; issues Jira does
// not return are omitted. Cloud uses the bulk-fetch endpoint, which skips unknown ids.
func (t *Tracker) FetchIssueStatesByIDs(ctx context.Context, ids []string) (map[string]string, error) {
	return t.states(ctx, "fetch_states_by_ids", ids, true)
}

// FetchIssueStatesByIdentifiers returns key → status name; unknown keys are omitted. Keys
// are matched case-insensitively and returned as they were asked for.
func (t *Tracker) FetchIssueStatesByIdentifiers(ctx context.Context, identifiers []string) (map[string]string, error) {
	return t.states(ctx, "fetch_states_by_identifiers", identifiers, false)
}

var numericID = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9]{1,20}$`) })

func (t *Tracker) states(ctx context.Context, op string, refs []string, byID bool) (map[string]string, error) {
	out := make(map[string]string, len(refs))
	asked := make(map[string][]string, len(refs)) // canonical → as asked
	var valid []string
	for _, r := range refs {
		if !issueRef().MatchString(r) || numericID().MatchString(r) != byID {
			continue // cannot exist: omitted, as an unknown issue is
		}
		c := strings.ToUpper(r)
		if _, dup := asked[c]; !dup {
			valid = append(valid, c)
		}
		asked[c] = append(asked[c], r)
	}
	for batch := range slices.Chunk(valid, statesBatch) {
		var issues []wireIssue
		if t.cloud {
			var resp struct {
				Issues []wireIssue `json:"issues"`
			}
			body := map[string]any{"issueIdsOrKeys": batch, "fields": []string{"status"}}
			if err := t.c.do(ctx, op, http.MethodPost, t.api+"/issue/bulkfetch", nil, body, &resp); err != nil {
				return nil, err
			}
			issues = resp.Issues
		} else {
			jql := keysJQL(batch)
			if byID {
				jql = "id IN (" + strings.Join(batch, ", ") + ")" // digits only, checked above
			}
			var err error
			if issues, err = t.search(ctx, op, jql, "status"); err != nil {
				return nil, err
			}
		}
		for i := range issues {
			k := strings.ToUpper(issues[i].Key)
			if byID {
				k = issues[i].ID
			}
			if issues[i].Fields.Status == nil {
				continue
			}
			for _, r := range asked[k] {
				out[r] = issues[i].Fields.Status.Name
			}
		}
	}
	return out, nil
}

// Self returns the account the token acts as (GET /myself), asked once and kept: on
// Cloud its accountId and e-mail, on Data Center its user key and name.
func (t *Tracker) Self(ctx context.Context) (tracker.Identity, error) {
	const op = "self"
	t.selfMu.Lock()
	defer t.selfMu.Unlock()
	if t.self != nil {
		return *t.self, nil
	}
	var me wireUser
	if err := t.c.do(ctx, op, http.MethodGet, t.api+"/myself", nil, nil, &me); err != nil {
		return tracker.Identity{}, err
	}
	id := me.identity()
	if id.ID == "" && id.Login == "" {
		return tracker.Identity{}, tracker.Errorf(tracker.ErrPayload, op, "Jira's GET %s/myself answer names no accountId, key or name", t.api)
	}
	t.self = &id
	return id, nil
}
