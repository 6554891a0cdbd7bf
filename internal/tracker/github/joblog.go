package github

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"sortie/internal/tracker"
)

const (
	// MaxLogBytes bounds what JobLogTail reads of one job log (8 MiB): the last 8 MiB
	// where the storage serves byte ranges, else the first.
	MaxLogBytes = 8 << 20
	// DefaultLogLines is JobLogTail's excerpt when asked for none.
	DefaultLogLines = 50
	// MaxLogLines bounds JobLogTail's excerpt, in lines.
	MaxLogLines = 1000
	// maxLogRedirects bounds the redirects followed from the log's first location.
	maxLogRedirects = 3
)

// JobLogTail returns the last maxLines lines (DefaultLogLines when maxLines ≤ 0, at most
// MaxLogLines) of GitHub Actions job jobID's log in repo, cleaned for a prompt: no
// timestamps, no ANSI escape sequences or control characters, the runner's ##[…]
// markers as plain words, blank lines left out. A log that is gone (expired, or the job
// is not an Actions job: 404 or 410) is "" with no error.
//
// GitHub answers with a redirect to a short-lived signed URL in its blob storage.
// JobLogTail follows it with a request of its own that carries no Authorization header,
// so the token never leaves the API host, and only to an https URL (or to the
// configured endpoint's own scheme and host, a test server) that is not on a private,
// loopback or link-local address, checked again when connecting, unless the endpoint
// itself is on one (GitHub Enterprise on a private network, or a test). It asks for the
// last MaxLogBytes only (a byte range); storage that ignores ranges is read for its
// first MaxLogBytes, and the excerpt then says so in its first line. Nothing is kept
// beyond maxLines lines while reading, and nothing is written anywhere.
func (t *Tracker) JobLogTail(ctx context.Context, repo string, jobID int64, maxLines int) (string, error) {
	const op = "job_log"
	r, err := t.codeHostRepo(op, repo)
	if err != nil {
		return "", err
	}
	if jobID <= 0 {
		return "", tracker.Errorf(tracker.ErrPayload, op, "job id %d is not positive", jobID)
	}
	n := maxLines
	if n <= 0 {
		n = DefaultLogLines
	}
	n = min(n, MaxLogLines)
	apiURL := t.codeHostURL(r, "/actions/jobs/"+strconv.FormatInt(jobID, 10)+"/logs", nil)
	status, hdr, body, err := t.roundTrip(ctx, op, http.MethodGet, apiURL, nil, http.Header{})
	switch {
	case isRedirect(status):
		allowPrivate := t.privateEndpoint(ctx)
		target, err := logLocation(apiURL, hdr.Get("Location"))
		if err == nil {
			err = t.checkLogURL(target, allowPrivate)
		}
		if err != nil {
			return "", &tracker.Error{Kind: tracker.ErrPayload, Op: op, Message: "GET " + redactURL(apiURL) + " redirects where Sortie will not follow", Err: err}
		}
		return t.downloadLog(ctx, op, target, n, allowPrivate)
	case status == http.StatusNotFound || status == http.StatusGone:
		return "", nil
	case err != nil:
		return "", err
	}
	// No redirect: the log itself. Its tail is what matters.
	skip := false
	if len(body) > MaxLogBytes {
		body, skip = body[len(body)-MaxLogBytes:], true
	}
	lines, _, err := tailLog(bytes.NewReader(body), n, MaxLogBytes, skip)
	return strings.Join(lines, "\n"), err
}

// AttachFailureLog fills res's LogExcerpt and LogCheck with the last maxLines lines
// (JobLogTail) of its first failing GitHub Actions job, in Failing's order. It sends
// nothing when res is not failing or no failing check is an Actions job (other Apps'
// logs are not on GitHub); a log that is gone leaves the excerpt empty. Call it once per
// failure to report, not on every poll: the log is not a conditional request.
func (t *Tracker) AttachFailureLog(ctx context.Context, repo string, res *CIResult, maxLines int) error {
	if res.State != CheckFailing {
		return nil
	}
	for _, c := range res.Failing {
		if c.Kind != KindCheckRun || c.App != "github-actions" || c.ID <= 0 {
			continue
		}
		tail, err := t.JobLogTail(ctx, repo, c.ID, maxLines)
		if err != nil {
			return err
		}
		if tail != "" {
			res.LogExcerpt, res.LogCheck = tail, c.Name
		}
		return nil
	}
	return nil
}

func isRedirect(status int) bool {
	switch status {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

// refusedRedirect is a log location the policy refuses. Its text names the scheme and
// host only: the rest of a signed URL is a credential.
type refusedRedirect string

func (e refusedRedirect) Error() string { return string(e) }

func logLocation(apiURL, loc string) (*url.URL, error) {
	if strings.TrimSpace(loc) == "" {
		return nil, refusedRedirect("the redirect has no Location")
	}
	base, err := url.Parse(apiURL)
	if err != nil {
		return nil, err
	}
	u, err := base.Parse(strings.TrimSpace(loc))
	if err != nil {
		return nil, refusedRedirect("the redirect's Location is not a URL")
	}
	return u, nil
}

// checkLogURL is the redirect policy (JobLogTail's doc) on one location.
func (t *Tracker) checkLogURL(u *url.URL, allowPrivate bool) error {
	host := u.Hostname()
	sameOrigin := strings.EqualFold(u.Scheme, t.base.Scheme) && strings.EqualFold(u.Host, t.base.Host)
	switch {
	case u.User != nil:
		return refusedRedirect("the log's URL carries credentials")
	case host == "":
		return refusedRedirect("the log's URL has no host")
	case !strings.EqualFold(u.Scheme, "https") && !sameOrigin:
		return refusedRedirect(fmt.Sprintf("the log is at %s://%s, which is not https", u.Scheme, u.Host))
	case !allowPrivate && !publicHost(host):
		return refusedRedirect(fmt.Sprintf("the log is at %s, a private or loopback address", host))
	}
	return nil
}

// privateEndpoint reports whether the API endpoint is itself on a private or loopback
// address, by name or by what its name resolves to: then its log storage may be too.
func (t *Tracker) privateEndpoint(ctx context.Context) bool {
	host := t.base.Hostname()
	if !publicHost(host) {
		return true
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	addrs, err := lookupHost(ctx, "ip", host)
	if err != nil {
		return false
	}
	for _, a := range addrs {
		if !publicAddr(a) {
			return true
		}
	}
	return false
}

// lookupHost resolves the endpoint's name for privateEndpoint; tests replace it.
var lookupHost = net.DefaultResolver.LookupNetIP

// publicHost reports whether a URL's host may be public: not localhost and not a
// literal address publicAddr refuses. A name is checked again when connecting.
func publicHost(host string) bool {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return false
	}
	if a, err := netip.ParseAddr(h); err == nil {
		return publicAddr(a)
	}
	return true
}

var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"), // carrier-grade NAT
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"), // benchmarking
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("fec0::/10"), // site-local
}

// publicAddr reports whether a is a public unicast address: not loopback, private,
// link-local (cloud metadata services live there), multicast or unspecified.
func publicAddr(a netip.Addr) bool {
	a = a.Unmap()
	if !a.IsValid() || a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsInterfaceLocalMulticast() || a.IsMulticast() || a.IsUnspecified() {
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// dialControl refuses a connection to a non-public address unless allowPrivate: it
// runs on the address actually dialled, after name resolution, so a name that
// resolves to a private address is refused too.
func dialControl(allowPrivate bool) func(network, address string, _ syscall.RawConn) error {
	return func(network, address string, _ syscall.RawConn) error {
		if allowPrivate {
			return nil
		}
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return refusedRedirect("cannot check the address " + address)
		}
		if !publicAddr(ap.Addr()) {
			return refusedRedirect(fmt.Sprintf("refusing to connect to %s for a job log: a private or loopback address", ap.Addr()))
		}
		return nil
	}
}

// logClient is the client for log storage: the API client's transport settings (its
// TLS roots, its proxy), no connection reuse, a dialler that applies dialControl
// except to the proxy, and the redirect policy on every further hop.
func (t *Tracker) logClient(allowPrivate bool) *http.Client {
	base, ok := t.client.Transport.(*http.Transport)
	if !ok || base == nil {
		base, _ = http.DefaultTransport.(*http.Transport)
	}
	var tr *http.Transport
	if base != nil {
		tr = base.Clone()
	} else {
		tr = &http.Transport{Proxy: http.ProxyFromEnvironment}
	}
	tr.DisableKeepAlives = true
	tr.DialTLSContext = nil
	// Through a proxy, the connection is to the proxy, which the operator chose; the
	// log's host was checked by name (checkLogURL) and the proxy connects to it.
	var proxies sync.Map
	if proxy := tr.Proxy; proxy != nil {
		tr.Proxy = func(r *http.Request) (*url.URL, error) {
			p, err := proxy(r)
			if p != nil {
				proxies.Store(hostPort(p), true)
			}
			return p, err
		}
	}
	guarded := &net.Dialer{Timeout: requestTimeout, Control: dialControl(allowPrivate)}
	plain := &net.Dialer{Timeout: requestTimeout}
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if _, viaProxy := proxies.Load(addr); viaProxy {
			return plain.DialContext(ctx, network, addr)
		}
		return guarded.DialContext(ctx, network, addr)
	}
	return &http.Client{Transport: tr, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if len(via) > maxLogRedirects {
			return refusedRedirect(fmt.Sprintf("more than %d redirects", maxLogRedirects))
		}
		if err := t.checkLogURL(req.URL, allowPrivate); err != nil {
			return err
		}
		req.Header.Del("Authorization")
		return nil
	}}
}

// hostPort is a proxy URL's address as the transport dials it.
func hostPort(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	port := map[string]string{"http": "80", "https": "443", "socks5": "1080", "socks5h": "1080"}[u.Scheme]
	return net.JoinHostPort(u.Hostname(), port)
}

// downloadLog reads the tail of the log at target, a signed storage URL.
func (t *Tracker) downloadLog(ctx context.Context, op string, target *url.URL, n int, allowPrivate bool) (string, error) {
	client := t.logClient(allowPrivate)
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	where := target.Scheme + "://" + target.Host // the rest is signed: never in an error
	for ranged := true; ; ranged = false {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, target.String(), nil)
		if err != nil {
			return "", &tracker.Error{Kind: tracker.ErrPayload, Op: op, Message: "the job log's URL at " + where, Err: refusedRedirect("malformed")}
		}
		req.Header.Set("User-Agent", t.userAgent)
		if ranged {
			req.Header.Set("Range", "bytes=-"+strconv.Itoa(MaxLogBytes))
		}
		resp, err := client.Do(req)
		if err != nil {
			err = unwrapURLError(err)
			var refused refusedRedirect
			if errors.As(err, &refused) {
				return "", &tracker.Error{Kind: tracker.ErrPayload, Op: op, Message: "the job log at " + where + " redirects where Sortie will not follow", Err: refused}
			}
			return "", &tracker.Error{Kind: tracker.ErrTransport, Op: op, Message: "downloading the job log from " + where, Err: err}
		}
		lines, retry, err := readLog(resp, n, ranged)
		resp.Body.Close()
		if retry && ranged {
			continue
		}
		if err != nil {
			var te *tracker.Error
			if errors.As(err, &te) {
				te.Op, te.Message = op, te.Message+" from "+where
				return "", te
			}
			return "", &tracker.Error{Kind: tracker.ErrTransport, Op: op, Message: "reading the job log from " + where, Err: err}
		}
		return strings.Join(lines, "\n"), nil
	}
}

// readLog reads a storage response. retry asks for the log again without a range,
// after a range the storage refused or answered with something other than the tail.
func readLog(resp *http.Response, n int, ranged bool) (lines []string, retry bool, err error) {
	switch resp.StatusCode {
	case http.StatusPartialContent:
		start, ok := tailRange(resp.Header.Get("Content-Range"))
		if !ok {
			return nil, true, tracker.Errorf(tracker.ErrPayload, "", "the storage answered a range that is not the log's tail")
		}
		lines, _, err = tailLog(resp.Body, n, MaxLogBytes, start > 0)
		return lines, false, err
	case http.StatusOK:
		lines, cut, err := tailLog(resp.Body, n, MaxLogBytes, false)
		if cut {
			lines = append([]string{fmt.Sprintf("[the log is longer than %d MiB: these are the last lines of its first %d MiB]", MaxLogBytes>>20, MaxLogBytes>>20)},
				lines[max(0, len(lines)-(n-1)):]...)
		}
		return lines, false, err
	case http.StatusNotFound, http.StatusGone:
		return nil, false, nil
	case http.StatusRequestedRangeNotSatisfiable, http.StatusBadRequest:
		if ranged {
			return nil, true, tracker.Errorf(tracker.ErrAPI, "", "HTTP %d to a ranged request", resp.StatusCode)
		}
	}
	return nil, false, tracker.Errorf(tracker.ErrAPI, "", "downloading the job log: HTTP %d", resp.StatusCode)
}

// tailRange parses a 206's "bytes first-last/size" and returns first, when the range
// ends at the end of the log (size "*" is taken on trust).
func tailRange(cr string) (int64, bool) {
	spec, ok := strings.CutPrefix(strings.TrimSpace(cr), "bytes ")
	if !ok {
		return 0, false
	}
	rng, size, ok := strings.Cut(spec, "/")
	if !ok {
		return 0, false
	}
	a, b, ok := strings.Cut(rng, "-")
	first, err1 := strconv.ParseInt(a, 10, 64)
	last, err2 := strconv.ParseInt(b, 10, 64)
	if !ok || err1 != nil || err2 != nil || first < 0 || last < first {
		return 0, false
	}
	if size == "*" {
		return first, true
	}
	total, err := strconv.ParseInt(size, 10, 64)
	if err != nil || last+1 != total {
		return 0, false
	}
	return first, true
}
