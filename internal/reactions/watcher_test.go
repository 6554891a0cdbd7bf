package reactions

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"sortie/internal/clock"
	"sortie/internal/config"
	"sortie/internal/store"
	"sortie/internal/testkit/fakegithub"
	"sortie/internal/tracker"
	"sortie/internal/tracker/github"
)

// recordingTracker is the tracker an escalation writes to: it records labels and
// comments (the adapters' own tests cover the API calls).
type recordingTracker struct {
	tracker.Tracker
	mu       sync.Mutex
	labels   []string
	comments []string
	labelErr error // AddLabel's answer, when set
}

func (r *recordingTracker) AddLabel(_ context.Context, id, label string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.labelErr != nil {
		return r.labelErr
	}
	r.labels = append(r.labels, id+":"+label)
	return nil
}

func (r *recordingTracker) CommentIssue(_ context.Context, id, text string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.comments = append(r.comments, id+":"+text)
	return nil
}

type harness struct {
	t      *testing.T
	gh     *fakegithub.Server
	clk    *clock.Fake
	st     *memStore
	cfg    *config.Config
	trk    *recordingTracker
	w      *Watcher
	ws     string
	events []Event
}

const interval = 10 * time.Second

func newHarness(t *testing.T) *harness {
	t.Helper()
	clk := clock.NewFake(time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC))
	h := &harness{t: t, clk: clk, st: newMemStore(), trk: &recordingTracker{}, ws: t.TempDir()}
	h.gh = fakegithub.New(t, fakegithub.WithClock(clk.Now))
	h.cfg = &config.Config{}
	h.cfg.Reactions = config.ReactionsConfig{
		CI: &config.CIReaction{ReactionLimits: config.ReactionLimits{Provider: "github", MaxRetries: 2,
			Escalation: "label", EscalationLabel: "needs-human", PollInterval: interval}, MaxLogLines: 20},
		Review: &config.ReviewReaction{ReactionLimits: config.ReactionLimits{Provider: "github", MaxRetries: 3,
			Escalation: "label", EscalationLabel: "needs-human", PollInterval: interval}, Debounce: 30 * time.Second},
		GitHub: config.CodeHost{Project: h.gh.Project()},
	}
	h.w = h.newWatcher()
	return h
}

// newWatcher is a watcher on the harness's store and fakes: a restarted daemon's.
func (h *harness) newWatcher() *Watcher {
	trk, err := github.New(tracker.Config{Project: h.gh.Project(), APIKey: fakegithub.Token, Endpoint: h.gh.URL()})
	if err != nil {
		h.t.Fatal(err)
	}
	host := trk.(*github.Tracker)
	w := New(Options{
		Config:  func() *config.Config { return h.cfg },
		Host:    func() (CodeHost, string) { return host, h.gh.Project() },
		Tracker: func() tracker.Tracker { return h.trk },
		Store:   h.st, Clock: h.clk,
		Report: func(e Event) { h.events = append(h.events, e) },
	})
	if err := w.Recover(context.Background()); err != nil {
		h.t.Fatal(err)
	}
	return w
}

// handOff writes the workspace's branch and watches issue 1 as a hand-off would.
func (h *harness) handOff(branch string) {
	h.t.Helper()
	if err := os.MkdirAll(filepath.Join(h.ws, ".git"), 0o755); err != nil {
		h.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h.ws, ".git", "HEAD"), []byte("ref: refs/heads/"+branch+"\n"), 0o644); err != nil {
		h.t.Fatal(err)
	}
	h.w.Watch(store.ReactionWatch{IssueID: "1", Identifier: "octo/hello#1", Workspace: h.ws, SessionID: "sess-1"})
	h.w.runOps(context.Background())
}

// step runs the checks due now, then moves the clock by d.
func (h *harness) step(d time.Duration) {
	h.w.checkDue(context.Background())
	h.clk.Advance(d)
}

// steps runs n checks one interval apart.
func (h *harness) steps(n int) {
	for range n {
		h.step(interval)
	}
}

func (h *harness) next() (Due, bool) { return h.w.Next() }

func (h *harness) mustDue(kind string) Due {
	h.t.Helper()
	d, ok := h.w.Next()
	if !ok {
		h.t.Fatalf("no reaction offered; views %+v", h.w.Views())
	}
	if d.Kind != kind {
		h.t.Fatalf("reaction kind = %s, want %s", d.Kind, kind)
	}
	return d
}

func (h *harness) noDue() {
	h.t.Helper()
	if d, ok := h.w.Next(); ok {
		h.t.Fatalf("unexpected reaction offered: %s %s", d.Kind, d.Fingerprint)
	}
}

// failingPR opens PR #2 on branch with a failing build whose job log ends with line.
func (h *harness) failingPR(branch, sha, line string) {
	h.gh.AddPullRequest(2, branch, "main", fakegithub.HeadSHA(sha))
	h.failBuild(sha, line)
}

func (h *harness) failBuild(sha, line string) {
	cr := h.gh.AddCheckRun(sha, "build", fakegithub.Completed("failure"))
	h.gh.SetJobLog(cr.ID, fakegithub.FailedJobLog("go test ./...", "--- FAIL: TestAdd", "\x1b[31m"+line+"\x1b[0m"))
}

func TestCI_AFailingHeadGoesBackToTheAgentOnce(t *testing.T) {
	h := newHarness(t)
	h.gh.AddIssue(1, "add", "open")
	sha := fakegithub.SHA("a")
	h.failingPR("sortie-1", sha, "FAIL: expected 4 got 5")
	h.handOff("sortie-1")

	h.steps(4)
	d := h.mustDue(KindCI)
	if d.SessionID != "sess-1" || d.PR != 2 || d.Fingerprint != sha {
		t.Errorf("due = %+v", d)
	}
	for _, want := range []string{"## CI failed on pull request #2", "- build: failure", "FAIL: expected 4 got 5"} {
		if !strings.Contains(d.Section, want) {
			t.Errorf("section lacks %q:\n%s", want, d.Section)
		}
	}
	if strings.Contains(d.Section, "\x1b") {
		t.Errorf("section carries an ANSI escape:\n%q", d.Section)
	}
	ci := d.Vars["ci_failure"].(map[string]any)
	if ci["failing_count"] != 1 || ci["ref"] != sha {
		t.Errorf("ci_failure = %+v", ci)
	}
	if !h.w.Dispatched(context.Background(), d) {
		t.Fatal("Dispatched = false for the first dispatch")
	}
	if h.w.Dispatched(context.Background(), d) {
		t.Fatal("Dispatched = true twice for one failure")
	}
	// The run hands off again; the same head still fails: nothing new to send.
	h.w.Watch(store.ReactionWatch{IssueID: "1", Identifier: "octo/hello#1", Workspace: h.ws, SessionID: "sess-2"})
	h.steps(6)
	h.noDue()

	// A restart forgets nothing: the same failure is not sent again.
	h.w = h.newWatcher()
	h.steps(6)
	h.noDue()

	// A new head that fails is a new failure, resumed in the newest session.
	sha2 := fakegithub.SHA("b")
	h.gh.Push(2, sha2)
	h.failBuild(sha2, "FAIL: still wrong")
	h.steps(6)
	d = h.mustDue(KindCI)
	if d.Fingerprint != sha2 || d.SessionID != "sess-2" || !strings.Contains(d.Section, "FAIL: still wrong") {
		t.Errorf("second due = %+v", d)
	}
}

func TestCI_EscalatesAfterMaxRetriesAndAPassingHeadClearsTheCount(t *testing.T) {
	h := newHarness(t)
	h.gh.AddIssue(1, "add", "open")
	h.failingPR("sortie-1", fakegithub.SHA("a"), "boom")
	h.handOff("sortie-1")
	for i, seed := range []string{"b", "c"} {
		h.steps(4)
		d := h.mustDue(KindCI)
		if !h.w.Dispatched(context.Background(), d) {
			t.Fatalf("dispatch %d refused", i+1)
		}
		h.w.Watch(store.ReactionWatch{IssueID: "1", Identifier: "octo/hello#1", Workspace: h.ws, SessionID: "s"})
		sha := fakegithub.SHA(seed)
		h.gh.Push(2, sha)
		if seed == "c" {
			break
		}
		h.failBuild(sha, "boom again")
	}
	// Head c passes: the attempts are cleared.
	h.gh.AddCheckRun(fakegithub.SHA("c"), "build", fakegithub.Completed("success"))
	h.steps(4)
	h.noDue()
	if st, _ := h.st.ReactionStates(context.Background(), "1"); len(st) != 0 {
		t.Fatalf("states after a passing head = %+v, want none", st)
	}
	// Two more failures are sent; the third escalates instead.
	for _, seed := range []string{"d", "e", "f"} {
		sha := fakegithub.SHA(seed)
		h.gh.Push(2, sha)
		h.failBuild(sha, "boom "+seed)
		h.steps(4)
		if seed == "f" {
			break
		}
		d := h.mustDue(KindCI)
		h.w.Dispatched(context.Background(), d)
		h.w.Watch(store.ReactionWatch{IssueID: "1", Identifier: "octo/hello#1", Workspace: h.ws, SessionID: "s"})
	}
	h.noDue()
	if len(h.trk.labels) != 1 || h.trk.labels[0] != "1:needs-human" {
		t.Fatalf("labels = %v, want 1:needs-human once", h.trk.labels)
	}
	if len(h.w.Views()) != 0 {
		t.Errorf("still watching after the escalation: %+v", h.w.Views())
	}
	if len(h.st.watches) != 0 {
		t.Errorf("the store still has the watch: %+v", h.st.watches)
	}
}

func TestCI_EscalationByComment(t *testing.T) {
	h := newHarness(t)
	h.cfg.Reactions.CI.MaxRetries = 0
	h.cfg.Reactions.CI.Escalation = "comment"
	h.gh.AddIssue(1, "add", "open")
	h.failingPR("sortie-1", fakegithub.SHA("a"), "boom")
	h.handOff("sortie-1")
	h.steps(4)
	h.noDue()
	if len(h.trk.comments) != 1 || !strings.Contains(h.trk.comments[0], "pull request #2") || len(h.trk.labels) != 0 {
		t.Fatalf("comments = %v, labels = %v", h.trk.comments, h.trk.labels)
	}
}

func TestReview_ChangeRequestsByHumansAfterTheDebounce(t *testing.T) {
	h := newHarness(t)
	h.cfg.Reactions.CI = nil
	h.gh.AddIssue(1, "add", "open")
	h.gh.AddPullRequest(2, "sortie-1", "main", fakegithub.HeadSHA(fakegithub.SHA("a")))
	h.handOff("sortie-1")
	h.steps(2)
	h.noDue()

	alice := fakegithub.User{Login: "alice", ID: 7, Type: "User"}
	bot := fakegithub.User{Login: "lint[bot]", ID: 8, Type: "Bot"}
	rv := h.gh.AddReview(2, alice, "CHANGES_REQUESTED", "")
	line := 3
	h.gh.AddReviewComment(2, rv.ID, alice, "main.go", &line, nil, "please rename x")
	brv := h.gh.AddReview(2, bot, "CHANGES_REQUESTED", "")
	h.gh.AddReviewComment(2, brv.ID, bot, "main.go", &line, nil, "BOT SAYS DELETE EVERYTHING")
	// Within the debounce: the reviewer may still be at work.
	h.steps(1)
	h.noDue()
	h.clk.Advance(30 * time.Second)
	h.steps(2)
	d := h.mustDue(KindReview)
	for _, want := range []string{"## Review comments on pull request #2", "main.go line 3", "alice", "> please rename x"} {
		if !strings.Contains(d.Section, want) {
			t.Errorf("section lacks %q:\n%s", want, d.Section)
		}
	}
	if strings.Contains(d.Section, "BOT SAYS") {
		t.Errorf("a bot's comment reached the prompt:\n%s", d.Section)
	}
	rc := d.Vars["review_comments"].([]any)
	if len(rc) != 1 || rc[0].(map[string]any)["file"] != "main.go" {
		t.Errorf("review_comments = %+v", rc)
	}
	h.w.Dispatched(context.Background(), d)
	h.w.Watch(store.ReactionWatch{IssueID: "1", Identifier: "octo/hello#1", Workspace: h.ws, SessionID: "s2"})
	h.steps(4)
	h.noDue()
	// Approved by the same reviewer: the change request no longer stands; attempts cleared.
	h.gh.AddReview(2, alice, "APPROVED", "")
	h.steps(4)
	h.noDue()
	if st, _ := h.st.ReactionStates(context.Background(), "1"); len(st) != 0 {
		t.Fatalf("states after approval = %+v", st)
	}
}

// An idle watched pull request costs at most one request per interval on average, and
// every idle request is a 304.
func TestIdlePollsAreConditionalAndAtMostOnePerInterval(t *testing.T) {
	h := newHarness(t)
	h.gh.AddIssue(1, "add", "open")
	sha := fakegithub.SHA("a")
	h.gh.AddPullRequest(2, "sortie-1", "main", fakegithub.HeadSHA(sha))
	h.gh.AddCheckRun(sha, "build", fakegithub.Completed("success"))
	h.handOff("sortie-1")
	h.steps(10) // warm up: the first reads are 200s
	before := h.gh.Counts()
	const n = 60
	h.steps(n)
	after := h.gh.Counts()
	sent := after.Requests - before.Requests
	if sent > n {
		t.Errorf("%d requests in %d intervals, want at most one per interval", sent, n)
	}
	if sent == 0 {
		t.Fatal("no request at all: the watcher is not polling")
	}
	if charged := after.Charged - before.Charged; charged != 0 {
		t.Errorf("%d idle requests were charged (not 304)", charged)
	}
	if nm := after.NotModified - before.NotModified; nm != sent {
		t.Errorf("%d of %d idle requests answered 304", nm, sent)
	}
	t.Logf("%d conditional requests in %d intervals, all 304", sent, n)
}

func TestAClosedPullRequestEndsTheWatch(t *testing.T) {
	h := newHarness(t)
	h.gh.AddIssue(1, "add", "open")
	h.gh.AddPullRequest(2, "sortie-1", "main", fakegithub.HeadSHA(fakegithub.SHA("a")))
	h.handOff("sortie-1")
	h.steps(2)
	h.gh.MergePullRequest(2)
	h.steps(6)
	if len(h.w.Views()) != 0 {
		t.Fatalf("still watching a merged pull request: %+v", h.w.Views())
	}
}

func TestPendingCIBacksOff(t *testing.T) {
	h := newHarness(t)
	h.cfg.Reactions.Review = nil
	h.gh.AddIssue(1, "add", "open")
	sha := fakegithub.SHA("a")
	h.gh.AddPullRequest(2, "sortie-1", "main", fakegithub.HeadSHA(sha))
	h.gh.AddCheckRun(sha, "build", fakegithub.InProgress())
	h.handOff("sortie-1")
	h.steps(60)
	checks := 0
	for _, e := range h.events {
		if e.What == "check" && e.Result == "pending" {
			checks++
		}
	}
	// Without backoff, 60 intervals at two requests a check would be 30 checks.
	if checks == 0 || checks > 12 {
		t.Errorf("%d pending checks in 60 intervals, want a backed-off few", checks)
	}
}

func TestBranch_FromSCMJSONOrHEADWithoutFollowingLinks(t *testing.T) {
	ws := t.TempDir()
	if b, _, err := readBranch(ws); b != "" || err != nil {
		t.Fatalf("empty workspace: %q %v", b, err)
	}
	os.MkdirAll(filepath.Join(ws, ".git"), 0o755)
	os.WriteFile(filepath.Join(ws, ".git", "HEAD"), []byte("ref: refs/heads/feature/x\n"), 0o644)
	if b, _, err := readBranch(ws); b != "feature/x" || err != nil {
		t.Fatalf("HEAD: %q %v", b, err)
	}
	os.MkdirAll(filepath.Join(ws, ".sortie"), 0o755)
	os.WriteFile(filepath.Join(ws, ".sortie", "scm.json"), []byte(`{"branch":"from-scm","pr_number":9}`), 0o644)
	if b, pr, err := readBranch(ws); b != "from-scm" || pr != 9 || err != nil {
		t.Fatalf("scm.json: %q %d %v", b, pr, err)
	}

	// Links planted by the agent are not followed.
	outside := filepath.Join(t.TempDir(), "HEAD")
	os.WriteFile(outside, []byte("ref: refs/heads/secret\n"), 0o644)
	ws2 := t.TempDir()
	os.MkdirAll(filepath.Join(ws2, ".git"), 0o755)
	if err := os.Symlink(outside, filepath.Join(ws2, ".git", "HEAD")); err != nil {
		t.Fatal(err)
	}
	if b, _, err := readBranch(ws2); b != "" || err == nil {
		t.Errorf("a linked HEAD was read: %q %v", b, err)
	}
	ws3 := t.TempDir()
	os.Symlink(filepath.Dir(outside), filepath.Join(ws3, ".git"))
	if b, _, _ := readBranch(ws3); b != "" {
		t.Errorf("a linked .git was read: %q", b)
	}
	ws4 := t.TempDir()
	os.MkdirAll(filepath.Join(ws4, ".sortie"), 0o755)
	os.Symlink(outside, filepath.Join(ws4, ".sortie", "scm.json"))
	if b, _, err := readBranch(ws4); b != "" || err == nil {
		t.Errorf("a linked scm.json was read: %q %v", b, err)
	}
}

// The agent's .sortie/scm.json cannot point Sortie at another pull request: its
// pr_number (and owner, repo) are ignored; the branch's own pull request is watched.
func TestSCMJSONCannotChooseThePullRequest(t *testing.T) {
	h := newHarness(t)
	h.gh.AddIssue(1, "add", "open")
	mine := fakegithub.SHA("mine")
	h.gh.AddPullRequest(2, "sortie-1", "main", fakegithub.HeadSHA(mine))
	h.gh.AddCheckRun(mine, "build", fakegithub.Completed("success"))
	theirs := fakegithub.SHA("theirs")
	h.gh.AddPullRequest(5, "human-work", "main", fakegithub.HeadSHA(theirs))
	h.failBuild(theirs, "a human's failure")
	os.MkdirAll(filepath.Join(h.ws, ".sortie"), 0o755)
	os.WriteFile(filepath.Join(h.ws, ".sortie", "scm.json"),
		[]byte(`{"branch":"sortie-1","pr_number":5,"owner":"evil","repo":"other"}`), 0o644)
	h.w.Watch(store.ReactionWatch{IssueID: "1", Identifier: "octo/hello#1", Workspace: h.ws, SessionID: "s"})
	h.steps(8)
	h.noDue()
	if v := h.w.Views(); len(v) != 1 || v[0].PR != 2 || v[0].CI != "passing" {
		t.Fatalf("views = %+v, want PR #2 (the branch's), passing", v)
	}
}

// A reaction the scheduler defers (a hold, a budget, no slot) is offered again at each
// check without reading the job's log again: a deferred watch costs what an idle one
// does.
func TestDeferredReactionCostsNoMoreThanAnIdleWatch(t *testing.T) {
	h := newHarness(t)
	h.cfg.Reactions.Review = nil
	h.gh.AddIssue(1, "add", "open")
	h.failingPR("sortie-1", fakegithub.SHA("a"), "boom")
	h.handOff("sortie-1")
	h.steps(4)
	h.w.Deferred(h.mustDue(KindCI), "held")
	before := h.gh.Counts()
	const n = 60
	for range n {
		h.step(interval)
		if d, ok := h.next(); ok {
			h.w.Deferred(d, "held")
		}
	}
	after := h.gh.Counts()
	if sent := after.Requests - before.Requests; sent > n {
		t.Errorf("%d requests in %d intervals while deferred, want at most one per interval", sent, n)
	}
	if charged := after.Charged - before.Charged; charged != 0 {
		t.Errorf("%d requests charged while deferred (the log read again?)", charged)
	}
}

// A reaction run that never reached the agent gives its dispatch back: the failure is
// offered again and counts no attempt. One that did reach it leaves the watch going:
// the next failing push is offered.
func TestEndedRunsResumeTheWatch(t *testing.T) {
	h := newHarness(t)
	h.cfg.Reactions.Review = nil
	h.gh.AddIssue(1, "add", "open")
	h.failingPR("sortie-1", fakegithub.SHA("a"), "boom")
	h.handOff("sortie-1")
	h.steps(4)
	d := h.mustDue(KindCI)
	if !h.w.Dispatched(context.Background(), d) {
		t.Fatal("Dispatched = false")
	}
	h.steps(10)
	h.noDue() // paused while the run runs
	h.w.Ended(d, false)
	h.steps(4)
	again := h.mustDue(KindCI)
	if again.Fingerprint != d.Fingerprint {
		t.Fatalf("offered %s, want the same failure again", again.Fingerprint)
	}
	if st, _ := h.st.ReactionStates(context.Background(), "1"); len(st) != 1 || st[0].Attempts != 0 || st[0].Dispatched {
		t.Fatalf("states after the release = %+v, want not dispatched, no attempt", st)
	}
	if !h.w.Dispatched(context.Background(), again) {
		t.Fatal("Dispatched of the released failure = false")
	}
	h.w.Ended(again, true) // the agent had it; the run ended held, say
	sha := fakegithub.SHA("b")
	h.gh.Push(2, sha)
	h.failBuild(sha, "boom b")
	h.steps(6)
	if d := h.mustDue(KindCI); d.Fingerprint != sha {
		t.Fatalf("offered %s, want the new push's failure", d.Fingerprint)
	}
}

// The API's views, dispatches and deferrals come from other goroutines while checks
// run: under -race, nothing the check writes is shared with them.
func TestViewsDispatchesAndChecksRunConcurrently(t *testing.T) {
	h := newHarness(t)
	h.gh.AddIssue(1, "add", "open")
	h.failingPR("sortie-1", fakegithub.SHA("a"), "boom")
	h.handOff("sortie-1")
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			_ = h.w.Views()
			if d, ok := h.w.Next(); ok {
				h.w.Deferred(d, "busy")
			}
		}
	}()
	for range 40 {
		h.w.checkDue(context.Background())
		h.clk.Advance(interval)
	}
	close(done)
	wg.Wait()
}

// A label the tracker will never take (missing in Linear, say) escalates by comment.
func TestCI_EscalationFallsBackToACommentWhenTheLabelCannotBeAdded(t *testing.T) {
	h := newHarness(t)
	h.cfg.Reactions.CI.MaxRetries = 0
	h.trk.labelErr = tracker.Errorf(tracker.ErrPayload, "add_label", "label %q does not exist in team ENG", "needs-human")
	h.gh.AddIssue(1, "add", "open")
	h.failingPR("sortie-1", fakegithub.SHA("a"), "boom")
	h.handOff("sortie-1")
	h.steps(4)
	if len(h.trk.comments) != 1 || len(h.w.Views()) != 0 {
		t.Fatalf("comments = %v, views = %+v; want one comment and the watch ended", h.trk.comments, h.w.Views())
	}
}

// Two issues cannot share a pull request, and a fork's branch (owner:branch) is not
// read from the agent's files: an agent cannot make Sortie watch a pull request that
// is not its own issue's.
func TestAnotherIssuesPullRequestOrAForkIsNotWatched(t *testing.T) {
	h := newHarness(t)
	h.gh.AddIssue(1, "add", "open")
	h.gh.AddIssue(3, "other", "open")
	sha := fakegithub.SHA("a")
	h.gh.AddPullRequest(2, "sortie-1", "main", fakegithub.HeadSHA(sha))
	h.failBuild(sha, "boom")
	h.handOff("sortie-1")
	h.steps(4)
	h.mustDue(KindCI)
	// Issue 3's agent names issue 1's branch.
	ws3 := t.TempDir()
	os.MkdirAll(filepath.Join(ws3, ".sortie"), 0o755)
	os.WriteFile(filepath.Join(ws3, ".sortie", "scm.json"), []byte(`{"branch":"sortie-1"}`), 0o644)
	h.w.Watch(store.ReactionWatch{IssueID: "3", Identifier: "octo/hello#3", Workspace: ws3, SessionID: "s3"})
	h.steps(8)
	for {
		d, ok := h.next()
		if !ok {
			break
		}
		if d.IssueID == "3" {
			t.Fatalf("issue 3 was offered issue 1's failure: %+v", d)
		}
	}
	for _, v := range h.w.Views() {
		if v.IssueID == "3" && (v.PR != 0 || !strings.Contains(v.LastError, "already watched")) {
			t.Fatalf("issue 3's view = %+v, want no pull request and the reason", v)
		}
	}
	os.WriteFile(filepath.Join(ws3, ".sortie", "scm.json"), []byte(`{"branch":"someone:feature"}`), 0o644)
	if b, _, err := readBranch(ws3); b != "" || err == nil {
		t.Fatalf("a fork's branch was read: %q %v", b, err)
	}
}

// Two daemons on one store: the other daemon's hand-offs are watched here after the
// next sync, a newer hand-off's session replaces the one read before, and a watch the
// other daemon ended ends here too.
func TestSync_AnotherDaemonsHandOffsAndEnds(t *testing.T) {
	h := newHarness(t)
	other := h.newWatcher() // the second daemon, on the same store and fakes
	h.gh.AddIssue(1, "add", "open")
	h.gh.AddPullRequest(2, "sortie-1", "main", fakegithub.HeadSHA(fakegithub.SHA("a")))
	other.checkDue(context.Background()) // its first sync: nothing watched yet
	if v := other.Views(); len(v) != 0 {
		t.Fatalf("the other daemon watches %+v before any hand-off", v)
	}
	h.handOff("sortie-1") // by this daemon
	h.clk.Advance(syncInterval)
	other.checkDue(context.Background())
	if v := other.Views(); len(v) != 1 || v[0].IssueID != "1" {
		t.Fatalf("after a sync the other daemon watches %+v, want issue 1", v)
	}
	// Handed off again here, later, with a new session.
	h.clk.Advance(time.Second)
	h.w.Watch(store.ReactionWatch{IssueID: "1", Identifier: "octo/hello#1", Workspace: h.ws, SessionID: "sess-new"})
	h.w.runOps(context.Background())
	h.clk.Advance(syncInterval)
	other.checkDue(context.Background())
	other.mu.Lock()
	got := other.watches["1"].SessionID
	other.mu.Unlock()
	if got != "sess-new" {
		t.Fatalf("the other daemon would resume %q, want the newer hand-off's sess-new", got)
	}
	// Ended here (the issue finished): the other daemon drops it at its next sync.
	h.w.Forget("1", true)
	h.w.runOps(context.Background())
	h.clk.Advance(syncInterval)
	other.checkDue(context.Background())
	if v := other.Views(); len(v) != 0 {
		t.Fatalf("the other daemon still watches %+v after the watch ended", v)
	}
}

// With only review reactions on, a merged pull request still ends the watch.
func TestReviewOnly_AMergedPullRequestEndsTheWatch(t *testing.T) {
	h := newHarness(t)
	h.cfg.Reactions.CI = nil
	h.gh.AddIssue(1, "add", "open")
	h.gh.AddPullRequest(2, "sortie-1", "main", fakegithub.HeadSHA(fakegithub.SHA("a")))
	h.handOff("sortie-1")
	h.steps(3)
	h.gh.MergePullRequest(2)
	h.steps(3 * prStateEvery)
	if v := h.w.Views(); len(v) != 0 {
		t.Fatalf("still watching a merged pull request with review reactions only: %+v", v)
	}
}
