package reactions

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"sortie/internal/config"
	"sortie/internal/store"
	"sortie/internal/tracker"
	"sortie/internal/tracker/github"
)

// prStateEvery is how often, in review checks, a review-only watch reads whether its
// pull request is still open.
const prStateEvery = 5

// escalationBackoff is how many intervals a failed escalation waits before the next try.
const escalationBackoff = 10

// maxPendingBackoff bounds how far a pending CI pushes its next check back, in poll
// intervals.
const maxPendingBackoff = 8

// check looks at one watched issue's pull request: the reaction kind due first, then
// schedules the next check by the requests this one sent. It looks at a copy of the
// watch, without the lock; what it found is put back, and what it would offer is
// offered, only if nothing changed the watch meanwhile (a new hand-off, a dispatch, a
// deferral): then the next check looks again from the store.
func (w *Watcher) check(ctx context.Context, cfg *config.Config, wt *watch) {
	now := w.clk.Now()
	w.mu.Lock()
	snap := *wt
	snap.states = maps.Clone(wt.states)
	snap.failing = slices.Clone(wt.failing)
	snap.cached = maps.Clone(wt.cached)
	gen := wt.gen
	w.mu.Unlock()
	res := w.look(ctx, cfg, &snap, now)
	var offered []Due
	defer func() {
		for _, d := range offered {
			w.report(Event{Kind: d.Kind, What: "offered", IssueID: d.IssueID, Identifier: d.Identifier})
		}
	}()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.watches[wt.IssueID] != wt {
		return // replaced (a new hand-off) or forgotten while we looked
	}
	if res.stop {
		delete(w.watches, wt.IssueID)
		w.dropDueLocked(wt.IssueID)
		return
	}
	changed := wt.gen != gen
	running, curGen, liveNext := wt.running, wt.gen, wt.nextAt
	*wt = snap
	wt.running, wt.gen = running, curGen
	if changed {
		// What the states say may be stale now: read them again at the next check,
		// and offer nothing from this one.
		wt.states = nil
	} else {
		for _, d := range res.offers {
			w.offerLocked(d)
			offered = append(offered, d)
		}
	}
	// The request budget first: n requests now, n intervals before the next. Then no
	// earlier than a kind is due (a pending CI backs off, a review waits out its
	// debounce), nor than a deferral asked.
	next := now.Add(time.Duration(max(res.requests, 1)) * baseInterval(cfg))
	if due := firstDue(cfg, wt); due.After(next) {
		next = due
	}
	if changed && liveNext.After(next) {
		next = liveNext
	}
	wt.nextAt = next
}

// firstDue is when the first enabled reaction kind of wt is due.
func firstDue(cfg *config.Config, wt *watch) time.Time {
	var due time.Time
	if cfg.Reactions.CI != nil {
		due = wt.ciDue
	}
	if cfg.Reactions.Review != nil && (due.IsZero() || wt.reviewDue.Before(due)) {
		due = wt.reviewDue
	}
	return due
}

type lookResult struct {
	requests int
	stop     bool  // the watch ends (merged, closed, escalated)
	offers   []Due // reactions to offer
}

// look does the check on snap, the watch's copy, without the lock.
func (w *Watcher) look(ctx context.Context, cfg *config.Config, wt *watch, now time.Time) (res lookResult) {
	host, repo := w.opts.Host()
	if host == nil {
		wt.lastErr = "no code host: reactions need GitHub credentials (docs/reactions.md)"
		return res
	}
	if wt.states == nil {
		sctx, cancel := context.WithTimeout(ctx, storeTimeout)
		states, err := w.opts.Store.ReactionStates(sctx, wt.IssueID)
		cancel()
		if err != nil {
			wt.lastErr = "reading reaction state: " + err.Error()
			return res
		}
		wt.states = map[string]store.ReactionState{}
		for _, st := range states {
			wt.states[st.Kind] = st
		}
	}
	if wt.Branch == "" && wt.PRNumber == 0 {
		branch, _, err := readBranch(wt.Workspace)
		switch {
		case err != nil:
			wt.lastErr = "finding the change's branch: " + err.Error()
		case branch == "":
			wt.lastErr = "the workspace names no branch (.sortie/scm.json or .git/HEAD)"
		}
		if wt.lastErr != "" && !wt.branchErrReported {
			wt.branchErrReported = true
			w.log.Warn("a handed-off issue's pull request cannot be found", "issue_identifier", wt.Identifier, "why", wt.lastErr)
		}
		if branch == "" {
			return res
		}
		// scm.json's pr_number is the agent's word: the pull request is always the one
		// GitHub says the branch has.
		wt.Branch = branch
	}
	if wt.PRNumber == 0 {
		pr, found, err := host.FindPullRequest(ctx, repo, wt.Branch)
		res.requests++
		if err != nil {
			wt.lastErr = "finding the pull request: " + err.Error()
			w.report(Event{What: "check", Result: "error", IssueID: wt.IssueID, Identifier: wt.Identifier, Requests: 1, Message: err.Error()})
			return res
		}
		if !found {
			wt.lastErr = ""
			return res
		}
		if other := w.watcherOf(int(pr.Number), wt.IssueID); other != "" {
			// Two issues' agents cannot share a pull request: the second one named a
			// branch that is not its own.
			wt.lastErr = fmt.Sprintf("pull request #%d is already watched for %s; the workspace's branch %q is not this issue's own", pr.Number, other, wt.Branch)
			if !wt.branchErrReported {
				wt.branchErrReported = true
				w.log.Warn("a handed-off issue names another issue's pull request; not watching it", "issue_identifier", wt.Identifier,
					"pr", pr.Number, "watched_for", other)
			}
			return res
		}
		wt.PRNumber, wt.prURL, wt.head = int(pr.Number), pr.URL, pr.HeadSHA
		w.savePR(ctx, wt)
	}
	kind := w.nextKind(cfg, wt)
	switch kind {
	case KindCI:
		return w.lookCI(ctx, cfg, host, repo, wt, now, res)
	case KindReview:
		return w.lookReview(ctx, cfg, host, repo, wt, now, res)
	}
	return res
}

// nextKind is the reaction kind whose check is due first.
func (w *Watcher) nextKind(cfg *config.Config, wt *watch) string {
	ci, rv := cfg.Reactions.CI != nil, cfg.Reactions.Review != nil
	switch {
	case ci && rv:
		if wt.reviewDue.Before(wt.ciDue) {
			return KindReview
		}
		return KindCI
	case ci:
		return KindCI
	case rv:
		return KindReview
	}
	return ""
}

func (w *Watcher) lookCI(ctx context.Context, cfg *config.Config, host CodeHost, repo string, wt *watch, now time.Time, res lookResult) lookResult {
	rc := cfg.Reactions.CI
	wt.ciDue = now.Add(rc.PollInterval)
	pr, open, res := w.readPR(ctx, host, repo, wt, KindCI, res)
	if !open {
		return res
	}
	ci, err := host.CI(ctx, repo, pr.HeadSHA)
	res.requests += ci.Requests
	if err != nil {
		return w.checkFailed(wt, KindCI, err, res)
	}
	wt.lastErr = ""
	wt.ci = ci.State
	wt.failing = wt.failing[:0]
	for _, c := range ci.Failing {
		wt.failing = append(wt.failing, c.Name)
	}
	w.report(Event{Kind: KindCI, What: "check", Result: string(ci.State), IssueID: wt.IssueID, Identifier: wt.Identifier, Requests: ci.Requests + 1})
	switch ci.State {
	case github.CheckPassing:
		wt.pendingStreak = 0
		if st := wt.states[KindCI]; st.Fingerprint != "" || st.Attempts > 0 {
			w.reset(ctx, wt, KindCI)
		}
		return res
	case github.CheckPending:
		wt.pendingStreak++
		wt.ciDue = now.Add(rc.PollInterval * time.Duration(min(1<<min(wt.pendingStreak, 3), maxPendingBackoff)))
		return res
	}
	wt.pendingStreak = 0
	st, ok := w.observe(ctx, wt, KindCI, ci.SHA, now)
	if !ok || st.Dispatched || st.Escalated {
		return res
	}
	if st.Attempts >= rc.MaxRetries {
		return w.escalate(ctx, wt, KindCI, rc.ReactionLimits, st.Attempts, res)
	}
	if d, ok := wt.cached[KindCI]; ok && d.Fingerprint == ci.SHA && d.SessionID == wt.SessionID {
		// Offered before and deferred: the same failure, without reading its log again.
		res.offers = append(res.offers, d)
		return res
	}
	lctx, cancel := context.WithTimeout(ctx, time.Minute)
	if err := host.AttachFailureLog(lctx, repo, &ci, rc.MaxLogLines); err != nil {
		w.log.Warn("reading the failing job's log failed; reacting without it", "issue_identifier", wt.Identifier, "error", err)
	}
	cancel()
	res.requests += 2 // the job's log: the API's redirect, then the log itself
	d := Due{IssueID: wt.IssueID, Identifier: wt.Identifier, Kind: KindCI, Fingerprint: ci.SHA,
		SessionID: wt.SessionID, Workspace: wt.Workspace, PR: int64(wt.PRNumber),
		Vars:    map[string]any{"ci_failure": ciVars(int64(wt.PRNumber), ci)},
		Section: ciSection(int64(wt.PRNumber), ci, rc.MaxLogLines)}
	wt.cache(d)
	res.offers = append(res.offers, d)
	return res
}

func (w *Watcher) lookReview(ctx context.Context, cfg *config.Config, host CodeHost, repo string, wt *watch, now time.Time, res lookResult) lookResult {
	rc := cfg.Reactions.Review
	wt.reviewDue = now.Add(rc.PollInterval)
	if cfg.Reactions.CI == nil {
		// Without CI checks nothing else reads the pull request: every few review
		// checks, one reads whether it is still open.
		wt.reviewChecks++
		if wt.reviewChecks%prStateEvery == 1 {
			var open bool
			if _, open, res = w.readPR(ctx, host, repo, wt, KindReview, res); !open {
				return res
			}
		}
	}
	rv, err := host.ChangeRequests(ctx, repo, int64(wt.PRNumber))
	res.requests += rv.Requests
	if err != nil {
		return w.checkFailed(wt, KindReview, err, res)
	}
	wt.lastErr = ""
	wt.comments = len(rv.Comments)
	fp := github.ReviewFingerprint(rv.Comments)
	result := "none"
	if fp != "" {
		result = "changes_requested"
	}
	w.report(Event{Kind: KindReview, What: "check", Result: result, IssueID: wt.IssueID, Identifier: wt.Identifier, Requests: rv.Requests})
	if fp == "" {
		wt.review = "none"
		if st := wt.states[KindReview]; st.Fingerprint != "" || st.Attempts > 0 {
			w.reset(ctx, wt, KindReview)
		}
		return res
	}
	wt.review = "changes_requested"
	if quiet := rv.Latest.Add(rc.Debounce); now.Before(quiet) {
		wt.review = "waiting"
		wt.reviewDue = quiet
		return res
	}
	st, ok := w.observe(ctx, wt, KindReview, fp, now)
	if !ok || st.Dispatched || st.Escalated {
		return res
	}
	if st.Attempts >= rc.MaxRetries {
		return w.escalate(ctx, wt, KindReview, rc.ReactionLimits, st.Attempts, res)
	}
	d := Due{IssueID: wt.IssueID, Identifier: wt.Identifier, Kind: KindReview, Fingerprint: fp,
		SessionID: wt.SessionID, Workspace: wt.Workspace, PR: int64(wt.PRNumber),
		Vars:    map[string]any{"review_comments": reviewVars(rv.Comments)},
		Section: reviewSection(int64(wt.PRNumber), rv.Comments)}
	wt.cache(d)
	res.offers = append(res.offers, d)
	return res
}

// readPR reads the watched pull request (one request): open is false when the check
// ends here, because the read failed or the pull request is merged or closed, which
// ends the watch.
func (w *Watcher) readPR(ctx context.Context, host CodeHost, repo string, wt *watch, kind string, res lookResult) (github.PullRequest, bool, lookResult) {
	pr, err := host.PullRequest(ctx, repo, int64(wt.PRNumber))
	res.requests++
	if err != nil {
		return pr, false, w.checkFailed(wt, kind, err, res)
	}
	if pr.State != "open" {
		w.log.Info("pull request no longer open; no longer watching it", "issue_identifier", wt.Identifier,
			"pr", pr.Number, "merged", pr.Merged)
		w.endWatch(ctx, wt)
		res.stop = true
		return pr, false, res
	}
	wt.head, wt.prURL = pr.HeadSHA, pr.URL
	return pr, true, res
}

func (w *Watcher) checkFailed(wt *watch, kind string, err error, res lookResult) lookResult {
	wt.lastErr = err.Error()
	w.log.Warn("checking a handed-off issue's pull request failed", "issue_identifier", wt.Identifier, "kind", kind, "error", err)
	w.report(Event{Kind: kind, What: "check", Result: "error", IssueID: wt.IssueID, Identifier: wt.Identifier, Requests: res.requests, Message: err.Error()})
	return res
}

// observe records fp as the failure now seen of kind and returns the state after it.
func (w *Watcher) observe(ctx context.Context, wt *watch, kind, fp string, now time.Time) (store.ReactionState, bool) {
	if st, ok := wt.states[kind]; ok && st.Fingerprint == fp {
		return st, true
	}
	sctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	st, err := w.opts.Store.ObserveReaction(sctx, wt.IssueID, kind, fp, now)
	if err != nil {
		wt.lastErr = "recording what was seen: " + err.Error()
		w.log.Error("recording a reaction's fingerprint failed; not reacting until it can be", "issue_identifier", wt.Identifier, "error", err)
		return st, false
	}
	wt.states[kind] = st
	return st, true
}

func (w *Watcher) reset(ctx context.Context, wt *watch, kind string) {
	sctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	if err := w.opts.Store.ResetReaction(sctx, wt.IssueID, kind); err != nil {
		w.log.Warn("clearing a reaction's attempts failed", "issue_identifier", wt.Identifier, "kind", kind, "error", err)
		return
	}
	delete(wt.states, kind)
	w.log.Info("reaction cleared", "issue_identifier", wt.Identifier, "kind", kind)
}

// escalate hands the issue to humans for good: a label or a comment on the issue, an
// alert, and the watch ends.
func (w *Watcher) escalate(ctx context.Context, wt *watch, kind string, lim config.ReactionLimits, attempts int, res lookResult) lookResult {
	what := map[string]string{KindCI: "CI failures", KindReview: "review comments"}[kind]
	msg := fmt.Sprintf("Sortie stopped sending %s on pull request #%d back to the agent after %d attempts; a human should take over.",
		what, wt.PRNumber, attempts)
	how := lim.Escalation
	trk := w.opts.Tracker()
	tctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var err error
	if l, ok := tracker.As[tracker.Labeler](trk); ok && how != config.EscalationComment {
		err = l.AddLabel(tctx, wt.IssueID, lim.EscalationLabel)
		if err != nil && !tracker.KindOf(err).Retryable() {
			// A label the tracker will never take (one missing in Linear, a name Jira
			// refuses): a comment says the same.
			w.log.Warn("the escalation label cannot be added; escalating with a comment instead",
				"issue_identifier", wt.Identifier, "label", lim.EscalationLabel, "error", err)
			how, err = config.EscalationComment, nil
		}
	} else if how != config.EscalationComment {
		w.log.Warn("the tracker cannot label issues; escalating with a comment instead", "issue_identifier", wt.Identifier)
		how = config.EscalationComment
	}
	if how == config.EscalationComment && err == nil {
		err = trk.CommentIssue(tctx, wt.IssueID, msg)
	}
	result := how
	if err != nil {
		result = "error"
		w.log.Error("escalating the issue failed; trying again later", "issue_identifier", wt.Identifier, "kind", kind, "error", err)
		wt.lastErr = "escalating: " + err.Error()
		w.report(Event{Kind: kind, What: "escalated", Result: result, IssueID: wt.IssueID, Identifier: wt.Identifier, Message: err.Error()})
		res.requests += escalationBackoff // tracker requests, and a tracker that keeps refusing: not every interval
		return res
	}
	sctx, scancel := context.WithTimeout(ctx, storeTimeout)
	defer scancel()
	if err := w.opts.Store.EscalateReaction(sctx, wt.IssueID, kind, w.clk.Now()); err != nil {
		w.log.Error("recording an escalation failed", "issue_identifier", wt.Identifier, "error", err)
	}
	st := wt.states[kind]
	st.Escalated = true
	wt.states[kind] = st
	w.log.Warn("issue escalated to humans", "issue_identifier", wt.Identifier, "kind", kind, "attempts", attempts, "how", how)
	w.report(Event{Kind: kind, What: "escalated", Result: result, IssueID: wt.IssueID, Identifier: wt.Identifier, Message: msg})
	if w.opts.Alert != nil {
		w.opts.Alert(wt.IssueID, wt.Identifier, wt.Identifier+" escalated: "+what+" kept coming back", msg)
	}
	w.endWatch(ctx, wt)
	res.stop = true
	return res
}

// endWatch forgets the watch in the store; its states stay, so a later hand-off of the
// same issue does not start its attempts again.
func (w *Watcher) endWatch(ctx context.Context, wt *watch) {
	sctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	if err := w.opts.Store.DeleteReactionWatch(sctx, wt.IssueID); err != nil {
		w.log.Warn("forgetting a watched pull request failed", "issue_identifier", wt.Identifier, "error", err)
	}
}

func (w *Watcher) savePR(ctx context.Context, wt *watch) {
	sctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	w.persist(sctx, wt.ReactionWatch)
}

// cache keeps d, the reaction last built for its kind, so that a deferred one is
// offered again without its requests.
func (wt *watch) cache(d Due) {
	if wt.cached == nil {
		wt.cached = map[string]Due{}
	}
	wt.cached[d.Kind] = d
}

// watcherOf is the identifier of another watched issue whose pull request is pr, "" for
// none.
func (w *Watcher) watcherOf(pr int, issueID string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	for id, o := range w.watches {
		if id != issueID && o.PRNumber == pr {
			return o.Identifier
		}
	}
	return ""
}
