package fakegithub_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"sortie/internal/testkit/fakegithub"
)

// pullJSON is a pull request in GitHub REST's field names.
type pullJSON struct {
	ID       int64   `json:"id"`
	Number   int64   `json:"number"`
	State    string  `json:"state"`
	Title    string  `json:"title"`
	Draft    bool    `json:"draft"`
	HTMLURL  string  `json:"html_url"`
	MergedAt *string `json:"merged_at"`
	Merged   *bool   `json:"merged"` // only on GET /pulls/{n}
	User     struct {
		Login string `json:"login"`
		Type  string `json:"type"`
	} `json:"user"`
	Head struct {
		Label string `json:"label"`
		Ref   string `json:"ref"`
		SHA   string `json:"sha"`
		Repo  struct {
			FullName string `json:"full_name"`
			Fork     bool   `json:"fork"`
		} `json:"repo"`
	} `json:"head"`
	Base struct {
		Ref string `json:"ref"`
		SHA string `json:"sha"`
	} `json:"base"`
	CreatedAt string `json:"created_at"`
	UpdatedAt string `json:"updated_at"`
}

func numbers(prs []pullJSON) []int64 {
	out := []int64{}
	for _, p := range prs {
		out = append(out, p.Number)
	}
	return out
}

// TestPullRequest_ShapeInListAndAlone: a pull request is served with GitHub's fields,
// the list's subset and GET /pulls/{n}'s additions, and is an issue with pull_request.
func TestPullRequest_ShapeInListAndAlone(t *testing.T) {
	f := fakegithub.New(t)
	pr := f.AddPullRequest(7, "sortie/issue-3", "main", func(p *fakegithub.PullRequest) {
		p.Title, p.User = "Fix the retry cap", fakegithub.User{Login: fakegithub.BotLogin}
	})
	if pr.Number != 7 || pr.State != "open" || pr.Head.Ref != "sortie/issue-3" || pr.Head.SHA != fakegithub.SHA("sortie/issue-3#7") ||
		pr.Base.Ref != "main" || pr.Head.Repo != "octo/hello" || pr.User.Login != fakegithub.BotLogin || pr.HTMLURL != "https://github.com/octo/hello/pull/7" {
		t.Fatalf("AddPullRequest returned %+v", pr)
	}

	list, r := getJSON[[]pullJSON](t, f, "/repos/octo/hello/pulls")
	if len(list) != 1 {
		t.Fatalf("GET /pulls: %d pull requests, want 1: %s", len(list), r.body)
	}
	got := list[0]
	if got.Number != 7 || got.ID != pr.ID || got.State != "open" || got.Title != "Fix the retry cap" || got.Head.Ref != "sortie/issue-3" ||
		got.Head.SHA != pr.Head.SHA || got.Head.Label != "octo:sortie/issue-3" || got.Head.Repo.FullName != "octo/hello" ||
		got.Base.Ref != "main" || got.Base.SHA != pr.Base.SHA || got.User.Login != fakegithub.BotLogin || got.MergedAt != nil || got.Merged != nil {
		t.Errorf("GET /pulls: %+v, want pull request 7 as added, without merged (a list has none)", got)
	}
	requireKeys(t, "GET /pulls item", itemKeys(t, r.body), "url", "node_id", "diff_url", "issue_url", "statuses_url", "labels",
		"requested_reviewers", "_links", "author_association", "auto_merge", "merge_commit_sha")

	one, r := getJSON[pullJSON](t, f, "/repos/octo/hello/pulls/7")
	if one.Merged == nil || *one.Merged || one.Number != 7 {
		t.Errorf("GET /pulls/7: %+v, want pull request 7 with merged false", one)
	}
	requireKeys(t, "GET /pulls/7", keys(t, r.body), "mergeable", "mergeable_state", "merged_by", "comments", "review_comments", "commits", "changed_files")

	is, _ := getJSON[struct {
		Number      int64 `json:"number"`
		PullRequest *struct {
			URL string `json:"url"`
		} `json:"pull_request"`
	}](t, f, "/repos/octo/hello/issues/7")
	if is.PullRequest == nil || !strings.HasSuffix(is.PullRequest.URL, "/repos/octo/hello/pulls/7") {
		t.Errorf("GET /issues/7: pull_request = %+v, want a link to /pulls/7: a pull request is an issue", is.PullRequest)
	}
	f.AddIssue(8, "an issue", "open")
	if r := get(t, f, "/repos/octo/hello/pulls/8"); r.status != http.StatusNotFound {
		t.Errorf("GET /pulls/8 for an issue: %d, want 404", r.status)
	}
}

// TestPullRequest_ListFilters: state, head=owner:branch (a fork's owner differs;
// a head without owner is ignored, as on GitHub), base, and the order.
func TestPullRequest_ListFilters(t *testing.T) {
	f := fakegithub.New(t)
	f.AddPullRequest(1, "feature", "main")
	f.AddPullRequest(2, "feature", "main", fakegithub.FromFork("alice"))
	f.AddPullRequest(3, "fix", "release")
	f.AddPullRequest(4, "old", "main")
	f.ClosePullRequest(4)
	f.AddPR(5)

	for _, tc := range []struct {
		query string
		want  []int64
	}{
		{"", []int64{5, 3, 2, 1}},
		{"?state=closed", []int64{4}},
		{"?state=all", []int64{5, 4, 3, 2, 1}},
		{"?head=octo:feature", []int64{1}},
		{"?head=alice:feature", []int64{2}},
		{"?head=OCTO:fix", []int64{3}},
		{"?head=octo:nothing", []int64{}},
		{"?head=feature", []int64{5, 3, 2, 1}},
		{"?base=release", []int64{3}},
		{"?head=octo:old&state=all", []int64{4}},
		{"?direction=asc", []int64{1, 2, 3, 5}},
	} {
		list, _ := getJSON[[]pullJSON](t, f, "/repos/octo/hello/pulls"+tc.query)
		if got := numbers(list); !slices.Equal(got, tc.want) {
			t.Errorf("GET /pulls%s: %v, want %v", tc.query, got, tc.want)
		}
	}
	fork, _ := getJSON[pullJSON](t, f, "/repos/octo/hello/pulls/2")
	if fork.Head.Repo.FullName != "alice/hello" || !fork.Head.Repo.Fork || fork.Head.Label != "alice:feature" {
		t.Errorf("a fork's pull request: head %+v, want in alice/hello, a fork, labelled alice:feature", fork.Head)
	}
	if r := get(t, f, "/repos/octo/hello/pulls?state=merged"); r.status != http.StatusUnprocessableEntity {
		t.Errorf("GET /pulls?state=merged: %d, want 422", r.status)
	}
}

// TestPullRequest_PagesAndLink: per_page/page cut the list, and Link leads on.
func TestPullRequest_PagesAndLink(t *testing.T) {
	f := fakegithub.New(t)
	for n := int64(1); n <= 5; n++ {
		f.AddPullRequest(n, fmt.Sprint("b", n), "main")
	}
	var all []int64
	path := "/repos/octo/hello/pulls?per_page=2"
	for range 5 {
		page, r := getJSON[[]pullJSON](t, f, path)
		all = append(all, numbers(page)...)
		link := r.header.Get("Link")
		if link == "" {
			break
		}
		next, _, _ := strings.Cut(strings.TrimPrefix(link, "<"), ">")
		path = next
	}
	if want := []int64{5, 4, 3, 2, 1}; !slices.Equal(all, want) {
		t.Errorf("following Link from per_page=2: %v, want %v", all, want)
	}
}

// TestPullRequest_MutatorsMoveTheETag: Push, ClosePullRequest and MergePullRequest
// show in the next conditional request.
func TestPullRequest_MutatorsMoveTheETag(t *testing.T) {
	f := fakegithub.New(t)
	pr := f.AddPullRequest(1, "feature", "main")
	revalidate(t, f, "/repos/octo/hello/pulls/1", func() { f.Push(1, fakegithub.SHA("second")) })
	got, _ := getJSON[pullJSON](t, f, "/repos/octo/hello/pulls/1")
	if got.Head.SHA != fakegithub.SHA("second") || got.UpdatedAt == pr.UpdatedAt.Format("2006-01-02T15:04:05Z") {
		t.Errorf("after Push: head %s updated %s, want head %s and updated_at moved on", got.Head.SHA, got.UpdatedAt, fakegithub.SHA("second"))
	}
	revalidate(t, f, "/repos/octo/hello/pulls?state=all", func() { f.MergePullRequest(1) })
	got, _ = getJSON[pullJSON](t, f, "/repos/octo/hello/pulls/1")
	if got.State != "closed" || got.Merged == nil || !*got.Merged || got.MergedAt == nil {
		t.Errorf("after MergePullRequest: %+v, want closed, merged, with merged_at", got)
	}
	f.AddPullRequest(2, "other", "main")
	revalidate(t, f, "/repos/octo/hello/pulls", func() { f.ClosePullRequest(2) })
	if list, _ := getJSON[[]pullJSON](t, f, "/repos/octo/hello/pulls"); len(list) != 0 {
		t.Errorf("open pull requests after closing both: %v, want none", numbers(list))
	}
}
