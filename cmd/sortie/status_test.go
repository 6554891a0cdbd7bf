package main

import (
	"sortie/internal/daemon"

	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Without a daemon, status reads the database the demo left: its runs and its hold.
func TestStatus_FromTheDatabaseWhenNoDaemonAnswers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if r := runSortie(t, "", nil, "demo", "--dir", dir, "--port", "0"); r.code != exitOK {
		t.Fatalf("demo: %s", r)
	}
	r := runSortie(t, "", nil, "status", "--port", "0", dir+"/WORKFLOW.md")
	if r.code != exitOK {
		t.Fatalf("status: %s", r)
	}
	for _, want := range []string{"from the database", "AWAITING INPUT (1)", "DEMO-4", "RECENT RUNS", "handed_off", "failed"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("status output lacks %q:\n%s", want, r.stdout)
		}
	}
	r = runSortie(t, "", nil, "status", "--json", "--port", "0", dir+"/WORKFLOW.md")
	var rep statusReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("status --json: %v\n%s", err, r)
	}
	if rep.Source != "database" || len(rep.Runs) < 6 || len(rep.Awaiting) != 1 || rep.Running == nil {
		t.Errorf("report = %+v", rep)
	}
}

// TestStatus_NeverWritesTheDaemonsTokenFile: status reads the operator token and never
// creates it; before any daemon ran there is no login link to print.
func TestStatus_NeverWritesTheDaemonsTokenFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "issues.json", `[]`)
	wf := writeFile(t, dir, "WORKFLOW.md", "---\ntracker: {kind: file, path: issues.json, active_states: [Todo], terminal_states: [Done]}\nagent: {kind: mock}\n---\nx\n")
	r := runSortie(t, dir, nil, "status", "--login-url", wf)
	if r.code == exitOK || !strings.Contains(r.stderr, "no operator token yet") {
		t.Errorf("status --login-url before any daemon: %s", r)
	}
	if _, err := os.Stat(filepath.Join(dir, ".sortie.db"+daemon.OperatorTokenSuffix)); err == nil {
		t.Error("sortie status created the daemon's operator token file")
	}
}

// With a daemon answering, status shows what its API says, with the bearer token of
// server.auth_token.
func TestStatus_FromTheDaemonsAPI(t *testing.T) {
	t.Parallel()
	var auth []string
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = append(auth, r.Header.Get("Authorization"))
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/api/v1/state":
			w.Write([]byte(`{"version":"v9","running":[{"issue_identifier":"API-1","state":"In Progress","attempt":0,"turn":2,"max_turns":5,
				"started_at":"2026-11-22T10:00:00Z","last_event":"tool_result","last_message":"Bash 12ms","tokens":{"total_tokens":1234},"cost_usd":0.5}],
				"retrying":[{"issue_identifier":"API-2","attempt":1,"kind":"failure","due_at":"2999-01-01T00:00:00Z","error":"turn_failed: boom"}],
				"awaiting_input":[{"issue_identifier":"API-3","reason":"blocked","question":"Which database?"}],"held":[],
				"workflow":{"reload_error":"config: agent.max_turns: must be a whole number"}}`))
		case "/api/v1/runs":
			w.Write([]byte(`{"runs":[{"id":7,"issue_identifier":"API-0","attempt":1,"status":"handed_off","started_at":"2026-11-22T09:00:00Z","ended_at":"2026-11-22T09:05:00Z","turns":3}]}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer api.Close()
	u, _ := url.Parse(api.URL)
	dir := t.TempDir()
	writeFile(t, dir, "issues.json", "[]")
	wf := writeFile(t, dir, "WORKFLOW.md", "---\ntracker: {kind: file, path: issues.json, active_states: [Todo]}\nagent: {kind: mock}\nserver: {auth_token: s3cret}\n---\nx\n")

	r := runSortie(t, "", nil, "status", "--host", u.Hostname(), "--port", u.Port(), wf)
	if r.code != exitOK {
		t.Fatalf("status: %s", r)
	}
	for _, want := range []string{"from the daemon", "version v9", "API-1", "2/5", "1234", "$0.50", "API-2", "turn_failed: boom",
		"AWAITING INPUT (1)", "Which database?", "API-0", "5m0s", "edit rejected", "must be a whole number"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("status output lacks %q:\n%s", want, r.stdout)
		}
	}
	if len(auth) != 2 || auth[0] != "Bearer s3cret" {
		t.Errorf("Authorization headers = %q", auth)
	}
}
