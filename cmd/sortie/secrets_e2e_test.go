package main

import (
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestSecrets_NeverReachTheAgentTheWorkspaceOrTheLogs configures a tracker key, a
// notification webhook URL and a header token through $VARs, runs an agent whose
// command dumps its environment and every file of its workspace, and a hook that dumps
// its environment, then looks for each secret value everywhere the run left something:
// the dumps, the workspace (.sortie/mcp.json included), the daemon's log and the
// database. The webhook does receive its alert, so the secrets were live. The daemon's
// private state (the operator token, the env file, the database path) is given in its
// environment too: neither the agent nor the hook may learn where it is.
func TestSecrets_NeverReachTheAgentTheWorkspaceOrTheLogs(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var alerts []string
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		alerts = append(alerts, r.URL.Path+" "+r.Header.Get("Authorization"))
		mu.Unlock()
	}))
	defer hook.Close()

	secrets := map[string]string{
		"TRACKER_TOKEN":          "trk-secret-a81f9c",
		"SORTIE_TRACKER_API_KEY": "override-secret-77d2e0",
		"HOOK_URL":               hook.URL + "/hooks/path-secret-5be1",
		"HOOK_TOKEN":             "bearer-secret-c0ffee",
	}
	dir := t.TempDir()
	dumps := filepath.Join(dir, "dumps")
	os.Mkdir(dumps, 0o755)
	// The agent: dump, then become the mock agent child the daemon expects.
	agentCmd := writeFile(t, dir, "dump-agent.sh", fmt.Sprintf(`#!/bin/sh
{ env; echo '--- files'; find "$SORTIE_WORKSPACE" -type f -exec cat {} +; } > %s/agent-$$.txt 2>&1
exec %s "$@"
`, dumps, sortieBin))
	os.Chmod(agentCmd, 0o755)
	writeFile(t, dir, "issues.json", `[{"id": "1", "identifier": "SEC-1", "title": "t", "state": "Todo"}]`)
	wf := writeFile(t, dir, "WORKFLOW.md", fmt.Sprintf(`---
tracker:
  kind: file
  path: issues.json
  api_key: $TRACKER_TOKEN
  active_states: [Todo]
  terminal_states: [Done]
agent:
  kind: mock
  command: %s
  max_turns: 1
  sandbox: {write_paths: [%s]}
hooks:
  after_create: env > hook-env.txt
workspace:
  root: ./ws
db_path: ./sortie.db
notifications:
  - kind: webhook
    url: $HOOK_URL
    headers: {Authorization: "Bearer $HOOK_TOKEN"}
mock:
  status: blocked
---
Work on {{ .issue.identifier }}.
`, agentCmd, dumps))

	env := testEnv(t.TempDir())
	for k, v := range secrets {
		env = append(env, k+"="+v)
	}
	// The operator sees the token (the daemon prints its login link); agents and hooks
	// see none of these.
	envFile := writeFile(t, dir, "private.env", "SORTIE_AGENT_MAX_TURNS=1\n")
	private := map[string]string{
		"SORTIE_SERVER_AUTH_TOKEN": "operator-secret-9a7b",
		"SORTIE_ENV_FILE":          envFile,
		"SORTIE_DB_PATH":           filepath.Join(dir, "sortie.db"),
	}
	for k, v := range private {
		env = append(env, k+"="+v)
	}
	r := runSortie(t, dir, env, "--exit-when-idle", "--log-level", "debug", wf)
	if r.code != exitOK {
		t.Fatalf("sortie: %s", r)
	}
	mu.Lock()
	if len(alerts) != 1 || !strings.Contains(alerts[0], "path-secret-5be1") || !strings.Contains(alerts[0], "bearer-secret-c0ffee") {
		t.Errorf("webhook received %q, want the blocked alert with its secret path and token", alerts)
	}
	mu.Unlock()

	agentDumps, _ := filepath.Glob(filepath.Join(dumps, "agent-*.txt"))
	if len(agentDumps) == 0 {
		t.Fatal("the agent command did not run")
	}
	if data, _ := os.ReadFile(agentDumps[0]); !strings.Contains(string(data), `"sortie-tools"`) {
		t.Errorf("the agent's dump lacks .sortie/mcp.json; the check below would prove little:\n%s", data)
	}
	hookEnv, err := os.ReadFile(filepath.Join(dir, "ws", "SEC-1", "hook-env.txt"))
	if err != nil {
		t.Fatalf("the hook did not run: %v", err)
	}

	// What the agent and the hook can see: their dumps and the workspace.
	seen := map[string][]byte{}
	for _, d := range agentDumps {
		seen[d], _ = os.ReadFile(d)
	}
	seen["the hook's environment"] = hookEnv
	filepath.WalkDir(filepath.Join(dir, "ws"), func(p string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			seen[p], _ = os.ReadFile(p)
		}
		return nil
	})
	for name, value := range private {
		for where, data := range seen {
			if strings.Contains(string(data), name+"=") || strings.Contains(string(data), `"`+name+`"`) {
				t.Errorf("%s appears in %s", name, where)
			}
			// The database's path may show in the agent socket's (<db_path>.run/);
			// confinement, not secrecy, keeps the agent out of the database.
			if name != "SORTIE_DB_PATH" && strings.Contains(string(data), value) {
				t.Errorf("the value of %s appears in %s", name, where)
			}
		}
	}

	// Everything the run left: dumps, workspaces, database files, and the daemon's log.
	places := map[string][]byte{"daemon log": []byte(r.stderr + r.stdout)}
	filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || p == wf {
			return nil
		}
		if data, err := os.ReadFile(p); err == nil {
			places[p] = data
		}
		return nil
	})
	for name, value := range secrets {
		secret := value
		if name == "HOOK_URL" {
			secret = "path-secret-5be1"
		}
		for where, data := range places {
			if strings.Contains(string(data), secret) {
				t.Errorf("the secret in $%s appears in %s", name, where)
			}
		}
	}
}
