package main

// End-to-end: a structured workflow's checkpoint with the real claude CLI. The fake
// model drives claude through the workflow tools of the daemon's sidecar, passing the
// newest session_token the tools return; the checkpoint parks the issue, a human's
// answer over the API resumes claude's conversation with a prompt naming the answer and
// the newest token, and the workflow finishes.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"sortie/internal/store"
	"sortie/internal/testkit/clis"
	"sortie/internal/testkit/fakemodel"
)

// claudeCheckpointWorkflow runs claude, one turn per run, with the workflow library
// at ./library and the API on port.
func claudeCheckpointWorkflow(claude string, port int) string {
	return libraryWorkflow(port, "claude-code", "  command: "+claude+"\n", `claude-code:
  permission_mode: bypassPermissions
  model: claude-sonnet-4-5
`)
}

// wfTool is the name claude gives a workflow tool of the sidecar.
func wfTool(name string) string { return "mcp__sortie-tools__" + name }

// leadingJSON is the first JSON value of s: the CLI may append its own reminders after a
// tool's JSON.
func leadingJSON(s string) json.RawMessage {
	var raw json.RawMessage
	_ = json.NewDecoder(strings.NewReader(s)).Decode(&raw)
	return raw
}

// tokenOfLastResult is the session_token of the newest tool result of req, which must
// be a workflow tool's success.
func tokenOfLastResult(req fakemodel.Request) (string, error) {
	last, ok := req.LastToolResult()
	if !ok {
		return "", errors.New("no tool result in the request")
	}
	if last.IsError {
		return "", fmt.Errorf("the last tool call failed: %s", last.Text)
	}
	var body struct {
		SessionToken string `json:"session_token"`
	}
	if err := json.Unmarshal(leadingJSON(last.Text), &body); err != nil || body.SessionToken == "" {
		return "", fmt.Errorf("no session_token in the last tool result %q (%v)", last.Text, err)
	}
	return body.SessionToken, nil
}

// answerTokenIntro precedes the newest token in the prompt that resumes an agent after
// a checkpoint answer (orchestrator.answerNote).
const answerTokenIntro = "Your newest workflow session_token is:\n"

// tokenOfAnswerPrompt is the session_token the resuming prompt (the last user message
// of req) gives.
func tokenOfAnswerPrompt(req fakemodel.Request) (string, error) {
	if len(req.Messages) == 0 {
		return "", errors.New("no messages in the request")
	}
	last := req.Messages[len(req.Messages)-1]
	_, after, ok := strings.Cut(last.Text(), answerTokenIntro)
	if last.Role != "user" || !ok {
		return "", fmt.Errorf("the last message (%s) does not give the newest token: %q", last.Role, last.Text())
	}
	tok, _, _ := strings.Cut(after, "\n")
	if tok = strings.TrimSpace(tok); tok == "" {
		return "", errors.New("the resuming prompt gives an empty token")
	}
	return tok, nil
}

// withToken is a fakemodel InputFrom: args plus the session_token that token finds in
// the request.
func withToken(token func(fakemodel.Request) (string, error), args map[string]any) func(fakemodel.Request) (any, error) {
	return func(req fakemodel.Request) (any, error) {
		tok, err := token(req)
		if err != nil {
			return nil, err
		}
		in := maps.Clone(args)
		in["session_token"] = tok
		return in, nil
	}
}

// TestClaude_WorkflowCheckpointAnswerResumesTheConversation: the real claude CLI
// starts a workflow session, enters write and then approve, reads the blocking
// checkpoint and ends its turn; the issue parks as awaiting_input; a human answers over
// the API; the next run resumes claude's conversation (--resume) with the answer and
// the newest token, and claude responds with the human's option and finishes the
// workflow.
func TestClaude_WorkflowCheckpointAnswerResumesTheConversation(t *testing.T) {
	t.Parallel()
	claude := clis.Claude(t)
	call := func(text, tool string, input func(fakemodel.Request) (any, error)) fakemodel.Reply {
		return fakemodel.Reply{Text: text, ToolUses: []fakemodel.ToolUse{{Name: wfTool(tool), InputFrom: input}}}
	}
	const parkedText = "The change waits for a human at checkpoint ship."
	m := fakemodel.Start(t,
		// Run 1.
		fakemodel.Reply{Text: "Starting the workflow.", ToolUses: []fakemodel.ToolUse{{Name: wfTool("start_session"),
			Input: map[string]any{"workflow_id": "mini", "agent_id": "claude-1"}}}},
		call("Writing the change.", "next_activity", withToken(tokenOfLastResult, map[string]any{"activity_id": "write"})),
		call("Asking for approval.", "next_activity", withToken(tokenOfLastResult, map[string]any{"activity_id": "approve",
			"step_manifest": []map[string]any{{"step_id": "draft", "output": "drafted"}}})),
		call("Reading the checkpoint.", "get_checkpoint", withToken(tokenOfLastResult, map[string]any{"activity_id": "approve", "checkpoint_id": "ship"})),
		fakemodel.Reply{Text: parkedText},
		// Run 2, resumed after the answer.
		call("Shipping, as erin chose.", "respond_checkpoint", withToken(tokenOfAnswerPrompt, map[string]any{"checkpoint_id": "ship", "option_id": "ship-it"})),
		call("Finishing.", "next_activity", withToken(tokenOfLastResult, map[string]any{"activity_id": "done",
			"transition_condition": "checkpoint:ship:ship-it", "step_manifest": []map[string]any{}})),
		fakemodel.Reply{Text: "The workflow is done."},
	)
	dir := t.TempDir()
	for name, body := range miniLibrary {
		writeFile(t, filepath.Join(dir, "library"), name, body)
	}
	writeFile(t, dir, "issues.json", `[{"id": "1", "identifier": "WF-1", "title": "Change something", "state": "Todo"}]`)
	port := freePort(t)
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	wfPath := writeFile(t, dir, "WORKFLOW.md", claudeCheckpointWorkflow(claude, port))
	dbPath := filepath.Join(dir, "sortie.db")

	// On failure, what the model saw says more than the daemon's log alone.
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for i, q := range m.Messages() {
			var last string
			if n := len(q.Messages); n > 0 {
				last = q.Messages[n-1].Text()
			}
			t.Logf("model request %d (reply %d, script error %q), last message:\n%.2000s", i, q.Reply, q.ScriptError, last)
		}
	})
	// A script that cannot answer (a token not found) ends claude's turn with an API
	// error; the run would then be retried until a deadline. Fail at once instead.
	runStatuses := func() []string {
		for i, q := range m.Messages() {
			if q.ScriptError != "" {
				t.Fatalf("model request %d: the script could not answer it: %s", i, q.ScriptError)
			}
		}
		var sts []string
		for _, r := range runsByIssue(t, dbPath)["1"] {
			sts = append(sts, string(r.Status))
		}
		return sts
	}

	d := startDaemon(t, clis.ClaudeEnv(testEnv(t.TempDir()), m.URL, t.TempDir()), wfPath)
	waitHTTP(t, d, base+"/livez")

	// Run 1 ends at the checkpoint: the run is blocked and the issue awaits input.
	pollUntil(t, daemonTimeout, "run 1 blocked at the checkpoint", func() (bool, string) {
		sts := runStatuses()
		return slices.Equal(sts, []string{string(store.StatusBlocked)}), fmt.Sprintf("run statuses %v", sts)
	})
	var st struct {
		AwaitingInput []struct {
			Identifier string `json:"issue_identifier"`
			Question   string `json:"question"`
			Checkpoint *struct {
				CheckpointID string `json:"checkpoint_id"`
				Options      []struct {
					ID string `json:"id"`
				} `json:"options"`
			} `json:"checkpoint"`
		} `json:"awaiting_input"`
	}
	pollUntil(t, daemonTimeout, "WF-1 awaiting input at checkpoint ship", func() (bool, string) {
		st.AwaitingInput = nil
		getJSON(t, daemonToken(t, dbPath), base+"/api/v1/state", &st)
		for _, a := range st.AwaitingInput {
			if a.Identifier == "WF-1" && a.Checkpoint != nil && a.Checkpoint.CheckpointID == "ship" {
				return true, ""
			}
		}
		return false, fmt.Sprintf("awaiting_input = %+v", st.AwaitingInput)
	})
	if a := st.AwaitingInput[0]; a.Question != "Is the change ready to hand off?" || len(a.Checkpoint.Options) != 2 {
		t.Errorf("awaiting_input entry = %+v, want the question and both options", a)
	}
	reqs := m.Messages()
	if len(reqs) != 5 {
		t.Fatalf("model requests in run 1 = %d, want 5 (four workflow calls and the closing text)", len(reqs))
	}
	if first := reqs[0].Transcript(); !strings.Contains(first, "Work on WF-1.") || !strings.Contains(first, `start_session(workflow_id="mini")`) {
		t.Errorf("the first prompt lacks the issue or the workflow hint:\n%s", first)
	}
	// Every workflow call of run 1 succeeded: its result is in the next request.
	for i, tool := range []string{"start_session", "next_activity", "next_activity", "get_checkpoint"} {
		last, ok := reqs[i+1].LastToolResult()
		if !ok || last.IsError || !json.Valid(leadingJSON(last.Text)) {
			t.Errorf("%s (call %d) result = %+v, want a JSON success", tool, i+1, last)
		}
	}
	if cp, _ := reqs[4].LastToolResult(); !strings.Contains(cp.Text, "Is the change ready to hand off?") || !strings.Contains(cp.Text, "ship-it") {
		t.Errorf("get_checkpoint result = %s, want the question and its options", cp.Text)
	}

	// A human answers over the API.
	res, err := apiPost(daemonToken(t, dbPath), base+"/api/v1/WF-1/checkpoints/ship", `{"option_id": "ship-it", "answered_by": "erin"}`)
	if err != nil {
		t.Fatalf("POST answer: %v", err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.Contains(string(body), `"answered_by":"erin"`) {
		t.Fatalf("answering = %d %s, want 200 recording erin", res.StatusCode, body)
	}

	// The answer resumes claude's conversation; the run ends handed off.
	pollUntil(t, daemonTimeout, "WF-1 handed off after the answer", func() (bool, string) {
		sts := runStatuses()
		return slices.Equal(sts, []string{string(store.StatusBlocked), string(store.StatusHandedOff)}), fmt.Sprintf("run statuses %v", sts)
	})
	reqs = m.Messages()
	if len(reqs) != 8 {
		t.Fatalf("model requests = %d, want 8 (5 in run 1, 3 after the answer)", len(reqs))
	}
	resumed := reqs[5]
	if n := len(resumed.ToolResults()); n != 4 {
		t.Errorf("the resumed request carries %d tool results, want run 1's 4 (the conversation was not resumed)", n)
	}
	if tr := resumed.Transcript(); !strings.Contains(tr, "Work on WF-1.") || !strings.Contains(tr, parkedText) {
		t.Errorf("the resumed request lacks run 1's prompt or its last reply:\n%s", tr)
	}
	prompt := resumed.Messages[len(resumed.Messages)-1].Text()
	if !strings.Contains(prompt, "## Checkpoint answers") ||
		!strings.Contains(prompt, `Checkpoint "ship" (activity approve) was answered by erin: option "ship-it"`) ||
		!strings.Contains(prompt, answerTokenIntro) {
		t.Errorf("the resuming prompt does not give the answer and the newest token:\n%s", prompt)
	}
	responded, _ := reqs[6].LastToolResult()
	if responded.IsError || !strings.Contains(responded.Text, `"resolved_option":"ship-it"`) || !strings.Contains(responded.Text, `"transitionTo":"done"`) {
		t.Errorf("respond_checkpoint result = %+v, want ship-it resolved with its effect", responded)
	}
	if done, _ := reqs[7].LastToolResult(); done.IsError || !strings.Contains(done.Text, `"id":"done"`) {
		t.Errorf("next_activity(done) result = %+v, want the done activity", done)
	}

	// One claude conversation across both runs, and the store holds who answered and
	// how the agent resolved it.
	runs := runsByIssue(t, dbPath)["1"]
	if runs[0].SessionID == "" || runs[1].SessionID != runs[0].SessionID {
		t.Errorf("run sessions = %q, %q; want run 2 to resume run 1's", runs[0].SessionID, runs[1].SessionID)
	}
	cps, err := openStore(t, dbPath).IssueCheckpoints(context.Background(), "1", 10)
	if err != nil || len(cps) != 1 {
		t.Fatalf("IssueCheckpoints = %+v, %v", cps, err)
	}
	if c := cps[0]; c.Answer != "ship-it" || c.AnsweredBy != "erin" || c.AnswerSource != store.AnswerAPI || c.Resolution != store.ResolvedOption {
		t.Errorf("stored checkpoint = %+v, want ship-it by erin via api, resolved by option", c)
	}
}
