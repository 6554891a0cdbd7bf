package main

import (
	"sortie/internal/daemon"

	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestStatusToken_PrintsWhatAClientSends: the operator token file holds the token's 32
// raw bytes, not what a client sends; `sortie status --token` prints the bearer form,
// which the daemon's API accepts, for scripts:
// curl -H "Authorization: Bearer $(sortie status --token WORKFLOW.md)".
func TestStatusToken_PrintsWhatAClientSends(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "issues.json", `[]`)
	port := freePort(t)
	wf := writeFile(t, dir, "WORKFLOW.md", "---\ntracker: {kind: file, path: issues.json, active_states: [Todo], terminal_states: [Done]}\n"+
		"agent: {kind: mock}\ndb_path: ./sortie.db\nserver: {port: "+strconv.Itoa(port)+"}\n---\nWork.\n")
	if r := runSortie(t, dir, nil, "status", "--token", wf); r.code == exitOK || !strings.Contains(r.stderr, "no operator token yet") {
		t.Errorf("status --token before any daemon: %s", r)
	}
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	d := startDaemon(t, testEnv(t.TempDir()), wf)
	waitHTTP(t, d, base+"/livez")

	r := runSortie(t, dir, nil, "status", "--token", wf)
	token := strings.TrimSpace(r.stdout)
	if r.code != exitOK || len(token) != 64 {
		t.Fatalf("status --token: want 64 hex digits, got %s", r)
	}
	get := func(bearer string) int {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, base+"/api/v1/state", nil)
		req.Header.Set("Authorization", "Bearer "+bearer)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if code := get(token); code != http.StatusOK {
		t.Errorf("the API answered %d to the token status --token printed, want 200", code)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "sortie.db"+daemon.OperatorTokenSuffix))
	if err != nil || len(raw) != 32 {
		t.Fatalf("the token file: %d bytes, %v; want 32 raw bytes", len(raw), err)
	}
	if strings.Contains(string(raw), token) {
		t.Error("the token file holds the bearer form; the docs say it holds raw bytes")
	}
}
