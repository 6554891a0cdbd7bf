package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sortie/internal/store"
	"sortie/internal/store/sqlite"
	"sortie/internal/workflow/engine"
)

// TestSessionTools_FirstPromptListsOnlyWhatTheSessionGets runs one issue with every
// agent tool configured (a tracker, a notification backend, a workflow library), once
// locally and once on an SSH host, with an agent command that keeps each turn's
// instructions before playing the mock agent. A local session reaches the daemon's
// agent socket: its first prompt lists tracker_api, notify_operator and the workflow
// tools. An agent on an SSH host gets no socket, so its sidecar registers none of them,
// and its prompt must not offer them either; the tools it does get are still listed.
func TestSessionTools_FirstPromptListsOnlyWhatTheSessionGets(t *testing.T) {
	t.Parallel()
	hook := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer hook.Close()
	daemonTools := append([]string{"tracker_api", "notify_operator"}, engine.Names()...)
	tests := []struct {
		name     string
		worker   string
		listed   []string
		unlisted []string
	}{
		{"local", "", append([]string{"sortie_status", "workspace_history", "cost_budget"}, daemonTools...), nil},
		// The run history comes through the socket, which a remote agent cannot reach.
		{"ssh host", "worker:\n  ssh_hosts: [builder-1]\n", []string{"sortie_status"},
			append([]string{"workspace_history", "cost_budget"}, daemonTools...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			turns := filepath.Join(dir, "turns")
			if err := os.Mkdir(turns, 0o755); err != nil {
				t.Fatal(err)
			}
			// The agent: keep the turn file (its last argument), then become the mock
			// agent's child. The mock runs locally even with ssh_hosts, so the session is
			// an SSH session in everything the daemon decides.
			agentCmd := writeFile(t, dir, "keep-turn.sh", fmt.Sprintf(`#!/bin/sh
for last; do :; done
cp "$last" %s/turn-$$.json
exec %s "$@"
`, turns, sortieBin))
			if err := os.Chmod(agentCmd, 0o755); err != nil {
				t.Fatal(err)
			}
			writeWorkflowLibrary(t, dir)
			writeFile(t, dir, "issues.json", `[{"id": "1", "identifier": "TOOL-1", "title": "t", "state": "Todo"}]`)
			wf := writeFile(t, dir, "WORKFLOW.md", fmt.Sprintf(`---
tracker:
  kind: file
  path: issues.json
  active_states: [Todo]
  terminal_states: [Done]
  handoff_state: Review
agent:
  kind: mock
  command: %s
  max_turns: 1
  sandbox: {write_paths: [%s]}
%sworkspace:
  root: ./ws
db_path: ./sortie.db
workflows:
  dir: ./lib
notifications:
  - kind: webhook
    url: %s/hook
---
Work on {{ .issue.identifier }}.
`, agentCmd, turns, tt.worker, hook.URL))

			// A short TMPDIR: the agent socket lives under it, and a socket path has at
			// most 107 bytes.
			tmp, err := os.MkdirTemp("", "st-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(tmp) })
			r := runSortie(t, dir, testEnv(tmp), "--exit-when-idle", "--port", "0", wf)
			if r.code != exitOK {
				t.Fatalf("--exit-when-idle: want exit 0, got:\n%s", r)
			}
			kept, err := filepath.Glob(filepath.Join(turns, "turn-*.json"))
			if err != nil || len(kept) != 1 {
				t.Fatalf("want the instructions of one turn, got %v (%v)\n%s", kept, err, r)
			}
			data, err := os.ReadFile(kept[0])
			if err != nil {
				t.Fatal(err)
			}
			var turn struct {
				Prompt string `json:"prompt"`
			}
			if err := json.Unmarshal(data, &turn); err != nil || turn.Prompt == "" {
				t.Fatalf("turn file %s: no prompt (%v):\n%s", kept[0], err, data)
			}
			for _, name := range tt.listed {
				if !offersTool(turn.Prompt, name) {
					t.Errorf("the first prompt does not offer %s, which the session gets:\n%s", name, turn.Prompt)
				}
			}
			for _, name := range tt.unlisted {
				if offersTool(turn.Prompt, name) {
					t.Errorf("the first prompt offers %s, which the session cannot use:\n%s", name, turn.Prompt)
				}
			}
		})
	}
}

// offersTool reports whether prompt's "Available Sortie tools" section has an entry
// for the tool name.
func offersTool(prompt, name string) bool {
	return strings.Contains(prompt+"\n", "\n### "+name+"\n")
}

// TestSessionTools_HistoryAndBudgetThroughTheSocket is issue 15's daemon test: a real
// mock-agent session calls workspace_history and cost_budget through the real
// sidecar, whose environment has no database path. The daemon's environment has
// SORTIE_DB_PATH, SORTIE_ENV_FILE, the operator token and overrides that WORKFLOW.md
// needs (tracker.kind) or that change the budget; none of them reaches the session's
// .sortie/mcp.json or the agent, and the tools still answer, for this issue only and
// against the daemon's budget.
func TestSessionTools_HistoryAndBudgetThroughTheSocket(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	dbPath := filepath.Join(dir, "state", "sortie.db")
	seedRuns(t, dbPath, []seededRun{
		{store.Run{IssueID: "1", Identifier: "HIST-1", Attempt: 1, AgentKind: "mock"},
			store.RunEnd{Status: store.StatusFailed, Error: "agent turn error: turn timeout exceeded",
				Progress: store.Progress{Tokens: store.Tokens{Input: 1000, Output: 500, Total: 1500}}}},
		{store.Run{IssueID: "2", Identifier: "HIST-2", Attempt: 1, AgentKind: "mock"},
			store.RunEnd{Status: store.StatusFailed, Error: "HIST-2: another issue's failure",
				Progress: store.Progress{Tokens: store.Tokens{Input: 7e6, Total: 7e6}}}},
	})
	envFile := writeFile(t, dir, "sortie.env", "SORTIE_AGENT_MAX_TURNS=1\n")
	writeFile(t, dir, "issues.json", `[{"id": "1", "identifier": "HIST-1", "title": "t", "state": "Todo"},
  {"id": "2", "identifier": "HIST-2", "title": "t", "state": "Done"}]`)
	// No tracker.kind: it comes from the daemon's SORTIE_TRACKER_KIND.
	wf := writeFile(t, dir, "WORKFLOW.md", `---
tracker:
  path: issues.json
  active_states: [Todo]
  terminal_states: [Done]
  handoff_state: Review
agent:
  kind: mock
  max_turns: 1
workspace:
  root: ./ws
db_path: ./unused.db
mock:
  mcp_calls:
    - - {tool: workspace_history, arguments: {}}
      - {tool: cost_budget, arguments: {}}
---
Work on {{ .issue.identifier }}.
`)
	tmp, err := os.MkdirTemp("", "st-") // the socket's fallback directory: short
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	private := []string{"SORTIE_DB_PATH=" + dbPath, "SORTIE_ENV_FILE=" + envFile, "SORTIE_SERVER_AUTH_TOKEN=operator-token-5f1e"}
	overrides := []string{"SORTIE_TRACKER_KIND=file", "SORTIE_AGENT_MAX_TOKENS=90000", "SORTIE_POLLING_INTERVAL_MS=5000"}
	r := runSortie(t, dir, testEnv(tmp, append(private, overrides...)...), "--exit-when-idle", "--port", "0", wf)
	if r.code != exitOK {
		t.Fatalf("--exit-when-idle: want exit 0, got:\n%s", r)
	}
	if _, err := os.Stat(filepath.Join(dir, "unused.db")); err == nil {
		t.Fatalf("the daemon used db_path, not SORTIE_DB_PATH")
	}

	sortieDir := filepath.Join(dir, "ws", "HIST-1", ".sortie")
	mcpJSON, err := os.ReadFile(filepath.Join(sortieDir, "mcp.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range append(private, overrides...) {
		name, value, _ := strings.Cut(kv, "=")
		// A value is looked for only when it is long enough not to occur by chance
		// (a short number like 5000 turns up in the random agent token).
		leaked := name != "SORTIE_DB_PATH" && len(value) >= 8 && strings.Contains(string(mcpJSON), value)
		if strings.Contains(string(mcpJSON), name) || leaked {
			t.Errorf(".sortie/mcp.json carries %s:\n%s", kv, mcpJSON)
		}
	}

	calls := readMCPLog(t, filepath.Join(sortieDir, "mock-mcp.log"))
	if len(calls) != 2 {
		t.Fatalf("the agent made %d tool calls, want 2: %+v\n%s", len(calls), calls, r)
	}
	history, budget := calls[0], calls[1]
	wantHistory := `{"issue_id":"1","entries":[{"attempt":1,"agent_adapter":"mock","started_at":"2026-03-30T13:00:00Z",` +
		`"completed_at":"2026-03-30T13:15:00Z","status":"failed","outcome":"failed","error":"agent turn error: turn timeout exceeded"}]}`
	if history.Tool != "workspace_history" || history.IsError || history.Text != wantHistory {
		t.Errorf("workspace_history = %+v\nwant the text %s", history, wantHistory)
	}
	if budget.Tool != "cost_budget" || budget.IsError || !strings.HasPrefix(budget.Text, `{"issue_id":"1","spent":{"input_tokens":`) ||
		!strings.Contains(budget.Text, `"budget":{"max_tokens":90000,"max_cost_usd":null}`) || strings.Contains(budget.Text, "7000") {
		t.Errorf("cost_budget = %+v\nwant issue 1's spend against the daemon's 90000-token budget", budget)
	}
}

// seededRun is a finished run for seedRuns: the run and how it ended.
type seededRun struct {
	run store.Run
	end store.RunEnd
}

// seedRuns writes finished runs into a new database at path, before any daemon opens
// it, each started an hour after the last and ended 15 minutes later.
func seedRuns(t *testing.T, path string, runs []seededRun) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	db, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	started := time.Date(2026, 3, 30, 13, 0, 0, 0, time.UTC)
	for _, r := range runs {
		r.run.StartedAt = started
		id, err := db.StartRun(ctx, r.run)
		if err != nil {
			t.Fatal(err)
		}
		r.end.EndedAt = started.Add(15 * time.Minute)
		if err := db.FinishRun(ctx, id, r.end); err != nil {
			t.Fatal(err)
		}
		started = started.Add(time.Hour)
	}
}
