package fakegithub

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// wireUser, wireLabel, wireIssue and wireComment are GitHub REST's JSON shapes.
type wireUser struct {
	Login     string `json:"login"`
	ID        int64  `json:"id"`
	NodeID    string `json:"node_id"`
	AvatarURL string `json:"avatar_url"`
	URL       string `json:"url"`
	HTMLURL   string `json:"html_url"`
	Type      string `json:"type"`
	SiteAdmin bool   `json:"site_admin"`
}

type wireLabel struct {
	ID      int64  `json:"id"`
	Name    string `json:"name"`
	Color   string `json:"color"`
	Default bool   `json:"default"`
}

type wireIssue struct {
	ID            int64       `json:"id"`
	NodeID        string      `json:"node_id"`
	Number        int64       `json:"number"`
	Title         string      `json:"title"`
	Body          *string     `json:"body"`
	State         string      `json:"state"`
	StateReason   *string     `json:"state_reason"`
	HTMLURL       string      `json:"html_url"`
	URL           string      `json:"url"`
	RepositoryURL string      `json:"repository_url"`
	Labels        []wireLabel `json:"labels"`
	User          wireUser    `json:"user"`
	Assignee      *wireUser   `json:"assignee"`
	Assignees     []wireUser  `json:"assignees"`
	Type          any         `json:"type"`
	Locked        bool        `json:"locked"`
	Comments      int         `json:"comments"`
	CreatedAt     string      `json:"created_at"`
	UpdatedAt     string      `json:"updated_at"`
	ClosedAt      *string     `json:"closed_at"`
	Draft         *bool       `json:"draft,omitempty"`        // only on pull requests
	PullRequest   *wirePR     `json:"pull_request,omitempty"` // only on pull requests
}

// wirePR is the pull_request key of an issue that is a pull request.
type wirePR struct {
	URL      string  `json:"url"`
	HTMLURL  string  `json:"html_url"`
	DiffURL  string  `json:"diff_url"`
	PatchURL string  `json:"patch_url"`
	MergedAt *string `json:"merged_at"`
}

type wireComment struct {
	ID                int64    `json:"id"`
	NodeID            string   `json:"node_id"`
	HTMLURL           string   `json:"html_url"`
	User              wireUser `json:"user"`
	Body              string   `json:"body"`
	CreatedAt         string   `json:"created_at"`
	UpdatedAt         string   `json:"updated_at"`
	AuthorAssociation string   `json:"author_association"`
}

func ts(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// tsOrNull is t, or null when it is zero.
func tsOrNull(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	v := ts(t)
	return &v
}

// strOrNull is v, or null when it is empty.
func strOrNull(v string) *string {
	if v == "" {
		return nil
	}
	return &v
}

func (s *Server) apiRepo() string { return s.srv.URL + "/repos/" + s.owner + "/" + s.repo }

func (s *Server) webRepo() string { return "https://github.com/" + s.owner + "/" + s.repo }

func (s *Server) webIssue(n int64) string {
	return fmt.Sprintf("https://github.com/%s/%s/issues/%d", s.owner, s.repo, n)
}

func (s *Server) wireUser(u User) wireUser {
	w := wireUser{
		Login: u.Login, ID: u.ID, Type: u.Type,
		AvatarURL: fmt.Sprintf("https://avatars.githubusercontent.com/u/%d?v=4", u.ID),
		URL:       s.srv.URL + "/users/" + u.Login, HTMLURL: "https://github.com/" + u.Login,
	}
	switch u.Type {
	case "Bot":
		w.NodeID = "BOT_" + strconv.FormatInt(u.ID, 10)
		// A GitHub App's bot account is shown at the app's page.
		w.HTMLURL = "https://github.com/apps/" + strings.TrimSuffix(u.Login, "[bot]")
	case "Organization":
		w.NodeID = "O_" + strconv.FormatInt(u.ID, 10)
	default:
		w.NodeID = "U_" + strconv.FormatInt(u.ID, 10)
	}
	return w
}

// labelID is a label's id, the same for the same name (case-insensitively) everywhere.
func (s *Server) labelID(name string) int64 {
	k := strings.ToLower(name)
	id, ok := s.labelIDs[k]
	if !ok {
		id = int64(9000 + len(s.labelIDs))
		s.labelIDs[k] = id
	}
	return id
}

func (s *Server) wireLabels(names []string) []wireLabel {
	labels := make([]wireLabel, 0, len(names))
	for _, l := range names {
		labels = append(labels, wireLabel{ID: s.labelID(l), Name: l, Color: "ededed"})
	}
	return labels
}

func (s *Server) wire(is *Issue) wireIssue {
	w := wireIssue{
		ID: is.ID, NodeID: "I_" + strconv.FormatInt(is.ID, 10), Number: is.Number, Title: is.Title,
		State: is.State, HTMLURL: s.webIssue(is.Number),
		URL:           s.apiRepo() + "/issues/" + strconv.FormatInt(is.Number, 10),
		RepositoryURL: s.apiRepo(), Labels: s.wireLabels(is.Labels), User: s.wireUser(is.User), Assignees: []wireUser{},
		Comments: len(s.comments[is.Number]), CreatedAt: ts(is.CreatedAt), UpdatedAt: ts(is.UpdatedAt),
		Body: strOrNull(is.Body), StateReason: strOrNull(is.StateReason), ClosedAt: tsOrNull(is.ClosedAt),
	}
	if is.PR {
		w.HTMLURL = strings.Replace(w.HTMLURL, "/issues/", "/pull/", 1)
		w.PullRequest = &wirePR{
			URL: s.apiRepo() + "/pulls/" + strconv.FormatInt(is.Number, 10), HTMLURL: w.HTMLURL,
			DiffURL: w.HTMLURL + ".diff", PatchURL: w.HTMLURL + ".patch",
		}
		draft := false
		if p := s.pulls[is.Number]; p != nil {
			draft = p.draft
			w.PullRequest.MergedAt = tsOrNull(p.mergedAt)
		}
		w.Draft = &draft
	}
	return w
}

func (s *Server) wireComment(number int64, c *Comment) wireComment {
	return wireComment{
		ID: c.ID, NodeID: "IC_" + strconv.FormatInt(c.ID, 10),
		HTMLURL: s.webIssue(number) + "#issuecomment-" + strconv.FormatInt(c.ID, 10),
		User:    s.wireUser(c.User), Body: c.Body, CreatedAt: ts(c.CreatedAt), UpdatedAt: ts(c.CreatedAt),
		AuthorAssociation: c.AuthorAssociation,
	}
}

// reply is a route's answer to an authorised request.
type reply struct {
	status   int
	body     []byte // JSON; nil for none
	link     string // the Link header, when there are more pages
	location string // the Location header of a redirect
}

func okJSON(v any) reply { return reply{status: http.StatusOK, body: jsonBody(v)} }

func failJSON(status int, msg string) reply { return reply{status: status, body: errBody(msg)} }

func notFound() reply { return failJSON(http.StatusNotFound, "Not Found") }

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counts.Requests++
	s.log = append(s.log, r.Method+" "+r.URL.RequestURI())
	if hook := s.hook; hook != nil {
		s.mu.Unlock()
		done := hook(w, r)
		s.mu.Lock()
		if done {
			return
		}
	}
	if strings.HasPrefix(r.URL.Path, blobPrefix) {
		// Blob storage, not the API: no token, no rate limit.
		s.serveBlob(w, r)
		return
	}
	if r.Header.Get("User-Agent") == "" || r.Header.Get("Accept") != "application/vnd.github+json" {
		fail(w, http.StatusBadRequest, "missing User-Agent or Accept")
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+Token {
		fail(w, http.StatusUnauthorized, "Bad credentials")
		return
	}
	resource := "core"
	if strings.HasPrefix(r.URL.Path, "/search/") {
		resource = "search"
	}
	b := s.limits[resource]
	if now := s.clock(); !now.Before(b.reset) {
		b.remaining, b.reset = b.limit, now.Add(time.Hour)
	}
	h := w.Header()
	h.Set("X-RateLimit-Limit", strconv.Itoa(b.limit))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(b.reset.Unix(), 10))
	h.Set("X-RateLimit-Resource", resource)
	if b.remaining <= 0 {
		h.Set("X-RateLimit-Remaining", "0")
		fail(w, http.StatusForbidden, "API rate limit exceeded for user ID 1. If you reach out to GitHub Support for help, please include the request ID.")
		return
	}

	rep := s.route(r)
	if rep.status == http.StatusOK && r.Method == http.MethodGet {
		sum := sha256.Sum256(rep.body)
		etag := `W/"` + hex.EncodeToString(sum[:8]) + `"`
		h.Set("ETag", etag)
		if rep.link != "" {
			h.Set("Link", rep.link)
		}
		if r.Header.Get("If-None-Match") == etag {
			// Conditional hit: GitHub does not charge a 304.
			s.counts.NotModified++
			h.Set("X-RateLimit-Remaining", strconv.Itoa(b.remaining))
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	b.remaining--
	s.counts.Charged++
	h.Set("X-RateLimit-Remaining", strconv.Itoa(b.remaining))
	if rep.location != "" {
		h.Set("Location", rep.location)
	}
	if rep.body != nil {
		h.Set("Content-Type", "application/json; charset=utf-8")
	}
	w.WriteHeader(rep.status)
	_, _ = w.Write(rep.body)
}

// fail answers with GitHub's error shape.
func fail(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"message": msg, "documentation_url": "https://docs.github.com/rest"})
}

func jsonBody(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

func errBody(msg string) []byte { return jsonBody(map[string]string{"message": msg}) }

// route answers an authorised request. The lock is held.
func (s *Server) route(r *http.Request) reply {
	prefix := "/repos/" + s.owner + "/" + s.repo
	p := r.URL.Path
	if p == "/search/issues" && r.Method == http.MethodGet {
		return s.search(r)
	}
	if p == "/user" && r.Method == http.MethodGet {
		return okJSON(s.wireUser(s.users[BotLogin]))
	}
	if !strings.HasPrefix(p, prefix+"/") {
		return notFound()
	}
	parts := strings.Split(strings.TrimPrefix(p, prefix+"/"), "/")
	switch parts[0] {
	case "issues":
		return s.routeIssues(r, parts)
	case "pulls":
		if r.Method != http.MethodGet {
			return notFound()
		}
		return s.routePulls(r, parts)
	case "commits":
		if r.Method != http.MethodGet {
			return notFound()
		}
		return s.routeCommits(r, parts)
	case "actions":
		if r.Method != http.MethodGet {
			return notFound()
		}
		return s.routeActions(r, parts)
	}
	return notFound()
}

// routeIssues answers under /issues; parts[0] is "issues".
func (s *Server) routeIssues(r *http.Request, parts []string) reply {
	if len(parts) == 1 && r.Method == http.MethodGet {
		var list []*Issue
		for _, is := range s.issues {
			if st := r.URL.Query().Get("state"); st == "all" || st == is.State || st == "" && is.State == "open" {
				list = append(list, is)
			}
		}
		return s.page(r, list)
	}
	if len(parts) < 2 {
		return notFound()
	}
	num, err := strconv.ParseInt(parts[1], 10, 64)
	is := s.issues[num]
	if err != nil || is == nil {
		return notFound()
	}
	switch {
	case len(parts) == 2 && r.Method == http.MethodGet:
		return okJSON(s.wire(is))
	case len(parts) == 2 && r.Method == http.MethodPatch:
		var patch struct {
			Labels      *[]string `json:"labels"`
			State       *string   `json:"state"`
			StateReason *string   `json:"state_reason"`
		}
		if err := json.NewDecoder(r.Body).Decode(&patch); err != nil {
			return failJSON(http.StatusBadRequest, "Problems parsing JSON")
		}
		if patch.State != nil && *patch.State != "open" && *patch.State != "closed" {
			return failJSON(http.StatusUnprocessableEntity, "Validation Failed")
		}
		if patch.Labels != nil {
			is.Labels = slices.Clone(*patch.Labels)
		}
		if patch.State != nil {
			reason := ""
			if patch.StateReason != nil {
				reason = *patch.StateReason
			}
			s.setState(is, *patch.State, reason)
		}
		s.bump(is)
		return okJSON(s.wire(is))
	case len(parts) == 3 && parts[2] == "comments" && r.Method == http.MethodGet:
		cs := s.comments[num]
		items := make([]any, len(cs))
		for i, c := range cs {
			items[i] = s.wireComment(num, c)
		}
		return s.pageAny(r, items)
	case len(parts) == 3 && parts[2] == "comments" && r.Method == http.MethodPost:
		var c struct {
			Body *string `json:"body"`
		}
		if err := json.NewDecoder(r.Body).Decode(&c); err != nil || c.Body == nil {
			return failJSON(http.StatusUnprocessableEntity, "Validation Failed")
		}
		// The token's account can label and close issues, so it is a collaborator.
		nc := &Comment{ID: s.newID(), User: s.users[BotLogin], Body: *c.Body, AuthorAssociation: "COLLABORATOR", CreatedAt: s.now()}
		s.comments[num] = append(s.comments[num], nc)
		s.bump(is)
		return reply{status: http.StatusCreated, body: jsonBody(s.wireComment(num, nc))}
	case len(parts) == 3 && parts[2] == "labels" && r.Method == http.MethodPost:
		// Add labels: each one the issue lacks (compared case-insensitively) is added,
		// and made in the repository when it has none by that name; the answer is
		// every label of the issue. GitHub refuses a name over 50 characters.
		var add struct {
			Labels *[]string `json:"labels"`
		}
		if err := json.NewDecoder(r.Body).Decode(&add); err != nil {
			return failJSON(http.StatusBadRequest, "Problems parsing JSON")
		}
		if add.Labels == nil {
			return failJSON(http.StatusUnprocessableEntity, "Validation Failed")
		}
		for _, l := range *add.Labels {
			if strings.TrimSpace(l) == "" || utf8.RuneCountInString(l) > 50 {
				return failJSON(http.StatusUnprocessableEntity, "Validation Failed")
			}
		}
		changed := false
		for _, l := range *add.Labels {
			if !slices.ContainsFunc(is.Labels, func(x string) bool { return strings.EqualFold(x, l) }) {
				is.Labels = append(is.Labels, l)
				changed = true
			}
		}
		if changed {
			s.bump(is)
		}
		return okJSON(s.wireLabels(is.Labels))
	case len(parts) == 3 && parts[2] == "parent" && r.Method == http.MethodGet:
		pn, ok := s.parent[num]
		if !ok || s.issues[pn] == nil {
			return notFound()
		}
		return okJSON(s.wire(s.issues[pn]))
	case len(parts) == 4 && parts[2] == "dependencies" && parts[3] == "blocked_by" && r.Method == http.MethodGet:
		var list []*Issue
		for _, bn := range s.blocked[num] {
			if b := s.issues[bn]; b != nil {
				list = append(list, b)
			}
		}
		return s.page(r, list)
	}
	return notFound()
}

// search evaluates the qualifiers the adapter sends: label:NAME (or label:"NAME"),
// every one required; is:issue, which leaves out pull requests; is:open. Others, repo:
// among them, are ignored. Results come in number order, in one page.
func (s *Server) search(r *http.Request) reply {
	q := r.URL.Query().Get("q")
	var want []string
	for _, term := range strings.Fields(q) {
		if l, ok := strings.CutPrefix(term, "label:"); ok {
			want = append(want, strings.Trim(l, `"`))
		}
	}
	items := []wireIssue{}
	for _, n := range s.sortedNumbers() {
		is := s.issues[n]
		if is.PR && strings.Contains(q, "is:issue") || strings.Contains(q, "is:open") && is.State != "open" {
			continue
		}
		ok := true
		for _, l := range want {
			ok = ok && slices.ContainsFunc(is.Labels, func(x string) bool { return strings.EqualFold(x, l) })
		}
		if ok {
			items = append(items, s.wire(is))
		}
	}
	return okJSON(map[string]any{"total_count": len(items), "incomplete_results": false, "items": items})
}

func (s *Server) sortedNumbers() []int64 {
	nums := make([]int64, 0, len(s.issues))
	for n := range s.issues {
		nums = append(nums, n)
	}
	slices.Sort(nums)
	return nums
}

// page lists issues in number order, in pages.
func (s *Server) page(r *http.Request, list []*Issue) reply {
	slices.SortFunc(list, func(a, b *Issue) int { return int(a.Number - b.Number) })
	items := make([]any, len(list))
	for i, is := range list {
		items[i] = s.wire(is)
	}
	return s.pageAny(r, items)
}

// pageAny answers one page of items as a JSON array.
func (s *Server) pageAny(r *http.Request, items []any) reply {
	lo, hi, link := s.paginate(r, len(items))
	return reply{status: http.StatusOK, body: jsonBody(items[lo:hi]), link: link}
}

// paginate cuts n items into per_page pages (default 30, at most 100): the bounds of
// the page asked for and a Link header to the next and the last, as GitHub's is, when
// there are more.
func (s *Server) paginate(r *http.Request, n int) (lo, hi int, link string) {
	q := r.URL.Query()
	per, _ := strconv.Atoi(q.Get("per_page"))
	if per <= 0 {
		per = 30
	}
	per = min(per, 100)
	page, _ := strconv.Atoi(q.Get("page"))
	page = max(page, 1)
	lo = min((page-1)*per, n)
	hi = min(lo+per, n)
	if hi < n {
		q.Set("page", strconv.Itoa(page+1))
		next := s.srv.URL + r.URL.Path + "?" + q.Encode()
		q.Set("page", strconv.Itoa((n+per-1)/per))
		link = fmt.Sprintf(`<%s>; rel="next", <%s>; rel="last"`, next, s.srv.URL+r.URL.Path+"?"+q.Encode())
	}
	return lo, hi, link
}
