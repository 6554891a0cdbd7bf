package main

// Red team, capability tokens (issue #31, deliverable 3): two issues run at once, and
// agent A takes agent B's capability token, from B's .sortie/mcp.json (readable to it:
// the operator's read_paths name the workspace root) and from the environment of B's
// MCP sidecar (/proc/<pid>/environ, which Landlock does not cover), and presents it on
// the agent socket. The socket must refuse it: a token works only from its own run's
// processes. B's own use of its token must still work.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"sortie/internal/testkit/clis"
	"sortie/internal/testkit/fakemodel"
)

// tokenAttacks are the steps both agents run (each acts only as its own issue: RT-A
// steals, RT-B holds its token), given the workspace root and a directory both may
// write, with the FIFOs through which B waits for A. Each step is one /bin/sh -c.
func tokenAttacks(wsRoot, shared string) []attack {
	prelude := `me=$SORTIE_ISSUE_IDENTIFIER
field() { node -e 'const e = require(process.argv[1]).mcpServers["sortie-tools"].env; console.log(e[process.argv[2]] || "")' "$1" "$2"; }
ask() { node -e 'require("http").get({socketPath: process.argv[1], path: "/v1/session", headers: {authorization: "Bearer " + process.argv[2]}}, r => { let b = ""; r.on("data", d => b += d); r.on("end", () => { console.log(r.statusCode, b); process.exit(r.statusCode == 200 ? 0 : 1) }) }).on("error", e => { console.log(String(e)); process.exit(2) })' "$1" "$2"; }
sock=$(field "$PWD/.sortie/mcp.json" SORTIE_AGENT_SOCKET)
own=$(field "$PWD/.sortie/mcp.json" SORTIE_AGENT_TOKEN)
`
	as := func(who, run string) string { return prelude + `[ "$me" = ` + who + ` ] || exit 0` + "\n" + run }
	return []attack{
		// B uses its own token, from its own process tree: accepted.
		{"b-own-token", as("RT-B", `ask "$sock" "$own"`)},
		// B holds its token in a process's environment, as its sidecar does, says it is
		// ready and waits until A is done.
		{"b-hold", as("RT-B", `SORTIE_AGENT_SOCKET=$sock SORTIE_AGENT_TOKEN=$own timeout 50 sh -c 'echo ready > "$0" && read x < "$1"' `+shared+`/ready `+shared+`/done`)},
		{"a-wait", as("RT-A", `timeout 50 sh -c 'read x < "$0"' `+shared+`/ready`)},
		{"a-steal-mcp-json", as("RT-A", `tok=$(field `+wsRoot+`/RT-B/.sortie/mcp.json SORTIE_AGENT_TOKEN)
[ -n "$tok" ] || { echo "B's token not obtained"; exit 3; }
[ "$tok" != "$own" ] || { echo "read my own token"; exit 4; }
ask "$sock" "$tok"`)},
		// Any process whose environment names this socket and a token not A's own: B's
		// sidecar (other daemons' on this machine name other sockets).
		{"a-steal-environ", as("RT-A", `tok=
for p in /proc/[0-9]*; do
  e=$({ tr '\0' '\n' < $p/environ; } 2>/dev/null) || continue
  case "$e" in *"SORTIE_AGENT_SOCKET=$sock"*) ;; *) continue ;; esac
  t=$(printf '%s\n' "$e" | sed -n 's/^SORTIE_AGENT_TOKEN=//p')
  if [ -n "$t" ] && [ "$t" != "$own" ]; then tok=$t; break; fi
done
[ -n "$tok" ] || { echo "B's token not obtained"; exit 3; }
ask "$sock" "$tok"`)},
		{"a-release", as("RT-A", `echo done > `+shared+`/done`)},
	}
}

// tokenRedTeamDirs lays out the daemon's directory with the two issues, the workspace
// root and the shared directory with its FIFOs, and returns the WORKFLOW.md front
// matter lines every variant shares.
func tokenRedTeamDirs(t *testing.T) (base, dir, envFile, wsRoot, shared string) {
	t.Helper()
	base, dir, envFile = redTeamDirs(t, "RT-A")
	writeFile(t, dir, "issues.json", `[{"id": "1", "identifier": "RT-A", "title": "t", "state": "Todo"},
 {"id": "2", "identifier": "RT-B", "title": "t", "state": "Todo"}]`)
	wsRoot, shared = filepath.Join(base, "ws"), filepath.Join(base, "shared")
	if err := os.Mkdir(shared, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"ready", "done"} {
		if err := syscall.Mkfifo(filepath.Join(shared, f), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return base, dir, envFile, wsRoot, shared
}

// tokenSandbox is the agent block's sandbox: the workspace root readable (a
// sibling's mcp.json with it), the shared directory writable.
func tokenSandbox(wsRoot, shared string) string {
	return fmt.Sprintf("  sandbox:\n    read_paths: [%s]\n    write_paths: [%s]\n", wsRoot, shared)
}

// checkTokenRedTeam reads the results (results(identifier) is where an issue's
// step results are) and checks that B's token was refused to A, however A got it, and
// that B's own use of it was accepted.
func checkTokenRedTeam(t *testing.T, results func(string) string, r result) {
	t.Helper()
	read := func(id, name string) (int, string) {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(results(id), name+".out"))
		if err != nil {
			t.Fatalf("%s's %s step left no result: %v\n%s", id, name, err, r)
		}
		code, rest := attackResult(b)
		return code, strings.TrimSpace(rest)
	}
	if code, out := read("RT-B", "b-own-token"); code != 0 || !strings.Contains(out, `"issue_identifier":"RT-B"`) {
		t.Errorf("B's own token, from B's own process, was not accepted: exit %d: %s", code, out)
	}
	if code, out := read("RT-A", "a-wait"); code != 0 {
		t.Fatalf("A never saw B ready (the two runs did not overlap): exit %d: %s\n%s", code, out, r)
	}
	obtained := 0
	for _, step := range []string{"a-steal-mcp-json", "a-steal-environ"} {
		code, out := read("RT-A", step)
		t.Logf("%s: exit %d: %s", step, code, out)
		switch {
		case code == 3:
			t.Logf("%s: A did not obtain B's token (%s)", step, out)
			continue
		case code == 0 || strings.Contains(out, `"RT-B"`):
			t.Errorf("%s: the agent socket answered A as B with B's stolen token: %s", step, out)
		case !strings.HasPrefix(out, "403 ") || !strings.Contains(out, "not in the session's"):
			t.Errorf("%s: want a 403 saying the caller is not B's, got exit %d: %s", step, code, out)
		}
		obtained++
	}
	if obtained == 0 {
		t.Error("A obtained B's token from neither source: the test proves nothing about the socket")
	}
	if obtained > 0 && !strings.Contains(r.stderr, "refused a capability token presented by a process that is not its run's") {
		t.Errorf("the daemon did not log the refusal:\n%s", r.stderr)
	}
}

// TestRedTeam_TokenStolenFromSibling_Mock: the attack as the mock agent's shell steps.
func TestRedTeam_TokenStolenFromSibling_Mock(t *testing.T) {
	requireConfinement(t)
	t.Parallel()
	tokenRedTeamMock(t, "")
}

// TestRedTeam_TokenStolenFromSibling_RunAs: the same with the agents running as
// agent.run_as's user (both as the same one: the uid alone does not tell them apart).
func TestRedTeam_TokenStolenFromSibling_RunAs(t *testing.T) {
	requireConfinement(t)
	requireRunAsUser(t)
	t.Parallel()
	tokenRedTeamMock(t, runAsTestUser)
}

// tokenRedTeamMock runs the attack as the mock agent's shell steps, the agents
// running as runAs ("": the daemon's user).
func tokenRedTeamMock(t *testing.T, runAs string) {
	t.Helper()
	base, dir, envFile, wsRoot, shared := tokenRedTeamDirs(t)
	tmp := t.TempDir()
	runAsLine := ""
	if runAs != "" {
		openUp(t, filepath.Dir(base), base, filepath.Dir(sortieBin), filepath.Dir(tmp), tmp)
		for _, p := range []string{shared, filepath.Join(shared, "ready"), filepath.Join(shared, "done")} {
			if err := os.Chmod(p, 0o777); err != nil {
				t.Fatal(err)
			}
		}
		runAsLine = "  run_as: " + runAs + "\n"
	}
	var steps strings.Builder
	for _, a := range tokenAttacks(wsRoot, shared) {
		run, _ := json.Marshal(a.run) // a JSON string is a YAML double-quoted scalar
		fmt.Fprintf(&steps, "    - {name: %s, run: %s}\n", a.name, run)
	}
	wf := writeFile(t, dir, "WORKFLOW.md", `---
tracker:
  kind: file
  path: issues.json
  active_states: [Todo]
  terminal_states: [Done]
agent:
  kind: mock
  max_turns: 1
`+runAsLine+tokenSandbox(wsRoot, shared)+`workspace:
  root: ../ws
db_path: ./sortie.db
server: {port: 0}
mock:
  status: blocked
  shell:
`+steps.String()+`---
Work on {{ .issue.identifier }}.
`)
	r := runSortie(t, dir, testEnv(tmp), "--exit-when-idle", "--env-file", envFile, wf)
	if r.code != exitOK {
		t.Fatalf("sortie: %s", r)
	}
	checkTokenRedTeam(t, func(id string) string { return filepath.Join(wsRoot, id, ".mock-agent", "shell") }, r)
}

// TestRedTeam_TokenStolenFromSibling_Claude: the same with the real claude CLI's Bash
// tool; B's token is also in its real MCP sidecar's environment.
func TestRedTeam_TokenStolenFromSibling_Claude(t *testing.T) {
	requireConfinement(t)
	t.Parallel()
	claude := clis.Claude(t)
	_, dir, envFile, wsRoot, shared := tokenRedTeamDirs(t)
	home := t.TempDir()
	script := redTeamScript(tokenAttacks(wsRoot, shared), "blocked")
	// Both sessions get the Bash call first (B's waits for A's, so both ask before
	// either gets its result back), then the model's default answer ends each.
	call := bashCall(script)
	call.Times = 2
	m := fakemodel.Start(t, call)
	wf := writeFile(t, dir, "WORKFLOW.md", fmt.Sprintf(`---
tracker:
  kind: file
  path: issues.json
  active_states: [Todo]
  terminal_states: [Done]
agent:
  kind: claude-code
  command: %s
  max_turns: 1
%sworkspace:
  root: ../ws
db_path: ./sortie.db
server: {port: 0}
claude-code:
  permission_mode: bypassPermissions
  model: claude-sonnet-4-5
---
Work on {{ .issue.identifier }}.
`, claude, tokenSandbox(wsRoot, shared)))
	env := clis.ClaudeEnv(testEnv(t.TempDir()), m.URL, home)
	r := runSortie(t, dir, env, "--exit-when-idle", "--env-file", envFile, wf)
	if r.code != exitOK {
		t.Fatalf("sortie: %s", r)
	}
	checkTokenRedTeam(t, func(id string) string { return filepath.Join(wsRoot, id, ".redteam") }, r)
}
