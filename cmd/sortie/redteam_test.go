package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sortie/internal/agent/sandbox"
)

// redTeamScript is what a prompt-injected agent tries in its workspace, one shell step
// each (the mock agent's shell step runs them with the agent's environment and
// confinement), and the ordinary work it must still be able to do. %[1]s is the
// daemon's directory (WORKFLOW.md, database, env file).
const redTeamScript = `
  - {name: read-db, run: "head -c 64 %[1]s/sortie.db"}
  - {name: read-env-file, run: "cat %[1]s/secrets.env"}
  - {name: list-daemon-dir, run: "ls -a %[1]s"}
  - {name: write-daemon-dir, run: "echo pwned > %[1]s/pwned"}
  - {name: write-outside, run: "echo pwned > %[1]s/../pwned-outside"}
  - {name: daemon-environ, run: "for p in /proc/[0-9]*; do tr '\\0' '\\n' < $p/environ 2>/dev/null; done; true"}
  - {name: own-env, run: "env"}
  - {name: sortie-dir, run: "cat .sortie/* 2>/dev/null; true"}
  - {name: git, run: "git init -q . && git -c user.email=a@example.com -c user.name=a commit -q --allow-empty -m work && git log --oneline | wc -l"}
  - {name: go-build, run: "go mod init example.com/x && go build -o app . && ./app"}
  - {name: npm-run, run: "npm run build && cat npm-built"}
`

// redTeamFiles are the ordinary project the agent builds.
const redTeamFiles = `
    main.go: "package main\n\nfunc main() { println(\"built\") }\n"
    package.json: '{"name": "x", "version": "1.0.0", "scripts": {"build": "node -e \"require(''fs'').writeFileSync(''npm-built'', ''ok'')\""}}'
`

// TestRedTeam_ConfinedMockAgent: a hostile agent (the mock agent's shell steps) tries
// to read the daemon's database, WORKFLOW.md and env file, write outside its
// workspace, and find the daemon's secret in /proc, its environment or .sortie/; each
// attempt fails. Ordinary work (git, go build, npm run) in its workspace still works.
func TestRedTeam_ConfinedMockAgent(t *testing.T) {
	if _, err := sandbox.Available(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI must prove confinement, but Landlock is unavailable: %v", err)
		}
		t.Skipf("skipped: Landlock is unavailable here: %v", err)
	}
	t.Parallel()
	const secret = "daemon-secret-9f3e1b"
	base := t.TempDir()
	dir := filepath.Join(base, "daemon")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "issues.json", `[{"id": "1", "identifier": "RT-1", "title": "t", "state": "Todo"}]`)
	envFile := writeFile(t, dir, "secrets.env", "SORTIE_TRACKER_API_KEY="+secret+"\n")
	wf := writeFile(t, dir, "WORKFLOW.md", fmt.Sprintf(`---
tracker:
  kind: file
  path: issues.json
  api_key: $TRACKER_TOKEN
  active_states: [Todo]
  terminal_states: [Done]
agent:
  kind: mock
  max_turns: 1
workspace:
  root: ../ws
db_path: ./sortie.db
mock:
  status: blocked
  files:`+redTeamFiles+`  shell:`+redTeamScript+`---
Work on {{ .issue.identifier }}.
`, dir))

	env := testEnv(t.TempDir(), "TRACKER_TOKEN="+secret)
	r := runSortie(t, dir, env, "--exit-when-idle", "--env-file", envFile, wf)
	if r.code != exitOK {
		t.Fatalf("sortie: %s", r)
	}
	if strings.Contains(r.stderr, "agents not confined") {
		t.Fatalf("the daemon ran its agents unconfined:\n%s", r.stderr)
	}
	ws := filepath.Join(base, "ws", "RT-1")
	result := func(name string) (int, string) {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(ws, ".mock-agent", "shell", name+".out"))
		if err != nil {
			t.Fatalf("the agent's %s step left no result: %v\n%s", name, err, r)
		}
		first, rest, _ := strings.Cut(string(b), "\n")
		var code int
		fmt.Sscanf(first, "exit %d", &code)
		return code, rest
	}
	for _, name := range []string{"read-db", "read-env-file", "list-daemon-dir", "write-daemon-dir", "write-outside"} {
		if code, out := result(name); code == 0 {
			t.Errorf("attack %s succeeded (exit 0): %q", name, out)
		}
	}
	for _, name := range []string{"read-db", "read-env-file", "daemon-environ", "own-env", "sortie-dir"} {
		if _, out := result(name); strings.Contains(out, secret) || strings.Contains(out, "SQLite format") {
			t.Errorf("attack %s found the daemon's secret or database:\n%s", name, out)
		}
	}
	for _, p := range []string{filepath.Join(dir, "pwned"), filepath.Join(base, "pwned-outside")} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s exists: the agent wrote outside its workspace", p)
		}
	}
	for name, want := range map[string]string{"git": "1", "go-build": "built", "npm-run": "ok"} {
		if code, out := result(name); code != 0 || !strings.Contains(out, want) {
			t.Errorf("ordinary work %s failed under confinement: exit %d, output %q (want %q)", name, code, out, want)
		}
	}
}
