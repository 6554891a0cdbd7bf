package main

import (
	"sortie/internal/daemon"

	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"sortie/internal/store"
	"sortie/internal/workflow/session"
)

// miniLibrary is a three-activity workflow: write → approve (one blocking checkpoint
// "ship") → done, or back to write.
var miniLibrary = map[string]string{
	"mini/workflow.json": `{"id": "mini", "version": "1.0.0", "title": "Write, approve, done",
	  "initialActivity": "write",
	  "executionModel": {"roles": [{"id": "orchestrator", "description": "The Sortie daemon."}, {"id": "worker", "description": "The agent."}]}}`,
	"mini/activities/01-write.json": `{"id": "write", "version": "1.0.0", "name": "Write the change",
	  "steps": [{"id": "draft", "name": "Draft it"}],
	  "transitions": [{"to": "approve", "isDefault": true}]}`,
	"mini/activities/02-approve.json": `{"id": "approve", "version": "1.0.0", "name": "Approval",
	  "checkpoints": [{"id": "ship", "name": "Ship it?", "message": "Is the change ready to hand off?",
	    "options": [{"id": "ship-it", "label": "Ship it", "effect": {"transitionTo": "done"}},
	                {"id": "rework", "label": "Rework", "effect": {"transitionTo": "write"}}]}],
	  "transitions": [{"to": "done", "isDefault": true}, {"to": "write", "condition": {"type": "simple", "variable": "rework", "operator": "==", "value": true}}]}`,
	"mini/activities/03-done.json": `{"id": "done", "version": "1.0.0", "name": "Done"}`,
}

// libraryWorkflow is a file-tracker WORKFLOW.md running agentKind (with agentExtra
// lines in its agent: block and blocks after the rest) one turn per run, with the
// workflow library at ./library (workflow mini) and the API on port.
func libraryWorkflow(port int, agentKind, agentExtra, blocks string) string {
	return fmt.Sprintf(`---
tracker:
  kind: file
  path: issues.json
  active_states: [Todo]
  terminal_states: [Done]
  handoff_state: Review
agent:
  kind: %s
%s  max_turns: 1
  max_retry_backoff_ms: 1000
workspace:
  root: ./ws
db_path: ./sortie.db
server:
  host: 127.0.0.1
  port: %d
workflows:
  dir: ./library
  workflow: mini
%s---
Work on {{ .issue.identifier }}.
`, agentKind, agentExtra, port, blocks)
}

// checkpointWorkflow runs the mock agent through the workflow tools of the daemon: run
// 1 enters "approve" and cannot respond before a human answers; the run after the
// answer responds (first with the wrong option), and finishes the workflow.
func checkpointWorkflow(port int) string {
	return libraryWorkflow(port, "mock", "", `mock:
  mcp_calls:
    - - {tool: start_session, arguments: {workflow_id: mini, agent_id: mock-1}}
      - {tool: next_activity, arguments: {session_token: $session_token, activity_id: write}}
      - {tool: next_activity, arguments: {session_token: $session_token, activity_id: approve, step_manifest: [{step_id: draft, output: drafted}]}}
      - {tool: get_checkpoint, arguments: {session_token: $session_token, activity_id: approve, checkpoint_id: ship}}
      - {tool: respond_checkpoint, arguments: {session_token: $session_token, checkpoint_id: ship, option_id: ship-it}, expect_error: true}
    - - {tool: respond_checkpoint, arguments: {session_token: $session_token, checkpoint_id: ship, option_id: rework}, expect_error: true}
      - {tool: respond_checkpoint, arguments: {session_token: $session_token, checkpoint_id: ship, option_id: ship-it}}
      - {tool: next_activity, arguments: {session_token: $session_token, activity_id: done, transition_condition: "checkpoint:ship:ship-it", step_manifest: []}}
      - {tool: get_trace, arguments: {session_token: $session_token, trace_tokens: $trace_tokens}}
`)
}

// mcpLogLine is one call of the mock agent's .sortie/mock-mcp.log.
type mcpLogLine struct {
	Group   int    `json:"group"`
	Tool    string `json:"tool"`
	IsError bool   `json:"is_error"`
	Text    string `json:"text"`
}

func readMCPLog(t *testing.T, path string) []mcpLogLine {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the mock agent's MCP log: %v", err)
	}
	var out []mcpLogLine
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l mcpLogLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("MCP log line %q: %v", sc.Text(), err)
		}
		out = append(out, l)
	}
	return out
}

// daemonToken is the operator token of the daemon whose database is dbPath (the one it
// generated, server.auth_token being unset).
func daemonToken(t testing.TB, dbPath string) string {
	t.Helper()
	key, err := session.LoadOrCreateKey(dbPath + daemon.OperatorTokenSuffix)
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(key)
}

// apiPost posts a JSON body to the API as the operator.
func apiPost(token, url, body string) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	return http.DefaultClient.Do(req)
}

func getJSON(t testing.TB, token, url string, v any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %s", url, res.Status, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("GET %s: %v in %s", url, err, b)
	}
}

// TestWorkflowCheckpoint_HumanAnswerOverTheAPIResumesTheAgent is issue #9's daemon
// test: a real mock-agent session calls the workflow tools through the real sidecar;
// its blocking checkpoint parks the issue as awaiting_input (with a tracker comment);
// the parked state survives a daemon restart; a human's answer posted to the API
// resumes the agent's session, and respond_checkpoint accepts only that answer.
func TestWorkflowCheckpoint_HumanAnswerOverTheAPIResumesTheAgent(t *testing.T) {
	dir := t.TempDir()
	for name, body := range miniLibrary {
		writeFile(t, filepath.Join(dir, "library"), name, body)
	}
	writeFile(t, dir, "issues.json", `[{"id": "1", "identifier": "WF-1", "title": "Change something", "state": "Todo"}]`)
	port := freePort(t)
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	wfPath := writeFile(t, dir, "WORKFLOW.md", checkpointWorkflow(port))
	env := testEnv(t.TempDir())
	dbPath := filepath.Join(dir, "sortie.db")
	mcpLog := filepath.Join(dir, "ws", "WF-1", ".sortie", "mock-mcp.log")

	d := startDaemon(t, env, wfPath)
	waitHTTP(t, d, base+"/livez")

	// Run 1 stops at the checkpoint and the issue waits for a human.
	type checkpointJSON struct {
		CheckpointID string `json:"checkpoint_id"`
		Name         string `json:"name"`
		Options      []struct {
			ID string `json:"id"`
		} `json:"options"`
		AnswerURL string `json:"answer_url"`
	}
	type stateJSON struct {
		AwaitingInput []struct {
			Identifier string          `json:"issue_identifier"`
			Reason     string          `json:"reason"`
			Question   string          `json:"question"`
			Checkpoint *checkpointJSON `json:"checkpoint"`
		} `json:"awaiting_input"`
	}
	awaitParked := func(d *runningDaemon) stateJSON {
		var st stateJSON
		pollUntil(t, daemonTimeout, "WF-1 awaiting input at checkpoint ship", func() (bool, string) {
			st = stateJSON{}
			getJSON(t, daemonToken(t, dbPath), base+"/api/v1/state", &st)
			for _, a := range st.AwaitingInput {
				if a.Identifier == "WF-1" && a.Checkpoint != nil && a.Checkpoint.CheckpointID == "ship" {
					return true, ""
				}
			}
			return false, fmt.Sprintf("awaiting_input = %+v", st.AwaitingInput)
		})
		return st
	}
	st := awaitParked(d)
	a := st.AwaitingInput[0]
	if a.Question != "Is the change ready to hand off?" || len(a.Checkpoint.Options) != 2 || a.Checkpoint.Options[0].ID != "ship-it" {
		t.Errorf("awaiting_input entry = %+v, want the question and both options", a)
	}
	calls := readMCPLog(t, mcpLog)
	if len(calls) != 5 {
		t.Fatalf("run 1 made %d workflow calls, want 5: %+v", len(calls), calls)
	}
	if last := calls[4]; last.Tool != "respond_checkpoint" || !last.IsError || !strings.Contains(last.Text, "awaiting_human") {
		t.Errorf("responding before a human answered = %+v, want an awaiting_human error", last)
	}
	// The file tracker's comments never answer, so Sortie's comment names the API.
	pollUntil(t, daemonTimeout, "the checkpoint's tracker comment", func() (bool, string) {
		b, _ := os.ReadFile(filepath.Join(dir, "issues.json"))
		return bytes.Contains(b, []byte("do not answer checkpoints")) && bytes.Contains(b, []byte("/checkpoints/ship with")), string(b)
	})

	// A restart keeps the parked issue, its checkpoint and the session's newest token.
	d.signal(syscall.SIGTERM)
	if code := d.wait(daemonTimeout); code != 0 {
		t.Fatalf("daemon exit code after SIGTERM = %d", code)
	}
	d = startDaemon(t, env, wfPath)
	waitHTTP(t, d, base+"/livez")
	awaitParked(d)

	// A wrong option and a missing body are refused; the human's answer is recorded.
	post := func(body string) (int, string) {
		res, err := apiPost(daemonToken(t, dbPath), base+"/api/v1/WF-1/checkpoints/ship", body)
		if err != nil {
			t.Fatalf("POST answer: %v", err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if code, body := post(`{"option_id": "maybe"}`); code != http.StatusUnprocessableEntity || !strings.Contains(body, "ship-it") {
		t.Errorf("answering with an unknown option = %d %s, want 422 listing the options", code, body)
	}
	if code, body := post(`{"option_id": "ship-it", "answered_by": "erin"}`); code != http.StatusOK || !strings.Contains(body, `"answered_by":"erin"`) {
		t.Fatalf("answering = %d %s, want 200 recording erin", code, body)
	}
	if code, _ := post(`{"option_id": "rework"}`); code != http.StatusConflict {
		t.Errorf("a second answer = %d, want 409", code)
	}

	// The answer resumes the agent, which may respond only with erin's option, and the
	// run ends handed off.
	pollUntil(t, daemonTimeout, "WF-1 handed off after the answer", func() (bool, string) {
		runs := runsByIssue(t, dbPath)["1"]
		var sts []string
		for _, r := range runs {
			sts = append(sts, string(r.Status))
		}
		return slices.Equal(sts, []string{string(store.StatusBlocked), string(store.StatusHandedOff)}), strings.Join(sts, ",")
	})
	calls = readMCPLog(t, mcpLog)
	if len(calls) != 9 {
		t.Fatalf("workflow calls = %d, want 9: %+v", len(calls), calls)
	}
	if c := calls[5]; !c.IsError || !strings.Contains(c.Text, "wrong_option") || !strings.Contains(c.Text, "erin") {
		t.Errorf("responding with another option than the human's = %+v, want a wrong_option error naming erin", c)
	}
	if c := calls[6]; c.IsError || !strings.Contains(c.Text, `"resolved_option":"ship-it"`) || !strings.Contains(c.Text, `"transitionTo":"done"`) {
		t.Errorf("responding with the human's option = %+v, want it resolved with its effect", c)
	}
	if c := calls[8]; c.IsError || !strings.Contains(c.Text, `"source":"tokens"`) {
		t.Errorf("get_trace = %+v", c)
	}

	// The store holds who answered and how the agent resolved it; the API shows the
	// run's activity path.
	s := openStore(t, dbPath)
	cps, err := s.IssueCheckpoints(context.Background(), "1", 10)
	if err != nil || len(cps) != 1 {
		t.Fatalf("IssueCheckpoints = %+v, %v", cps, err)
	}
	if c := cps[0]; c.Answer != "ship-it" || c.AnsweredBy != "erin" || c.AnswerSource != store.AnswerAPI || c.Resolution != store.ResolvedOption {
		t.Errorf("stored checkpoint = %+v, want ship-it by erin via api, resolved by option", c)
	}
	var issue struct {
		Workflow struct {
			Runs []struct {
				Activities []string `json:"activities"`
			} `json:"runs"`
		} `json:"workflow"`
	}
	getJSON(t, daemonToken(t, dbPath), base+"/api/v1/WF-1", &issue)
	var path []string
	for _, r := range issue.Workflow.Runs {
		path = append(path, r.Activities...)
	}
	for _, want := range []string{"write", "approve", "done"} {
		if !slices.Contains(path, want) {
			t.Errorf("activity paths %q lack %q", path, want)
		}
	}
}
