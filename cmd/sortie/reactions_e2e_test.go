package main

// End-to-end for issue #36, reactions after the hand-off (docs/reactions.md): the
// sortie binary, the real claude CLI (pinned, from .tools/) against the fake model API,
// and the fake GitHub as both the tracker and the code host. An issue is handed off; CI
// fails on its pull request and the same agent session is resumed with the failure;
// the daemon restarts and does not act on that failure again; a reviewer requests a
// change and the session is resumed with the comment; CI then fails twice more and the
// second failure escalates to humans instead of reaching the agent.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"sortie/internal/store"
	"sortie/internal/testkit/clis"
	"sortie/internal/testkit/fakegithub"
	"sortie/internal/testkit/fakemodel"
)

// reactionTimeout guards each wait for a claude run or a reaction: a run is a few
// seconds of the real CLI; a reaction waits for a poll of a second.
const reactionTimeout = 2 * time.Minute

// reactionBranch is the workspace's branch (hooks.after_create makes the workspace a
// git repository on it), by which Sortie finds the pull request.
const reactionBranch = "sortie-e2e-1"

// reactionsWorkflow is the test's WORKFLOW.md: the fake GitHub as the tracker (states
// are labels) and, through it, the code host; claude as the agent; reactions on.
//
// ci_failure.max_retries is 1, so that the third CI failure escalates (the arithmetic
// is at step 6 of the test). Polls are fast (500 ms, 1 s) so that the test is short.
func reactionsWorkflow(gh *fakegithub.Server, claude string, port int) string {
	return fmt.Sprintf(`---
tracker:
  kind: github
  project: %s
  api_key: $GITHUB_TOKEN
  endpoint: %s
  active_states: [todo, in-progress]
  in_progress_state: in-progress
  handoff_state: review
  terminal_states: [done]
polling:
  interval_ms: 500
server:
  port: %d
agent:
  kind: claude-code
  command: %s
  max_turns: 3
  max_retry_backoff_ms: 1000
workspace:
  root: ./ws
hooks:
  after_create: git init -q -b %s .
db_path: ./sortie.db
claude-code:
  permission_mode: bypassPermissions
  model: claude-sonnet-4-5
reactions:
  ci_failure: {provider: github, max_retries: 1, max_log_lines: 20, poll_interval_ms: 1000}
  review_comments: {provider: github, max_continuation_turns: 3, debounce_ms: 0, poll_interval_ms: 1000}
---
Fix {{ .issue.identifier }}: {{ .issue.title }}.
`, gh.Project(), gh.URL(), port, claude, reactionBranch)
}

// agentWrites is one scripted agent run: a Bash call that writes file and asks for
// review (.sortie/status), then a closing reply.
func agentWrites(file, content, closing string) []fakemodel.Reply {
	return []fakemodel.Reply{
		{Text: "Working on it.", ToolUses: []fakemodel.ToolUse{{Name: "Bash", Input: map[string]any{
			"command":     fmt.Sprintf(`printf %%s %q > %s && mkdir -p .sortie && echo needs-human-review > .sortie/status`, content, file),
			"description": "write " + file + " and ask for review"}}}},
		{Text: closing},
	}
}

// reactionsRig is the test's world: the fakes, the daemon of the moment, and what the
// fake GitHub saw of the issue's label changes.
type reactionsRig struct {
	t      *testing.T
	gh     *fakegithub.Server
	m      *fakemodel.Server
	dir    string
	wf     string
	dbPath string
	base   string
	env    []string
	d      *runningDaemon
	token  string

	mu sync.Mutex
	// labelSets are the label sets of issue #1's PATCHes, in order.
	labelSets [][]string
}

// newReactionsRig sets up the fakes (issue #1 labelled todo; the model scripted for the
// first run: hello.txt, then review) and the workflow; start starts the daemon. gate,
// when not nil, is called (off the fake's lock) before the fake serves each request:
// it may hold a request back to order it against others.
func newReactionsRig(t *testing.T, gate func(r *reactionsRig, req *http.Request)) *reactionsRig {
	claude := clis.Claude(t)
	gh := fakegithub.New(t)
	gh.AddIssue(1, "add hello.txt", "open", "todo")
	m := fakemodel.Start(t, agentWrites("hello.txt", "hello", "Added hello.txt; ready for review.")...)
	dir := t.TempDir()
	port := freePort(t)
	r := &reactionsRig{t: t, gh: gh, m: m, dir: dir, dbPath: filepath.Join(dir, "sortie.db"),
		base: "http://127.0.0.1:" + strconv.Itoa(port)}
	// The same HOME for every daemon of the test: claude keeps its sessions there, and
	// a reaction after a restart resumes one.
	r.env = clis.ClaudeEnv(testEnv(t.TempDir(), "GITHUB_TOKEN="+fakegithub.Token), m.URL, t.TempDir())
	r.wf = writeFile(t, dir, "WORKFLOW.md", reactionsWorkflow(gh, claude, port))
	// Record the label sets Sortie writes to issue #1 (the fake keeps only the last).
	gh.SetHook(func(w http.ResponseWriter, req *http.Request) bool {
		if gate != nil {
			gate(r, req)
		}
		if req.Method == http.MethodPatch && req.URL.Path == "/repos/octo/hello/issues/1" {
			body, _ := io.ReadAll(req.Body)
			req.Body = io.NopCloser(bytes.NewReader(body))
			var patch struct {
				Labels *[]string `json:"labels"`
			}
			if json.Unmarshal(body, &patch) == nil && patch.Labels != nil {
				r.mu.Lock()
				r.labelSets = append(r.labelSets, slices.Clone(*patch.Labels))
				r.mu.Unlock()
			}
		}
		return false
	})
	t.Cleanup(func() {
		if t.Failed() || os.Getenv("SORTIE_E2E_DUMP") != "" {
			r.mu.Lock()
			t.Logf("issue #1's label sets, in order: %v", r.labelSets)
			r.mu.Unlock()
			t.Logf("issue #1's runs: %s", describeRuns(r.runs()))
			t.Logf("fake GitHub log (%d requests):\n%s", len(gh.Log()), squeeze(gh.Log()))
		}
	})
	return r
}

// start starts a daemon on the rig's workflow and database and waits for its API.
func (r *reactionsRig) start() {
	r.t.Helper()
	r.d = startDaemon(r.t, r.env, r.wf)
	waitHTTP(r.t, r.d, r.base+"/livez")
	r.token = daemonToken(r.t, r.dbPath)
}

// stop stops the daemon with SIGTERM and waits for its clean exit.
func (r *reactionsRig) stop() {
	r.t.Helper()
	r.d.signal(syscall.SIGTERM)
	if code := r.d.wait(shutdownBound); code != exitOK {
		r.t.Fatalf("SIGTERM: want exit 0, got %d\n%s", code, r.d.stderrText())
	}
}

// runs are issue #1's runs, oldest first.
func (r *reactionsRig) runs() []store.Run { return runsByIssue(r.t, r.dbPath)["1"] }

// labels are issue #1's labels on the fake.
func (r *reactionsRig) labels() []string {
	is, _ := r.gh.Issue(1)
	return is.Labels
}

// handedOff reports whether issue #1 carries the handoff label and no active one.
func (r *reactionsRig) handedOff() bool {
	l := r.labels()
	return slices.Contains(l, "review") && !slices.Contains(l, "todo") && !slices.Contains(l, "in-progress")
}

// waitRun waits until issue #1 has n runs, the last one ended handed off and the
// issue labelled review, and returns the runs. More than n runs fails at once: a
// reaction dispatched twice.
func (r *reactionsRig) waitRun(n int, what string) []store.Run {
	r.t.Helper()
	var runs []store.Run
	pollUntil(r.t, reactionTimeout, what, func() (bool, string) {
		runs = r.runs()
		if len(runs) > n {
			r.t.Fatalf("%s: issue #1 has %d runs, want %d: %s", what, len(runs), n, describeRuns(runs))
		}
		if len(runs) < n {
			return false, fmt.Sprintf("%d runs: %s", len(runs), describeRuns(runs))
		}
		last := runs[n-1]
		if last.Status.Terminal() && last.Status != store.StatusHandedOff {
			r.t.Fatalf("%s: run %d ended %s (%s), want handed_off", what, last.ID, last.Status, last.Error)
		}
		if last.Status != store.StatusHandedOff || !r.handedOff() {
			return false, fmt.Sprintf("last run %s, labels %v", last.Status, r.labels())
		}
		return true, ""
	})
	return runs
}

// requireRuns fails unless issue #1 has exactly n runs, none running.
func (r *reactionsRig) requireRuns(n int, when string) {
	r.t.Helper()
	runs := r.runs()
	if len(runs) != n {
		r.t.Fatalf("%s: issue #1 has %d runs, want %d: %s", when, len(runs), n, describeRuns(runs))
	}
	for _, run := range runs {
		if run.Status == store.StatusRunning {
			r.t.Fatalf("%s: run %d is running: %s", when, run.ID, describeRuns(runs))
		}
	}
}

func describeRuns(runs []store.Run) string {
	var parts []string
	for _, run := range runs {
		parts = append(parts, fmt.Sprintf("#%d attempt %d reaction %q %s session %q turns %d %s", run.ID, run.Attempt, run.Reaction, run.Status, run.SessionID, run.Turns, run.Error))
	}
	return "[" + strings.Join(parts, "; ") + "]"
}

// mark is a point in the fake GitHub's request log.
func (r *reactionsRig) mark() int { return len(r.gh.Log()) }

// served counts the requests since mark whose "METHOD /path?query" contains any of subs.
func (r *reactionsRig) served(mark int, subs ...string) int {
	n := 0
	for _, l := range r.gh.Log()[mark:] {
		for _, s := range subs {
			if strings.Contains(l, s) {
				n++
				break
			}
		}
	}
	return n
}

// waitServed waits until the fake has served n requests matching subs since mark: n
// polls of that kind have happened.
func (r *reactionsRig) waitServed(mark, n int, what string, subs ...string) {
	r.t.Helper()
	pollUntil(r.t, reactionTimeout, what, func() (bool, string) {
		got := r.served(mark, subs...)
		return got >= n, fmt.Sprintf("%d of %d requests with %q served", got, n, subs)
	})
}

// The request kinds the test waits on.
var (
	checkPolls   = []string{"/check-runs"}
	reviewPolls  = []string{"/pulls/2/reviews", "/pulls/2/comments"}
	trackerPolls = []string{"GET /repos/octo/hello/issues?"}
)

// requestAfter waits for the model request that follows the first n and returns it.
func (r *reactionsRig) requestAfter(n int, what string) fakemodel.Request {
	r.t.Helper()
	pollUntil(r.t, reactionTimeout, what, func() (bool, string) {
		got := len(r.m.Messages())
		return got > n, fmt.Sprintf("%d model requests, waiting for request %d", got, n+1)
	})
	return r.m.Messages()[n]
}

// lastUserText is the text of the last user message of a model request: the prompt of
// the turn it starts.
func lastUserText(req fakemodel.Request) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == "user" {
			return req.Messages[i].Text()
		}
	}
	return ""
}

// waitFile waits until the agent has written file in the workspace.
func waitFile(t *testing.T, ws, file string) {
	t.Helper()
	pollUntil(t, reactionTimeout, "the agent writing "+file, func() (bool, string) {
		_, err := os.Stat(filepath.Join(ws, file))
		return err == nil, fmt.Sprint(err)
	})
}

// failCI makes commit sha's `build` check run fail with a GitHub Actions log whose
// test output ends with line (in red, as go test's wrappers print it), adds a passing
// `lint`, and pushes sha as pull request #2's head.
func failCI(gh *fakegithub.Server, sha, line string) {
	gh.AddCheckRun(sha, "lint", fakegithub.Completed("success"))
	build := gh.AddCheckRun(sha, "build", fakegithub.Completed("failure"))
	gh.SetJobLog(build.ID, fakegithub.FailedJobLog("go test ./...",
		"=== RUN   TestAdd",
		"    add_test.go:9: not what we wanted",
		"\x1b[31m--- FAIL: TestAdd (0.00s)\x1b[0m",
		"\x1b[31m"+line+"\x1b[0m",
		"FAIL\tocto/hello\t0.004s"))
	gh.Push(2, sha)
}

// requireCIPrompt checks the prompt of a CI reaction run: the section after the
// rendered template, the failing check, the log's last lines and no more, no ANSI.
func requireCIPrompt(t *testing.T, prompt, logLine string) {
	t.Helper()
	section := strings.Index(prompt, "## CI failed on pull request #2")
	if section < 0 {
		t.Fatalf("the CI reaction's prompt has no %q section; its end:\n%s", "## CI failed on pull request #2", tail(prompt, 1500))
	}
	if tmpl := strings.Index(prompt, "Fix 1: add hello.txt."); tmpl < 0 || tmpl > section {
		t.Errorf("the CI reaction's prompt does not have the rendered template before the section (template at %d, section at %d):\n%s", tmpl, section, prompt)
	}
	ci := prompt[section:]
	for _, want := range []string{"build", "failure", logLine} {
		if !strings.Contains(ci, want) {
			t.Errorf("the CI section lacks %q:\n%s", want, ci)
		}
	}
	// max_log_lines 20: the runner's set-up, forty lines before the end, is not sent.
	if strings.Contains(ci, "Current runner version") {
		t.Errorf("the CI section carries more than the log's last 20 lines:\n%s", ci)
	}
	for _, ansi := range []string{"\x1b", "[31m", "[0m", "[36;1m"} {
		if strings.Contains(prompt, ansi) {
			t.Errorf("the CI reaction's prompt carries the ANSI sequence %q:\n%q", ansi, ci)
		}
	}
}

// TestReactions_ClaudeFixesCIAndReviewThenEscalates is issue #36's end-to-end test:
//
//  1. the first run writes hello.txt and hands the issue off;
//  2. a pull request is opened on the workspace's branch and CI fails on its head, A;
//  3. the same session is resumed with the failure (the check, the log's last lines,
//     no ANSI) and the agent "fixes" it;
//  4. the daemon restarts with A still the head: A is not sent again, the watch goes
//     on; then B passes;
//  5. a bot's change request is dropped; a member's inline comment is sent, the agent
//     addresses it, the reviewer approves; idle polls are 304s;
//  6. CI fails on C (sent: B cleared the attempts) and on D (escalated: needs-human,
//     no run).
//
// Throughout: one run per reaction, each resuming the first session in the issue's
// workspace and moving the issue back to in-progress; the token nowhere it must not be.
func TestReactions_ClaudeFixesCIAndReviewThenEscalates(t *testing.T) {
	t.Parallel()
	start := time.Now()
	step := func(format string, a ...any) {
		t.Logf("%6.1fs  %s", time.Since(start).Seconds(), fmt.Sprintf(format, a...))
	}
	r := newReactionsRig(t, nil)
	gh, m, dir := r.gh, r.m, r.dir

	// The workflow validates with no warning: reactions are known keys.
	if v := runSortie(t, dir, r.env, "validate", r.wf); v.code != exitOK || !strings.Contains(v.stdout, "(0 warnings)") {
		t.Errorf("sortie validate: want valid with no warning, got:\n%s", v)
	}

	// 1. The first run writes hello.txt and hands the issue off.
	r.start()
	runs := r.waitRun(1, "the first run handed off")
	first := runs[0]
	ws := first.Workspace
	if ws == "" || first.SessionID == "" {
		t.Fatalf("the first run has workspace %q, session %q", ws, first.SessionID)
	}
	if head, err := os.ReadFile(filepath.Join(ws, ".git", "HEAD")); err != nil || strings.TrimSpace(string(head)) != "ref: refs/heads/"+reactionBranch {
		t.Fatalf("the workspace's .git/HEAD = %q (%v): hooks.after_create did not make it a repository on %s", head, err, reactionBranch)
	}
	firstPrompt := lastUserText(m.Messages()[0])
	step("1. first run handed off: %s", describeRuns(runs))

	// 2. The pull request is opened (by a person or the agent's push: the test) on the
	// workspace's branch, and CI fails on its first commit, A.
	shaA, shaB, shaC, shaD := fakegithub.SHA("A"), fakegithub.SHA("B"), fakegithub.SHA("C"), fakegithub.SHA("D")
	gh.AddPullRequest(2, reactionBranch, "main", fakegithub.HeadSHA(fakegithub.SHA("opened")))
	before := len(m.Messages())
	m.Push(agentWrites("fix.txt", "fixed", "Fixed TestAdd.")...)
	const logA = "FAIL: TestAdd expected 4 got 5"
	failCI(gh, shaA, logA)

	// 3. The reaction resumes the same session with the failure; the agent "fixes" it.
	req := r.requestAfter(before, "the CI reaction's first model request")
	prompt := lastUserText(req)
	requireCIPrompt(t, prompt, logA)
	step("3. CI reaction's prompt section:\n%s", prompt[strings.Index(prompt, "## CI failed"):])
	transcript := req.Transcript()
	if !strings.Contains(strings.TrimSuffix(transcript, prompt), firstPrompt) || !strings.Contains(string(req.Body), "hello.txt") {
		t.Errorf("the CI reaction's first request does not carry the first run's conversation (resumed session):\n%s", transcript)
	}
	waitFile(t, ws, "fix.txt")
	runs = r.waitRun(2, "the CI reaction run handed off")
	if runs[1].SessionID != first.SessionID {
		t.Errorf("the CI reaction run has session %q, want the first run's %q resumed", runs[1].SessionID, first.SessionID)
	}
	if runs[1].Workspace != ws {
		t.Errorf("the CI reaction ran in %q, want the issue's workspace %q", runs[1].Workspace, ws)
	}

	requests := len(m.Messages())
	step("3. CI reaction run handed off: %s", describeRuns(runs))

	// 4. Restart while A, already acted on, is still the head (the fix is pushed after):
	// neither the daemon that reacted nor the next one reacts to A again, and the next
	// one keeps watching.
	at := r.mark()
	r.waitServed(at, 2, "the first daemon polling A's checks after the second hand-off", checkPolls...)
	r.requireRuns(2, "after the second hand-off, A's failure still the head")
	r.stop()
	firstDaemon := r.d
	step("4. first daemon stopped")
	r.start()
	at = r.mark()
	r.waitServed(at, 3, "the restarted daemon polling A's checks", checkPolls...)
	r.requireRuns(2, "after the restart, A's failure still the head")
	if n := len(m.Messages()); n != requests {
		t.Errorf("the model got %d requests around the restart, want none", n-requests)
	}
	if r.served(at, "/commits/"+shaA[:7]) == 0 {
		t.Errorf("the restarted daemon's check polls do not name A, the head's SHA:\n%s", squeeze(r.gh.Log()[at:]))
	}
	step("4. restarted daemon polled A's checks 3 times, no new run")
	gh.AddCheckRun(shaB, "lint", fakegithub.Completed("success"))
	gh.AddCheckRun(shaB, "build", fakegithub.Completed("success"))
	gh.Push(2, shaB)
	at = r.mark()
	r.waitServed(at, 2, "the daemon polling B's (passing) checks", checkPolls...)

	// 5. A bot requests changes: dropped. Then a person does, with an inline comment.
	bot := fakegithub.User{Login: "lint-bot[bot]"}
	botReview := gh.AddReview(2, bot, "PENDING", "")
	gh.AddReviewComment(2, botReview.ID, bot, "main.go", intp(1), nil, "zzz-bot-nit: add a doc comment")
	gh.SubmitReview(2, botReview.ID, "CHANGES_REQUESTED", "Automated review.")
	at = r.mark()
	r.waitServed(at, 3, "the daemon polling the reviews after the bot's", reviewPolls...)
	r.requireRuns(2, "after a bot's change request")
	step("5. the bot's change request drew no run")

	before = len(m.Messages())
	m.Push(agentWrites("rename.txt", "renamed", "Renamed x.")...)
	erin := fakegithub.User{Login: "erin"}
	review := gh.AddReview(2, erin, "PENDING", "")
	gh.AddReviewComment(2, review.ID, erin, "main.go", intp(3), nil, "please rename x")
	gh.SubmitReview(2, review.ID, "CHANGES_REQUESTED", "One thing.")
	req = r.requestAfter(before, "the review reaction's first model request")
	prompt = lastUserText(req)
	section := strings.Index(prompt, "## Review comments on pull request #2")
	if section < 0 {
		t.Fatalf("the review reaction's prompt has no review section; its end:\n%s", tail(prompt, 1500))
	}
	for _, want := range []string{"main.go", "erin", "please rename x"} {
		if !strings.Contains(prompt[section:], want) {
			t.Errorf("the review section lacks %q:\n%s", want, prompt[section:])
		}
	}
	if !regexp.MustCompile(`main\.go\D{0,20}\b3\b`).MatchString(prompt[section:]) {
		t.Errorf("the review section does not give the comment's line (main.go, line 3):\n%s", prompt[section:])
	}
	if strings.Contains(prompt, "zzz-bot-nit") || strings.Contains(prompt, "lint-bot") {
		t.Errorf("the review reaction's prompt carries the bot's comment:\n%s", prompt)
	}
	step("5. review reaction's prompt section:\n%s", prompt[section:])
	waitFile(t, ws, "rename.txt")
	gh.AddReview(2, erin, "APPROVED", "Thanks.")
	runs = r.waitRun(3, "the review reaction run handed off")
	if runs[2].SessionID != first.SessionID {
		t.Errorf("the review reaction run has session %q, want the first run's %q resumed", runs[2].SessionID, first.SessionID)
	}

	step("5. review reaction run handed off: %s", describeRuns(runs))

	// Idle: with nothing changing on GitHub, the watch's polls are 304s, not charged.
	at = r.mark()
	r.waitServed(at, 2, "check polls after the third hand-off", checkPolls...)
	r.waitServed(at, 2, "review polls after the third hand-off", reviewPolls...)
	quiet := gh.Counts()
	at = r.mark()
	r.waitServed(at, 3, "idle check polls", checkPolls...)
	r.waitServed(at, 3, "idle review polls", reviewPolls...)
	if c := gh.Counts(); c.Charged != quiet.Charged || c.NotModified <= quiet.NotModified {
		t.Errorf("idle polls: counts went from %+v to %+v, want more 304s and nothing charged; requests:\n%s",
			quiet, c, squeeze(gh.Log()[at:]))
	}
	r.requireRuns(3, "idle after the approval")
	var watched map[string]any
	getJSON(t, r.token, r.base+"/api/v1/state", &watched)
	b, _ := json.Marshal(watched["reactions"])
	step("idle: /api/v1/state reactions: %s", b)
	step("idle polls: %+v then %+v", quiet, gh.Counts())

	// 6. CI fails on C: B passed, which cleared the CI attempts, so this is attempt 1 of
	// max_retries 1 and goes to the agent. The agent's next push, D, fails too (pushed
	// while its run ends, as an agent pushes before it stops): attempts (1) have reached
	// max_retries (1), so D is escalated, labelled needs-human, and no run starts. (A
	// was attempt 1 before B reset it; with max_retries 2, D would be sent too and a
	// fifth failure escalate.)
	before = len(m.Messages())
	m.Push(agentWrites("ci2.txt", "fixed again", "Fixed TestAdd again.")...)
	const logC = "FAIL: TestAdd expected 6 got 7"
	failCI(gh, shaC, logC)
	req = r.requestAfter(before, "the second CI reaction's first model request")
	requireCIPrompt(t, lastUserText(req), logC)
	if strings.Contains(lastUserText(req), logA) {
		t.Errorf("the second CI reaction's prompt carries A's failure:\n%s", lastUserText(req))
	}
	waitFile(t, ws, "ci2.txt")
	failCI(gh, shaD, "FAIL: TestAdd expected 8 got 9")
	r.waitRun(4, "the second CI reaction run handed off")
	requests = len(m.Messages())
	step("6. second CI reaction run handed off, D pushed during it: %s", describeRuns(r.runs()))

	pollUntil(t, reactionTimeout, "issue #1 labelled needs-human", func() (bool, string) {
		return slices.Contains(r.labels(), "needs-human"), fmt.Sprintf("labels %v", r.labels())
	})
	step("6. D escalated: labels %v", r.labels())
	at = r.mark()
	r.waitServed(at, 5, "tracker polls after the escalation", trackerPolls...)
	r.requireRuns(4, "after the escalation")
	if n := len(m.Messages()); n != requests {
		t.Errorf("the model got %d requests after the escalation, want none", n-requests)
	}
	if l := r.labels(); !slices.Contains(l, "review") || !slices.Contains(l, "needs-human") {
		t.Errorf("issue #1's labels after the escalation: %v, want review and needs-human", l)
	}

	// The run history says which runs were reactions, and of which kind.
	var kinds []string
	for _, run := range r.runs() {
		kinds = append(kinds, run.Reaction)
	}
	if want := []string{"", store.ReactionCI, store.ReactionReview, store.ReactionCI}; !slices.Equal(kinds, want) {
		t.Errorf("the runs' reaction kinds are %q, want %q", kinds, want)
	}

	// Every reaction moved the issue back to an active state before its run: four
	// label sets with in-progress (the first run's and three reactions').
	r.mu.Lock()
	moves := 0
	for _, set := range r.labelSets {
		if slices.Contains(set, "in-progress") {
			moves++
		}
	}
	sets := slices.Clone(r.labelSets)
	r.mu.Unlock()
	if moves != 4 {
		t.Errorf("issue #1 was moved to in-progress %d times, want 4 (the first run and three reactions): %v", moves, sets)
	}

	// The token never reached the daemon's log, the workspace or the model.
	for _, d := range []*runningDaemon{firstDaemon, r.d} {
		if strings.Contains(d.stderrText(), fakegithub.Token) {
			t.Errorf("the GitHub token appears in the daemon's log")
		}
	}
	filepath.WalkDir(ws, func(path string, e fs.DirEntry, err error) error {
		if err != nil || !e.Type().IsRegular() {
			return nil
		}
		if b, err := os.ReadFile(path); err == nil && bytes.Contains(b, []byte(fakegithub.Token)) {
			t.Errorf("the GitHub token is in the workspace file %s", path)
		}
		return nil
	})
	for i, q := range m.Requests() {
		if bytes.Contains(q.Body, []byte(fakegithub.Token)) {
			t.Errorf("model request %d carries the GitHub token", i)
		}
	}
	if n := gh.LogRedirectAuthLeaks(); n != 0 {
		t.Errorf("the daemon sent the API token to the log storage host %d times", n)
	}

	var state map[string]any
	getJSON(t, r.token, r.base+"/api/v1/state", &state)
	b, _ = json.Marshal(state["reactions"])
	step("/api/v1/state reactions: %s; check polls after the escalation: %d", b, r.served(at, checkPolls...))
}

func intp(n int) *int { return &n }

// squeeze joins log lines, a run of identical ones as one line with its count.
func squeeze(lines []string) string {
	var b strings.Builder
	for i := 0; i < len(lines); {
		j := i
		for j < len(lines) && lines[j] == lines[i] {
			j++
		}
		b.WriteString(lines[i])
		if j-i > 1 {
			fmt.Fprintf(&b, " (×%d)", j-i)
		}
		b.WriteByte('\n')
		i = j
	}
	return b.String()
}

// tail is the last n bytes of s (the end of a prompt, where a reaction's section is,
// without the CLI's reminders before it).
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// TestReactions_ReactionRunSurvivesAPollDuringItsStart: a poll that reads the
// handed-off issue's state while a reaction's run is starting, before the run has moved
// the issue back to work, must not stop that run. Were it stopped, the reaction would
// be lost: its fingerprint is already marked dispatched, so the failure never reaches
// the agent; and when the run's move lands anyway, the next poll finds the issue active
// and dispatches a fresh run, a new session without the failure.
//
// The fake answers the reaction run's fetch of the issue (GET .../issues/1/parent, the
// last request of its FetchIssueByID) 1.5 s late, three poll intervals: a slow GitHub.
// Sortie's GitHub client sends one request at a time, so the poll's read of the issue
// queues behind it and goes before the run's move. The test above meets this order by
// chance, about one run in seven on an idle machine. The latency is a fault injected,
// not a wait for a condition: nothing the daemon does can be waited on instead.
func TestReactions_ReactionRunSurvivesAPollDuringItsStart(t *testing.T) {
	t.Parallel()
	var armed atomic.Bool
	r := newReactionsRig(t, func(r *reactionsRig, req *http.Request) {
		if req.Method == http.MethodGet && req.URL.Path == "/repos/octo/hello/issues/1/parent" && armed.CompareAndSwap(true, false) {
			time.Sleep(1500 * time.Millisecond)
		}
	})
	r.start()
	runs := r.waitRun(1, "the first run handed off")

	armed.Store(true)
	r.gh.AddPullRequest(2, reactionBranch, "main", fakegithub.HeadSHA(fakegithub.SHA("opened")))
	before := len(r.m.Messages())
	r.m.Push(agentWrites("fix.txt", "fixed", "Fixed TestAdd.")...)
	const logA = "FAIL: TestAdd expected 4 got 5"
	failCI(r.gh, fakegithub.SHA("A"), logA)
	// The run is stopped at once when the bug is there: fail then, with the evidence,
	// rather than wait for a run that never comes (the reaction may be lost outright).
	pollUntil(t, reactionTimeout, "the CI reaction run", func() (bool, string) {
		if line := "issue left the active states: stopping its agent"; r.d.countLines(line) > 0 {
			t.Fatalf("the daemon stopped the reaction's run while it was starting (%q, labels %v); runs: %s",
				line, r.labels(), describeRuns(r.runs()))
		}
		runs = r.runs()
		return len(runs) >= 2 && runs[1].Status.Terminal(), describeRuns(runs)
	})
	runs = r.waitRun(2, "the CI reaction run handed off")
	if armed.Load() {
		t.Errorf("the reaction run never fetched the issue's parent: no latency was injected, the test proved nothing")
	}
	if runs[1].SessionID != runs[0].SessionID {
		t.Errorf("the CI reaction run has session %q, want the first run's %q resumed", runs[1].SessionID, runs[0].SessionID)
	}
	requireCIPrompt(t, lastUserText(r.requestAfter(before, "the CI reaction's first model request")), logA)
}
