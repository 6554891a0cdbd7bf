package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
