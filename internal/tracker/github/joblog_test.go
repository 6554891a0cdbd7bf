package github

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"sortie/internal/tracker"
)

const jobLogPath = "/repos/harbor-labs/tidewatch/actions/jobs/39120345602/logs"

// redirectTo answers the job-log request as GitHub does: 302 to a signed URL.
func redirectTo(location string) func(*http.Request) answer {
	return func(*http.Request) answer {
		return answer{status: http.StatusFound, header: http.Header{"Location": {location}}}
	}
}

// blobServer is log storage on another host, over TLS: it records what it was sent
// and serves content with byte ranges (http.ServeContent), unless ranges is false.
type blobServer struct {
	srv    *httptest.Server
	mu     sync.Mutex
	auth   []string // the Authorization header of each request, "" when absent
	ranges []string
}

func newBlobServer(t *testing.T, content []byte, ranges bool) *blobServer {
	b := &blobServer{}
	b.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.mu.Lock()
		b.auth = append(b.auth, r.Header.Get("Authorization"))
		b.ranges = append(b.ranges, r.Header.Get("Range"))
		b.mu.Unlock()
		if !ranges {
			r.Header.Del("Range")
		}
		w.Header().Set("Content-Type", "text/plain")
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(content))
	}))
	t.Cleanup(b.srv.Close)
	return b
}

// trustBlob makes tr's client trust the blob server's certificate, as a system root
// store trusts GitHub's storage.
func trustBlob(tr *Tracker, b *blobServer) {
	tr.client.Transport = b.srv.Client().Transport.(*http.Transport).Clone()
}

func wantLines(t *testing.T, got string, want ...string) {
	t.Helper()
	if g := strings.Split(got, "\n"); strings.Join(g, "\n") != strings.Join(want, "\n") {
		t.Errorf("excerpt\n got %q\nwant %q", g, want)
	}
}

// TestJobLogTail_RedirectWithoutToken: the log is fetched from where GitHub redirects,
// without the Authorization header; here the storage is the endpoint's own origin.
func TestJobLogTail_RedirectWithoutToken(t *testing.T) {
	s := newAPIServer(t)
	s.route(jobLogPath, redirectTo(s.URL()+"/blob/productionresultssa1/job-39120345602.txt?sv=2025-01-05&sig=SECRETSIG"))
	s.static("/blob/productionresultssa1/job-39120345602.txt", ownFile(t, "job_log.txt"))
	tr := newSCMTracker(t, s.URL())

	got, err := tr.JobLogTail(context.Background(), scmRepo, 39120345602, 3)
	if err != nil {
		t.Fatal(err)
	}
	wantLines(t, got, "Temporarily overriding HOME='/home/runner/work/_temp/7c1d2e3f' before making global git config changes",
		"$ /usr/bin/git config --local --name-only --get-regexp core\\.sshCommand", "Cleaning up orphan processes")
	hits := s.log()
	if len(hits) != 2 || hits[0].authorization != "Bearer "+scmToken {
		t.Fatalf("requests %v; want the API (with the token) then the blob", paths(hits))
	}
	if blob := hits[1]; blob.authorization != "" || blob.rangeHeader != "bytes=-8388608" {
		t.Errorf("blob request: Authorization %q, Range %q; want none, the last 8 MiB", blob.authorization, blob.rangeHeader)
	}
}

// TestJobLogTail_StorageOnAnotherHost: an https redirect to another host is followed,
// without the token, and a byte range from the end of a log bigger than the cap is read.
func TestJobLogTail_StorageOnAnotherHost(t *testing.T) {
	var big bytes.Buffer
	for big.Len() <= MaxLogBytes+MaxLogBytes/4 {
		big.WriteString("2026-04-02T08:41:20.0000000Z \x1b[32mok\x1b[0m\tgithub.com/harbor-labs/tidewatch/api\t1.204s\n")
	}
	big.WriteString("2026-04-02T08:41:46.4000000Z ##[error]Process completed with exit code 1.\n")
	blob := newBlobServer(t, big.Bytes(), true)
	s := newAPIServer(t)
	s.route(jobLogPath, redirectTo(blob.srv.URL+"/productionresultssa7/job.txt?sig=SECRETSIG"))
	tr := newSCMTracker(t, s.URL())
	trustBlob(tr, blob)

	got, err := tr.JobLogTail(context.Background(), scmRepo, 39120345602, 2)
	if err != nil {
		t.Fatal(err)
	}
	wantLines(t, got, "ok\tgithub.com/harbor-labs/tidewatch/api\t1.204s", "Error: Process completed with exit code 1.")
	if len(blob.auth) != 1 || blob.auth[0] != "" || blob.ranges[0] != "bytes=-8388608" {
		t.Errorf("storage saw Authorization %q, Range %q; want one request, no token, the last 8 MiB", blob.auth, blob.ranges)
	}
}

// TestJobLogTail_StorageWithoutRanges: storage that ignores the range is read for its
// first MaxLogBytes, and the excerpt says so; storage that refuses it is asked again.
func TestJobLogTail_StorageWithoutRanges(t *testing.T) {
	var big bytes.Buffer
	for i := 0; big.Len() <= MaxLogBytes+1024; i++ {
		big.WriteString("2026-04-02T08:41:20.0000000Z building tide tables\n")
	}
	blob := newBlobServer(t, big.Bytes(), false)
	s := newAPIServer(t)
	s.route(jobLogPath, redirectTo(blob.srv.URL+"/job.txt"))
	tr := newSCMTracker(t, s.URL())
	trustBlob(tr, blob)
	got, err := tr.JobLogTail(context.Background(), scmRepo, 39120345602, 3)
	if err != nil {
		t.Fatal(err)
	}
	wantLines(t, got, "[the log is longer than 8 MiB: these are the last lines of its first 8 MiB]", "building tide tables", "building tide tables")

	// A 416 to the range: asked again without one.
	s.route(jobLogPath, redirectTo(s.URL()+"/blob/job.txt"))
	s.route("/blob/job.txt", func(r *http.Request) answer {
		if r.Header.Get("Range") != "" {
			return answer{status: http.StatusRequestedRangeNotSatisfiable}
		}
		return answer{status: 200, body: []byte("2026-04-02T08:41:20.0000000Z only line\n")}
	})
	s.log()
	got, err = tr.JobLogTail(context.Background(), scmRepo, 39120345602, 0)
	if err != nil || got != "only line" {
		t.Errorf("after a refused range: %q, %v; want \"only line\"", got, err)
	}
	if h := s.log(); len(h) != 3 || h[1].rangeHeader == "" || h[2].rangeHeader != "" {
		t.Errorf("requests %v; want the API, the ranged blob request, the whole blob", paths(h))
	}
}

func TestJobLogTail_GoneIsEmpty(t *testing.T) {
	for _, status := range []int{http.StatusNotFound, http.StatusGone} {
		s := newAPIServer(t)
		s.route(jobLogPath, func(*http.Request) answer { return answer{status: status, body: []byte(`{"message":"Not Found"}`)} })
		tr := newSCMTracker(t, s.URL())
		if got, err := tr.JobLogTail(context.Background(), scmRepo, 39120345602, 10); got != "" || err != nil {
			t.Errorf("API %d: %q, %v; want \"\", nil", status, got, err)
		}
		s.route(jobLogPath, redirectTo(s.URL()+"/blob/expired.txt"))
		s.route("/blob/expired.txt", func(*http.Request) answer { return answer{status: status} })
		if got, err := tr.JobLogTail(context.Background(), scmRepo, 39120345602, 10); got != "" || err != nil {
			t.Errorf("storage %d: %q, %v; want \"\", nil", status, got, err)
		}
	}
}

// TestJobLogTail_RefusedRedirects: with an endpoint on a public address, the log is
// not fetched from a private, loopback or link-local address, over plain http, or with
// credentials in the URL; the error names the host, never the signed URL.
func TestJobLogTail_RefusedRedirects(t *testing.T) {
	s := newAPIServer(t)
	defer stubLookup(t, "203.0.113.10")()
	tr := newSCMTracker(t, "https://api.github.test")
	tr.client.Transport = &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, s.srv.Listener.Addr().String())
	}}
	// The endpoint is https and the test server is not: speak http to it.
	tr.base.Scheme = "http"
	for _, loc := range []string{
		"http://blob.example.net/job.txt?sig=SECRETSIG",
		"https://127.0.0.1:" + port(s.URL()) + "/blob/job.txt?sig=SECRETSIG",
		"https://10.1.2.3/job.txt?sig=SECRETSIG",
		"https://169.254.169.254/latest/meta-data/?sig=SECRETSIG",
		"https://[::1]/job.txt?sig=SECRETSIG",
		"https://localhost/job.txt?sig=SECRETSIG",
		"https://logs.localhost/job.txt?sig=SECRETSIG",
		"https://someone:SECRETSIG@blob.example.net/job.txt",
		"",
	} {
		s.route(jobLogPath, redirectTo(loc))
		s.static("/blob/job.txt", []byte("must not be read\n"))
		got, err := tr.JobLogTail(context.Background(), scmRepo, 39120345602, 10)
		if tracker.KindOf(err) != tracker.ErrPayload || got != "" {
			t.Errorf("redirect to %q: %q, %v; want tracker_payload_error", loc, got, err)
		} else if strings.Contains(err.Error(), "SECRETSIG") {
			t.Errorf("redirect to %q: the error shows the signed URL: %v", loc, err)
		}
		for _, h := range s.log() {
			if strings.HasPrefix(h.path, "/blob/") {
				t.Errorf("redirect to %q was followed", loc)
			}
		}
	}
}

// TestJobLogTail_RefusedOnTheWay: a further redirect from the storage is held to the
// same policy.
func TestJobLogTail_RefusedOnTheWay(t *testing.T) {
	s := newAPIServer(t)
	s.route(jobLogPath, redirectTo(s.URL()+"/blob/hop.txt"))
	s.route("/blob/hop.txt", redirectTo("http://blob.example.net/job.txt?sig=SECRETSIG"))
	_, err := newSCMTracker(t, s.URL()).JobLogTail(context.Background(), scmRepo, 39120345602, 10)
	if tracker.KindOf(err) != tracker.ErrPayload || strings.Contains(err.Error(), "SECRETSIG") {
		t.Errorf("second hop to plain http: %v; want tracker_payload_error without the signed URL", err)
	}
}

func port(rawURL string) string {
	_, p, _ := net.SplitHostPort(strings.TrimPrefix(rawURL, "http://"))
	return p
}

// stubLookup makes every name resolve to addr; the returned func restores the resolver.
func stubLookup(t *testing.T, addr string) func() {
	old := lookupHost
	lookupHost = func(context.Context, string, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr(addr)}, nil
	}
	return func() { lookupHost = old }
}

func TestPrivateEndpoint(t *testing.T) {
	cases := []struct {
		endpoint, resolves string
		want               bool
	}{
		{"https://api.github.com", "140.82.112.6", false},
		{"https://ghe.corp.example/api/v3", "10.20.0.5", true},
		{"http://127.0.0.1:8080", "", true},
		{"http://localhost:8080", "", true},
		{"https://198.51.100.7", "", false},
	}
	for _, c := range cases {
		restore := stubLookup(t, cmp.Or(c.resolves, "192.0.2.1"))
		tr := newSCMTracker(t, c.endpoint)
		if got := tr.privateEndpoint(context.Background()); got != c.want {
			t.Errorf("privateEndpoint(%s resolving to %s) = %v, want %v", c.endpoint, c.resolves, got, c.want)
		}
		restore()
	}
}

// TestDialControl: the check made on the address actually dialled.
func TestDialControl(t *testing.T) {
	refuse := dialControl(false)
	for _, addr := range []string{"127.0.0.1:443", "10.0.0.1:443", "172.16.5.4:443", "192.168.1.1:443", "169.254.169.254:80",
		"100.64.0.1:443", "0.0.0.0:443", "[::1]:443", "[fd00::1]:443", "[fe80::1]:443", "[::ffff:127.0.0.1]:443", "not-an-address"} {
		if err := refuse("tcp", addr, nil); err == nil {
			t.Errorf("dial to %s allowed, want refused", addr)
		} else if !errors.As(err, new(refusedRedirect)) {
			t.Errorf("dial to %s: %v, want a refusal", addr, err)
		}
	}
	for _, addr := range []string{"140.82.112.6:443", "[2606:50c0:8000::154]:443", "20.60.128.4:443"} {
		if err := refuse("tcp", addr, nil); err != nil {
			t.Errorf("dial to %s refused: %v", addr, err)
		}
	}
	if err := dialControl(true)("tcp", "127.0.0.1:443", nil); err != nil {
		t.Errorf("with a private endpoint, loopback refused: %v", err)
	}
}

// TestAttachFailureLog: the first failing Actions job's log is attached; a failure of
// another App or a passing result sends nothing.
func TestAttachFailureLog(t *testing.T) {
	s := newAPIServer(t)
	s.static(runsPath, ownFile(t, "check_runs_mixed.json"))
	s.route("/repos/harbor-labs/tidewatch/actions/jobs/39120345606/logs", redirectTo(s.URL()+"/blob/job.txt"))
	s.static("/blob/job.txt", ownFile(t, "job_log.txt"))
	tr := newSCMTracker(t, s.URL())
	res, err := tr.CI(context.Background(), scmRepo, headSHA)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.AttachFailureLog(context.Background(), scmRepo, &res, 1); err != nil {
		t.Fatal(err)
	}
	if res.LogCheck != "test (macos-latest)" || res.LogExcerpt != "Cleaning up orphan processes" {
		t.Errorf("attached %q from %q; want the last line of test (macos-latest), the first failing job by name", res.LogExcerpt, res.LogCheck)
	}
	s.log()
	other := CIResult{State: CheckFailing, Failing: []Check{{ID: 7, Kind: KindCheckRun, Name: "codecov/patch", App: "codecov"}, {ID: 8, Kind: KindStatus, Name: "ci/jenkins"}}}
	passing := CIResult{State: CheckPassing}
	for _, r := range []*CIResult{&other, &passing} {
		if err := tr.AttachFailureLog(context.Background(), scmRepo, r, 5); err != nil || r.LogExcerpt != "" {
			t.Errorf("AttachFailureLog(%v): %q, %v; want nothing", r.State, r.LogExcerpt, err)
		}
	}
	if h := s.log(); len(h) != 0 {
		t.Errorf("requests for logs that are not on GitHub: %v", paths(h))
	}
}
