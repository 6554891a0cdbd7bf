package fakegithub_test

import (
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"sortie/internal/testkit/fakegithub"
)

// clock is a settable clock for the fake.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// failingJob is a fake with pull request 1 whose Actions job "test" failed with a log.
func failingJob(t *testing.T, opts ...fakegithub.Option) (*fakegithub.Server, fakegithub.CheckRun, string) {
	t.Helper()
	f := fakegithub.New(t, opts...)
	pr := f.AddPullRequest(1, "feature", "main")
	run := f.AddCheckRun(pr.Head.SHA, "test", fakegithub.Completed("failure"))
	log := fakegithub.FailedJobLog("go test ./...", "--- FAIL: TestRetry (0.00s)", "    retry_test.go:12: got 3, want 2", "FAIL")
	f.SetJobLog(run.ID, log)
	return f, run, log
}

// fetchBlob GETs a signed log URL the way a careful client does: no token.
func fetchBlob(t *testing.T, loc string, hdr ...string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, loc, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// TestJobLogs_RedirectToSignedURL: the logs route answers 302 to a signed URL on
// another path, charged like any API call; the URL serves the log as text/plain
// without a token, uncharged.
func TestJobLogs_RedirectToSignedURL(t *testing.T) {
	f, run, log := failingJob(t)
	before := f.Counts()
	r := get(t, f, "/repos/octo/hello/actions/jobs/"+itoa(run.ID)+"/logs")
	loc := r.header.Get("Location")
	if r.status != http.StatusFound || loc == "" || r.header.Get("ETag") != "" {
		t.Fatalf("GET logs: %d, Location %q, ETag %q; want 302 with a Location and no ETag", r.status, loc, r.header.Get("ETag"))
	}
	u, err := url.Parse(loc)
	if err != nil || !strings.HasPrefix(loc, f.URL()+"/") || strings.HasPrefix(u.Path, "/repos/") || u.Query().Get("sig") == "" || u.Query().Get("se") == "" {
		t.Errorf("Location %q: want an absolute URL on the fake, off the API paths, signed (sig) with an expiry (se)", loc)
	}
	if c := f.Counts(); c.Charged != before.Charged+1 {
		t.Errorf("the redirect: charged went from %d to %d, want one more", before.Charged, c.Charged)
	}

	status, h, body := fetchBlob(t, loc)
	if status != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "text/plain") || body != log {
		t.Errorf("GET the signed URL: %d %q, body equal to the log: %v", status, h.Get("Content-Type"), body == log)
	}
	if c := f.Counts(); c.Charged != before.Charged+1 || c.Requests != before.Requests+2 {
		t.Errorf("after the blob fetch: counts %+v, want 2 more requests than %+v and only the redirect charged", c, before)
	}
	if lg := f.Log(); len(lg) < 2 || !strings.HasPrefix(lg[len(lg)-1], "GET /_blob/") || !strings.HasSuffix(lg[len(lg)-2], "/logs") {
		t.Errorf("Log ends %q, want the logs route then the blob", lg[max(0, len(lg)-2):])
	}

	// The tail is what an adapter wants: a suffix range gives it.
	status, _, tail := fetchBlob(t, loc, "Range", "bytes=-200")
	if status != http.StatusPartialContent || !strings.HasSuffix(log, tail) || len(tail) != 200 {
		t.Errorf("GET the signed URL with Range bytes=-200: %d, %d bytes, a suffix of the log: %v", status, len(tail), strings.HasSuffix(log, tail))
	}
	if f.LogRedirectAuthLeaks() != 0 {
		t.Errorf("LogRedirectAuthLeaks = %d after token-free fetches, want 0", f.LogRedirectAuthLeaks())
	}
}

// TestJobLogs_AuthLeakIsDetected: a client that follows the redirect carrying the
// token (as net/http does to the same host) is refused, and the leak is counted; one
// that drops the header is served.
func TestJobLogs_AuthLeakIsDetected(t *testing.T) {
	f, run, log := failingJob(t)
	path := f.URL() + "/repos/octo/hello/actions/jobs/" + itoa(run.ID) + "/logs"
	do := func(c *http.Client) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, path, nil)
		req.Header.Set("Authorization", "Bearer "+fakegithub.Token)
		req.Header.Set("Accept", "application/vnd.github+json")
		req.Header.Set("User-Agent", "test")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	status, body := do(&http.Client{})
	if status != http.StatusBadRequest || !strings.Contains(body, "<Code>InvalidAuthenticationInfo</Code>") || f.LogRedirectAuthLeaks() != 1 {
		t.Errorf("following the redirect with the token: %d %q, leaks %d; want 400 InvalidAuthenticationInfo and 1 leak", status, body, f.LogRedirectAuthLeaks())
	}
	careful := &http.Client{CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		req.Header.Del("Authorization")
		return nil
	}}
	if status, body := do(careful); status != http.StatusOK || body != log || f.LogRedirectAuthLeaks() != 1 {
		t.Errorf("following the redirect without the token: %d, the log: %v, leaks %d; want 200, the log, still 1 leak", status, body == log, f.LogRedirectAuthLeaks())
	}
}

// TestJobLogs_SignedURLRules: a signed URL expires after a minute of the fake's clock
// and refuses a changed signature; jobs without a log are 404.
func TestJobLogs_SignedURLRules(t *testing.T) {
	clk := &clock{now: time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)}
	f, run, _ := failingJob(t, fakegithub.WithClock(clk.Now))
	loc := get(t, f, "/repos/octo/hello/actions/jobs/"+itoa(run.ID)+"/logs").header.Get("Location")

	bad := strings.Replace(loc, "sig=", "sig=x", 1)
	if status, _, body := fetchBlob(t, bad); status != http.StatusForbidden || !strings.Contains(body, "AuthenticationFailed") {
		t.Errorf("a changed signature: %d %q, want 403 AuthenticationFailed", status, body)
	}
	clk.Advance(59 * time.Second)
	if status, _, _ := fetchBlob(t, loc); status != http.StatusOK {
		t.Errorf("59s after the redirect: %d, want 200", status)
	}
	clk.Advance(time.Second)
	if status, _, body := fetchBlob(t, loc); status != http.StatusForbidden || !strings.Contains(body, "AuthenticationFailed") {
		t.Errorf("a minute after the redirect: %d %q, want 403: the URL has expired", status, body)
	}

	sha := fakegithub.SHA("feature#1")
	queued := f.AddCheckRun(sha, "build")
	other := f.AddCheckRun(sha, "lint", fakegithub.Completed("failure"), fakegithub.ByApp("circleci-checks"))
	for _, id := range []int64{queued.ID, other.ID, 999999} {
		if r := get(t, f, "/repos/octo/hello/actions/jobs/"+itoa(id)+"/logs"); r.status != http.StatusNotFound {
			t.Errorf("logs of job %d, which has none: %d, want 404", id, r.status)
		}
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("SetJobLog on another app's check run: no panic, want one (it is no Actions job)")
			}
		}()
		f.SetJobLog(other.ID, "x")
	}()
}

// TestActionsLog_Format: the builders write what the runner writes: a byte-order mark,
// a seven-decimal UTC timestamp on every line, group and error markers, ANSI colours,
// and the clean-up after the error.
func TestActionsLog_Format(t *testing.T) {
	log := fakegithub.ActionsLog("##[group]Run make", "\x1b[36;1mmake test\x1b[0m", "##[endgroup]", "\x1b[31mFAIL\x1b[0m\nexit 2", "##[error]Process completed with exit code 2.")
	if !strings.HasPrefix(log, "\ufeff2026-11-28T10:00:00.0000000Z ##[group]Run make\n") {
		t.Errorf("ActionsLog starts %q, want a BOM, the first timestamp and the first line", log[:min(len(log), 60)])
	}
	stamp := regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{7}Z `)
	lines := strings.Split(strings.TrimSuffix(strings.TrimPrefix(log, "\ufeff"), "\n"), "\n")
	if len(lines) != 6 {
		t.Errorf("ActionsLog made %d lines, want 6 (a line with a newline is two)", len(lines))
	}
	var prev string
	for _, l := range lines {
		ts := stamp.FindString(l)
		if ts == "" || ts <= prev {
			t.Errorf("line %q: want a timestamp after %q", l, prev)
		}
		prev = ts
	}

	job := fakegithub.FailedJobLog("go vet ./...\ngo test ./...", "\x1b[31m--- FAIL: TestX\x1b[0m")
	lines = strings.Split(strings.TrimSuffix(job, "\n"), "\n")
	texts := make([]string, len(lines))
	for i, l := range lines {
		texts[i] = stamp.ReplaceAllString(strings.TrimPrefix(l, "\ufeff"), "")
	}
	for _, want := range []string{"##[group]Run go vet ./...", "\x1b[36;1mgo vet ./...\x1b[0m", "\x1b[36;1mgo test ./...\x1b[0m", "\x1b[31m--- FAIL: TestX\x1b[0m", "##[error]Process completed with exit code 1."} {
		if !slices.Contains(texts, want) {
			t.Errorf("FailedJobLog has no line %q", want)
		}
	}
	errAt := slices.Index(texts, "##[error]Process completed with exit code 1.")
	if errAt < slices.Index(texts, "\x1b[31m--- FAIL: TestX\x1b[0m") || errAt >= len(texts)-3 || texts[len(texts)-1] != "Cleaning up orphan processes" {
		t.Errorf("FailedJobLog: the error at line %d of %d, last %q; want it after the output and the clean-up after it", errAt, len(texts), texts[len(texts)-1])
	}
}
