package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestVersionProbe_RunsWithTheAgentsEnvironmentAndRecordsOnlyAVersion starts the daemon
// with a fake agent CLI whose --version dumps its environment and prints a first line
// that is not a version. The probe must see what agent turns see (the operator's own
// variables) and none of the daemon's secrets (WORKFLOW.md's $VARs, SORTIE_*), and the
// junk line must not be recorded as the CLI's version.
func TestVersionProbe_RunsWithTheAgentsEnvironmentAndRecordsOnlyAVersion(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"claude-code", "copilot-cli"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			secrets := map[string]string{
				"TRACKER_TOKEN":          "trk-secret-3f9a1c",
				"SORTIE_TRACKER_API_KEY": "override-secret-0b7e42",
				"HOOK_URL":               "https://hooks.example/path-secret-91ad",
			}
			dir := t.TempDir()
			envDump := filepath.Join(dir, "version-env.txt")
			cli := writeFile(t, dir, "fake-cli.sh", fmt.Sprintf(`#!/bin/sh
if [ "$1" = "--version" ]; then
  env > %s
  echo "Welcome! Checking for updates..."
  echo "2.1.330 (Claude Code)"
  exit 0
fi
exit 1
`, envDump))
			if err := os.Chmod(cli, 0o755); err != nil {
				t.Fatal(err)
			}
			writeFile(t, dir, "issues.json", "[]\n")
			wf := writeFile(t, dir, "WORKFLOW.md", fmt.Sprintf(`---
tracker:
  kind: file
  path: issues.json
  api_key: $TRACKER_TOKEN
  active_states: [Todo]
  terminal_states: [Done]
agent:
  kind: %s
  command: %s
  env: [PROBE_VISIBLE]
workspace:
  root: ./ws
db_path: ./sortie.db
notifications:
  - kind: webhook
    url: $HOOK_URL
---
Work on {{ .issue.identifier }}.
`, kind, cli))

			// A short TMPDIR: the agent socket lives under it, and a socket path has at
			// most 107 bytes.
			tmp, err := os.MkdirTemp("", "vp-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(tmp) })
			env := testEnv(tmp, "PROBE_VISIBLE=operator-setting")
			for k, v := range secrets {
				env = append(env, k+"="+v)
			}
			r := runSortie(t, dir, env, "--exit-when-idle", "--port", "0", wf)
			if r.code != exitOK {
				t.Fatalf("--exit-when-idle with no issues: want exit 0, got:\n%s", r)
			}
			started := ""
			for _, line := range strings.Split(r.stderr, "\n") {
				if strings.Contains(line, "sortie started") {
					started = line
				}
			}
			if !strings.Contains(started, `agent_version=""`) {
				t.Errorf("the start-up line records a version from a junk first line; want agent_version=\"\":\n%s", started)
			}
			if n := strings.Count(r.stderr, "--version printed no version"); n != 1 {
				t.Errorf("%d warnings about the missing version, want 1:\n%s", n, r.stderr)
			}

			dump, err := os.ReadFile(envDump)
			if err != nil {
				t.Fatalf("the fake CLI's --version did not run: %v", err)
			}
			if !strings.Contains(string(dump), "PROBE_VISIBLE=operator-setting") {
				t.Errorf("the probe's environment lacks the operator's own variable PROBE_VISIBLE:\n%s", dump)
			}
			for name, secret := range secrets {
				if strings.Contains(string(dump), secret) {
					t.Errorf("the --version probe got the secret %s in its environment", name)
				}
			}
			for _, line := range strings.Split(string(dump), "\n") {
				if strings.HasPrefix(line, "SORTIE_") {
					t.Errorf("the --version probe got the daemon's %s", line)
				}
			}
		})
	}
}
