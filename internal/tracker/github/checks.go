package github

import (
	"cmp"
	"context"
	"encoding/json"
	"net/url"
	"slices"
	"strings"

	"sortie/internal/tracker"
)

// CheckState is the verdict on a commit's CI, or on one check of it.
type CheckState string

// The CI verdicts.
const (
	CheckPassing CheckState = "passing"
	CheckPending CheckState = "pending"
	CheckFailing CheckState = "failing"
)

// Check kinds.
const (
	KindCheckRun = "check_run" // a check run (GitHub Actions jobs and other GitHub Apps)
	KindStatus   = "status"    // a commit status (older CI integrations)
)

// Check is one check run or commit status of a commit.
type Check struct {
	// ID is the check run's id, which for a GitHub Actions check run is also its job's
	// id (JobLogTail), or the commit status's id.
	ID   int64
	Kind string // KindCheckRun or KindStatus
	Name string // the check run's name, or the status's context
	// Status is a check run's phase (queued, in_progress, completed, …); for a commit
	// status, "completed" unless its state is pending.
	Status string
	// Conclusion is a check run's conclusion ("" until it completes), or a commit
	// status's state (success, failure, error, pending).
	Conclusion string
	State      CheckState
	URL        string // the check's page on GitHub, or the status's target_url
	App        string // a check run's GitHub App slug: "github-actions" for an Actions job
}

// CIResult is the verdict on one commit's CI.
type CIResult struct {
	SHA   string
	State CheckState
	// Failing and Pending are the checks in those states: check runs first, each kind
	// by name then id.
	Failing, Pending []Check
	Checks           int // check runs and statuses seen
	// LogExcerpt is the cleaned tail of LogCheck's job log, when AttachFailureLog found
	// one. Never persist it in full: it is the CI's output, secrets masked or not.
	LogExcerpt, LogCheck string
	// Requests is how many requests the call sent, every one conditional; NotModified
	// is true when GitHub answered every one of them 304, so the call cost nothing
	// against the rate limit and nothing changed since the last call.
	Requests    int
	NotModified bool
}

type apiCheckRuns struct {
	TotalCount int           `json:"total_count"`
	CheckRuns  []apiCheckRun `json:"check_runs"`
}

type apiCheckRun struct {
	ID         int64   `json:"id"`
	Name       string  `json:"name"`
	Status     string  `json:"status"`
	Conclusion *string `json:"conclusion"`
	HTMLURL    string  `json:"html_url"`
	DetailsURL string  `json:"details_url"`
	App        *struct {
		Slug string `json:"slug"`
	} `json:"app"`
}

type apiCombinedStatus struct {
	State      string      `json:"state"`
	TotalCount int         `json:"total_count"`
	Statuses   []apiStatus `json:"statuses"`
}

type apiStatus struct {
	ID        int64   `json:"id"`
	State     string  `json:"state"`
	Context   string  `json:"context"`
	TargetURL *string `json:"target_url"`
}

// CI reads the check runs (every page) and, when they may change the verdict, the
// combined commit status of sha in repo, all conditionally, and aggregates them:
//
//   - no check runs and no statuses: pending (CI has not started, or there is none);
//   - any check run concluded failure, timed_out, cancelled, action_required or
//     startup_failure, or any status error or failure: failing;
//   - every check run completed as success, neutral or skipped and every status
//     success: passing;
//   - otherwise pending; a stale, missing or unknown conclusion is pending.
//
// What a poll costs. The check runs are always read; the combined status only when
// it can change the verdict the check runs give: when there are none, when they all
// pass, when the statuses were never read for this commit, or when they were last seen
// pending or failing. When the check runs are failing, or pending while the statuses
// were last seen absent or all successful, the statuses are taken as last seen (from
// the ETag cache) rather than asked again. So a commit whose CI is GitHub Actions costs
// one conditional request per poll while its jobs run, answered 304 while none
// finishes; a commit with only commit statuses costs two, both 304 when idle. A status
// that turns to failure while check runs are still pending is seen once they finish.
//
// A sha that GitHub does not know is tracker_not_found.
func (t *Tracker) CI(ctx context.Context, repo, sha string) (CIResult, error) {
	const op = "ci_status"
	r, err := t.codeHostRepo(op, repo)
	if err != nil {
		return CIResult{}, err
	}
	sha = strings.ToLower(strings.TrimSpace(sha))
	if !isSHA(sha) {
		return CIResult{}, tracker.Errorf(tracker.ErrPayload, op, "%q is not a commit SHA (7 to 64 hex digits)", sha)
	}
	var cost callCost
	runs, err := t.checkRuns(ctx, op, r, sha, &cost)
	if err != nil {
		return CIResult{}, err
	}
	statusURL := t.codeHostURL(r, "/commits/"+sha+"/status", url.Values{"per_page": {"100"}})
	statuses, known := t.cachedStatuses(statusURL)
	if needStatuses(aggregate(runs), runs, statuses, known) {
		if statuses, err = t.statuses(ctx, op, statusURL, &cost); err != nil {
			return CIResult{}, err
		}
	}
	res := CIResult{SHA: sha, Requests: cost.requests, NotModified: cost.notModified()}
	all := slices.Concat(runs, statuses)
	res.Checks = len(all)
	res.State = aggregate(all)
	for _, c := range all {
		switch c.State {
		case CheckFailing:
			res.Failing = append(res.Failing, c)
		case CheckPending:
			res.Pending = append(res.Pending, c)
		}
	}
	return res, nil
}

// needStatuses decides whether the combined status must be asked for (CI's doc).
func needStatuses(runsState CheckState, runs, last []Check, known bool) bool {
	switch {
	case len(runs) > 0 && runsState == CheckFailing:
		return false
	case !known || len(runs) == 0 || runsState == CheckPassing:
		return true
	}
	// Pending check runs: the statuses matter only if they can still fail.
	for _, s := range last {
		if s.State != CheckPassing {
			return true
		}
	}
	return false
}

func (t *Tracker) checkRuns(ctx context.Context, op, repo, sha string, cost *callCost) ([]Check, error) {
	first := t.codeHostURL(repo, "/commits/"+sha+"/check-runs", url.Values{"filter": {"latest"}, "per_page": {"100"}})
	var out []Check
	seen := map[int64]bool{}
	err := t.pagesOf(ctx, op, first, func(r response) error {
		cost.add(r)
		page, err := decodeCheckRuns(r.body)
		if err != nil {
			return t.payloadErr(op, "check run list", err)
		}
		for _, c := range page {
			// A run that moved between pages while they were read is counted once.
			if !seen[c.ID] {
				seen[c.ID] = true
				out = append(out, c)
			}
		}
		return nil
	})
	sortChecks(out)
	return out, err
}

// decodeCheckRuns reads one page of the check-runs listing.
func decodeCheckRuns(body []byte) ([]Check, error) {
	var page apiCheckRuns
	if err := json.Unmarshal(body, &page); err != nil {
		return nil, err
	}
	out := make([]Check, 0, len(page.CheckRuns))
	for _, a := range page.CheckRuns {
		c := Check{ID: a.ID, Kind: KindCheckRun, Name: a.Name, Status: strings.ToLower(a.Status), URL: cmp.Or(a.HTMLURL, a.DetailsURL)}
		if a.Conclusion != nil {
			c.Conclusion = strings.ToLower(*a.Conclusion)
		}
		if a.App != nil {
			c.App = a.App.Slug
		}
		c.State = runState(c.Status, c.Conclusion)
		out = append(out, c)
	}
	return out, nil
}

// runState classifies one check run. action_required counts as a failure, as the
// reference daemon does: the run will not pass without someone acting.
func runState(status, conclusion string) CheckState {
	if status != "completed" {
		return CheckPending
	}
	switch conclusion {
	case "success", "neutral", "skipped":
		return CheckPassing
	case "failure", "timed_out", "cancelled", "action_required", "startup_failure":
		return CheckFailing
	}
	return CheckPending // stale, null, or a conclusion GitHub adds later
}

func (t *Tracker) statuses(ctx context.Context, op, first string, cost *callCost) ([]Check, error) {
	var out []Check
	err := t.pagesOf(ctx, op, first, func(r response) error {
		cost.add(r)
		page, _, err := decodeCombinedStatus(r.body)
		if err != nil {
			return t.payloadErr(op, "combined status", err)
		}
		out = append(out, page...)
		return nil
	})
	sortChecks(out)
	return out, err
}

// cachedStatuses returns the statuses the ETag cache holds for statusURL, and whether
// they are all of them (a single page that decodes).
func (t *Tracker) cachedStatuses(statusURL string) ([]Check, bool) {
	c, ok := t.etags.get(statusURL)
	if !ok || c.next != "" {
		return nil, false
	}
	list, total, err := decodeCombinedStatus(c.body)
	if err != nil || total > len(list) {
		return nil, false
	}
	sortChecks(list)
	return list, true
}

// decodeCombinedStatus reads one page of a combined status: its statuses and the
// total_count GitHub gives for all pages.
func decodeCombinedStatus(body []byte) ([]Check, int, error) {
	var cs apiCombinedStatus
	if err := json.Unmarshal(body, &cs); err != nil {
		return nil, 0, err
	}
	out := make([]Check, 0, len(cs.Statuses))
	for _, s := range cs.Statuses {
		c := Check{ID: s.ID, Kind: KindStatus, Name: s.Context, Conclusion: strings.ToLower(s.State), Status: "completed"}
		if c.Conclusion == "pending" || c.Conclusion == "" {
			c.Status = "pending"
		}
		if s.TargetURL != nil {
			c.URL = *s.TargetURL
		}
		switch c.Conclusion {
		case "success":
			c.State = CheckPassing
		case "failure", "error":
			c.State = CheckFailing
		default:
			c.State = CheckPending
		}
		out = append(out, c)
	}
	return out, cs.TotalCount, nil
}

// aggregate is the verdict on a set of checks: none is pending, any failing is
// failing, all passing is passing.
func aggregate(checks []Check) CheckState {
	if len(checks) == 0 {
		return CheckPending
	}
	state := CheckPassing
	for _, c := range checks {
		switch c.State {
		case CheckFailing:
			return CheckFailing
		case CheckPending:
			state = CheckPending
		}
	}
	return state
}

func sortChecks(cs []Check) {
	slices.SortFunc(cs, func(a, b Check) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.ID, b.ID))
	})
}

// isSHA reports whether s is a (possibly abbreviated) lowercase hex commit id: SHA-1
// or SHA-256.
func isSHA(s string) bool {
	if len(s) < 7 || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
