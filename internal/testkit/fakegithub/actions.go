package fakegithub

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// blobPrefix is the path of the fake's blob storage, where the logs route redirects.
const blobPrefix = "/_blob/"

// blobTTL is how long a signed log URL is good for: GitHub's expire after a minute.
const blobTTL = time.Minute

// SetJobLog sets the log of GitHub Actions job jobID (the id of a check run made by
// Actions), which the logs route serves. It panics when there is no such check run.
func (s *Server) SetJobLog(jobID int64, text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.mustCheckRun(jobID); c.App != ActionsApp {
		panic(fmt.Sprintf("fakegithub: SetJobLog(%d): check run %q is %s's, not a GitHub Actions job", jobID, c.Name, c.App))
	}
	s.jobLogs[jobID] = text
}

// LogRedirectAuthLeaks is how many requests for a signed log URL carried an
// Authorization header: a client that follows the logs route's redirect with the API
// token has leaked it to the storage host. Each was refused.
func (s *Server) LogRedirectAuthLeaks() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.leaks
}

// routeActions answers GET /actions/jobs/{job_id}/logs: 302 to a signed URL of the
// job's log, good for a minute; 404 for a job without a log (none set, or no such
// Actions job). parts[0] is "actions".
func (s *Server) routeActions(r *http.Request, parts []string) reply {
	if len(parts) != 4 || parts[1] != "jobs" || parts[3] != "logs" {
		return notFound()
	}
	id, err := strconv.ParseInt(parts[2], 10, 64)
	if _, ok := s.jobLogs[id]; err != nil || !ok {
		return notFound()
	}
	token := make([]byte, 16)
	_, _ = rand.Read(token)
	name := hex.EncodeToString(token)
	s.blobs[name] = id
	now := s.clock().UTC()
	q := url.Values{
		"rsct": {"text/plain"}, "sp": {"r"}, "sr": {"b"}, "sv": {"2025-01-05"},
		"st": {now.Add(-5 * time.Minute).Format(time.RFC3339)}, "se": {now.Add(blobTTL).Format(time.RFC3339)},
	}
	q.Set("sig", s.blobSig(name, q.Get("st"), q.Get("se")))
	loc := s.srv.URL + blobPrefix + "actions-results/" + name + "/logs/job/job-logs.txt?" + q.Encode()
	return reply{status: http.StatusFound, location: loc}
}

func (s *Server) blobSig(name, start, expiry string) string {
	m := hmac.New(sha256.New, s.blobKey)
	fmt.Fprintf(m, "%s\n%s\n%s", name, start, expiry)
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// serveBlob answers a signed log URL as blob storage would: without a token, refusing
// one (and counting the leak), refusing a bad or expired signature, and with
// http.ServeContent's Range and HEAD support. Nothing is charged. The lock is held.
func (s *Server) serveBlob(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "" {
		s.leaks++
		blobError(w, http.StatusBadRequest, "InvalidAuthenticationInfo", "The request carries an Authorization header as well as a signed URL; send only the URL.")
		return
	}
	rest, _ := strings.CutPrefix(r.URL.Path, blobPrefix+"actions-results/")
	name, _, _ := strings.Cut(rest, "/")
	q := r.URL.Query()
	id, known := s.blobs[name]
	want := s.blobSig(name, q.Get("st"), q.Get("se"))
	expiry, err := time.Parse(time.RFC3339, q.Get("se"))
	switch {
	case !known || rest != name+"/logs/job/job-logs.txt":
		blobError(w, http.StatusNotFound, "BlobNotFound", "The specified blob does not exist.")
		return
	case err != nil || !hmac.Equal([]byte(q.Get("sig")), []byte(want)):
		blobError(w, http.StatusForbidden, "AuthenticationFailed", "The signature does not match.")
		return
	case !s.clock().Before(expiry):
		blobError(w, http.StatusForbidden, "AuthenticationFailed", "The signed URL has expired: ask the API for a new one.")
		return
	case r.Method != http.MethodGet && r.Method != http.MethodHead:
		blobError(w, http.StatusMethodNotAllowed, "UnsupportedHttpVerb", "The resource doesn't support the specified HTTP verb.")
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	w.Header().Set("x-ms-blob-type", "BlockBlob")
	http.ServeContent(w, r, "", time.Time{}, strings.NewReader(s.jobLogs[id]))
}

// blobError answers with blob storage's XML error shape.
func blobError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/xml")
	w.Header().Set("x-ms-error-code", code)
	w.WriteHeader(status)
	fmt.Fprintf(w, "\ufeff<?xml version=\"1.0\" encoding=\"utf-8\"?><Error><Code>%s</Code><Message>%s</Message></Error>", code, msg)
}

// actionsLogStart is when the logs ActionsLog builds begin.
var actionsLogStart = time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)

// ActionsLog is a job log as GitHub Actions writes it: a byte-order mark, then each
// line (lines holding newlines are split) behind a UTC timestamp with seven decimals
// and a space, 2026-11-28T10:00:00.0000000Z on, about 12ms apart. The lines are kept
// as they are, so a test writes the runner's markers (##[group]name, ##[endgroup],
// ##[error]message) and the ANSI colours tools print (\x1b[31m ... \x1b[0m) into them.
func ActionsLog(lines ...string) string {
	var b strings.Builder
	b.WriteString("\ufeff")
	i := 0
	for _, l := range lines {
		for _, part := range strings.Split(l, "\n") {
			at := actionsLogStart.Add(time.Duration(i) * 12_345_600 * time.Nanosecond)
			b.WriteString(at.Format("2006-01-02T15:04:05.0000000Z"))
			b.WriteString(" ")
			b.WriteString(part)
			b.WriteString("\n")
			i++
		}
	}
	return b.String()
}

// FailedJobLog is the whole log of a job whose run step, running command (one or more
// lines of shell), printed output and exited 1: the runner's set-up groups, the
// checkout, the step's group with the command echoed in cyan (\x1b[36;1m), the output,
// the ##[error] line, and the post-job clean-up that follows it, so the error is not
// on the last lines.
func FailedJobLog(command string, output ...string) string {
	lines := []string{
		"Current runner version: '2.330.0'",
		"##[group]Runner Image Provisioner",
		"Hosted Compute Agent",
		"##[endgroup]",
		"##[group]Operating System",
		"Ubuntu",
		"24.04.3",
		"LTS",
		"##[endgroup]",
		"##[group]Runner Image",
		"Image: ubuntu-24.04",
		"##[endgroup]",
		"##[group]GITHUB_TOKEN Permissions",
		"Contents: read",
		"Metadata: read",
		"##[endgroup]",
		"Secret source: Actions",
		"Prepare workflow directory",
		"Prepare all required actions",
		"Getting action download info",
		"Download action repository 'actions/checkout@v5' (SHA:" + SHA("actions/checkout@v5") + ")",
		"Complete job name: test",
		"##[group]Run actions/checkout@v5",
		"with:",
		"  persist-credentials: true",
		"##[endgroup]",
		"Syncing repository: octo/hello",
		"##[group]Fetching the repository",
		"[command]/usr/bin/git -c protocol.version=2 fetch --no-tags --prune --no-recurse-submodules --depth=1 origin",
		"##[endgroup]",
		"##[group]Run " + strings.SplitN(command, "\n", 2)[0],
	}
	for _, c := range strings.Split(command, "\n") {
		lines = append(lines, "\x1b[36;1m"+c+"\x1b[0m")
	}
	lines = append(lines, "shell: /usr/bin/bash -e {0}", "##[endgroup]")
	lines = append(lines, output...)
	lines = append(lines,
		"##[error]Process completed with exit code 1.",
		"Post job cleanup.",
		"[command]/usr/bin/git version",
		"git version 2.51.0",
		"[command]/usr/bin/git config --local --name-only --get-regexp core\\.sshCommand",
		"[command]/usr/bin/git submodule foreach --recursive sh -c \"git config --local --name-only --get-regexp 'core\\.sshCommand' && git config --local --unset-all 'core.sshCommand' || :\"",
		"Cleaning up orphan processes",
	)
	return ActionsLog(lines...)
}
