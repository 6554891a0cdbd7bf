package main

// End-to-end for Symphony users (issue 17): a WORKFLOW.md as OpenAI Symphony's users
// write it — a Liquid prompt, a codex: block and no agent.kind, tracker.kind linear with
// Linear's default terminal states — runs unchanged in Sortie, with the fake Linear
// GraphQL API as the tracker, the real codex CLI (pinned) as the agent and the fake
// OpenAI Responses API as its model. The agent works in its workspace and moves its own
// ticket to Human Review with the linear_graphql tool, as Symphony's agents do; Sortie
// sees the ticket leave the active states and the run ends.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sortie/internal/store"
	"sortie/internal/testkit/clis"
	"sortie/internal/testkit/fakelinear"
	"sortie/internal/testkit/fakemodel"
)

// symphonyWorkflow is a Symphony WORKFLOW.md: nothing in it is Sortie's own but the
// tracker endpoint (the fake Linear) and codex.command (the pinned CLI).
func symphonyWorkflow(endpoint, codex string) string {
	return fmt.Sprintf(`---
tracker:
  kind: linear
  endpoint: %s
  project_slug: "symphony-0c79b11b75ea"
  active_states:
    - Todo
    - In Progress
polling:
  interval_ms: 1000
workspace:
  root: ./ws
agent:
  max_concurrent_agents: 2
  max_turns: 3
codex:
  command: %s app-server
  approval_policy: never
  thread_sandbox: workspace-write
  turn_sandbox_policy:
    type: workspaceWrite
---
You are working on a Linear ticket `+"`{{ issue.identifier }}`"+`
{%% if attempt %%}
This is retry attempt #{{ attempt }}.
{%% endif %%}
Title: {{ issue.title }}
Labels: {{ issue.labels | join: ", " }}
{%% if issue.description %%}
{{ issue.description }}
{%% else %%}
No description provided.
{%% endif %%}
When you are done, move the ticket to Human Review.
`, endpoint, codex)
}

func TestSymphony_WorkflowRunsUnchangedWithCodexAndLinear(t *testing.T) {
	t.Parallel()
	codex := clis.Codex(t)
	lin := fakelinear.New(t, nil)
	lin.AddTeam("ENG", "Engineering")
	review := lin.AddState("ENG", "Human Review", "started")
	is := lin.AddIssue("ENG", "Add hello.txt", "Todo", func(i *fakelinear.Issue) {
		i.ProjectSlug = "0c79b11b75ea"
		i.Labels = []string{"Backend", "agent"}
	})
	other := lin.AddIssue("ENG", "Not in the project", "Todo", nil)

	mutation := `mutation($id: String!, $stateId: String!) { issueUpdate(id: $id, input: {stateId: $stateId}) { success issue { state { name } } } }`
	m := fakemodel.StartResponses(t,
		fakemodel.ResponsesReply{Text: "Writing the file.", FunctionCalls: []fakemodel.FunctionCall{{Name: "exec_command",
			Arguments: map[string]any{"cmd": "printf hello > hello.txt"}}},
			Usage: fakemodel.Usage{InputTokens: 900, OutputTokens: 40}},
		fakemodel.ResponsesReply{Text: "Moving the ticket.", FunctionCalls: []fakemodel.FunctionCall{{Namespace: "mcp__sortie_tools",
			Name: "linear_graphql", Arguments: map[string]any{"query": mutation,
				"variables": map[string]any{"id": is.ID, "stateId": review.ID}}}},
			Usage: fakemodel.Usage{InputTokens: 1000, OutputTokens: 30}},
		fakemodel.ResponsesReply{Text: "Done; the ticket is in Human Review.", Usage: fakemodel.Usage{InputTokens: 1100, OutputTokens: 10}},
	)

	dir := t.TempDir()
	// codex.command carries the model provider as --config overrides, as Symphony's
	// users pass codex settings: here, the fake Responses API.
	provider := fmt.Sprintf(`%s --config model_provider=fakemodel --config 'model_providers.fakemodel={name="fakemodel", base_url="%s", wire_api="responses", env_key="%s", request_max_retries=0, stream_max_retries=0}' --config model=%s`,
		codex, m.URL, clis.CodexProviderKeyEnv, clis.CodexModel)
	wf := writeFile(t, dir, "WORKFLOW.md", symphonyWorkflow(lin.URL, provider))
	env := append(clis.CodexEnv(testEnv(t.TempDir()), t.TempDir()), "LINEAR_API_KEY="+fakelinear.Key)

	// The file validates as it is: no error, and no warning about a key Sortie ignores.
	v := runSortie(t, dir, env, "validate", wf)
	if v.code != exitOK || !strings.Contains(v.stdout, "(0 warnings)") {
		t.Fatalf("sortie validate on the Symphony file: want valid with no warning, got:\n%s", v)
	}

	r := runSortie(t, dir, env, "--exit-when-idle", "--port", "0", wf)
	if r.code != exitOK {
		t.Fatalf("sortie: %s", r)
	}
	if strings.Contains(r.stdout+r.stderr, fakelinear.Key) {
		t.Errorf("the Linear key appeared in sortie's output:\n%s", r)
	}
	runs := runsByIssue(t, filepath.Join(dir, ".sortie.db"))
	if len(runs[other.ID]) != 0 {
		t.Errorf("%s (outside project_slug) ran: %+v", other.Identifier, runs[other.ID])
	}
	got := runs[is.ID]
	if len(got) != 1 {
		t.Fatalf("runs of %s = %+v, want one\n%s", is.Identifier, got, r)
	}
	run := got[0]
	if run.AgentKind != "codex" || run.SessionID == "" || !strings.Contains(run.CLIVersion, "0.169.0") {
		t.Errorf("run: agent %q session %q version %q, want codex 0.169.0 with its thread id", run.AgentKind, run.SessionID, run.CLIVersion)
	}
	if run.Status == store.StatusFailed || run.Status == store.StatusRunning || run.Turns != 1 {
		t.Errorf("run status %s after %d turns, want a finished run of one turn\n%s", run.Status, run.Turns, r)
	}
	if want := (store.Tokens{Input: 3000, Output: 80, Total: 3080}); run.Tokens != want {
		t.Errorf("run tokens = %+v, want %+v (the thread's totals)", run.Tokens, want)
	}
	if _, state := lin.Issue(is.ID); state != "Human Review" {
		t.Errorf("%s is in %q, want Human Review (moved by the agent through linear_graphql)", is.Identifier, state)
	}
	if data, err := os.ReadFile(filepath.Join(run.Workspace, "hello.txt")); err != nil || string(data) != "hello" {
		t.Errorf("hello.txt in the workspace = %q, %v", data, err)
	}

	// The first request carried the Liquid prompt, rendered with the Linear issue.
	reqs := m.Responses()
	if len(reqs) != 3 {
		t.Fatalf("model requests = %d, want 3", len(reqs))
	}
	first := reqs[0].Transcript()
	for _, want := range []string{"You are working on a Linear ticket `" + is.Identifier + "`", "Title: Add hello.txt",
		"Labels: backend, agent", "No description provided."} {
		if !strings.Contains(first, want) {
			t.Errorf("first prompt lacks %q:\n%s", want, first)
		}
	}
	if strings.Contains(first, "retry attempt") {
		t.Errorf("first prompt renders the retry block on a first run:\n%s", first)
	}
	// linear_graphql answered through the daemon: the mutation's result came back.
	out, ok := reqs[2].LastFunctionOutput()
	if !ok || !strings.Contains(out.Text, `"issueUpdate":{"issue":{"state":{"name":"Human Review"}},"success":true}`) {
		t.Errorf("linear_graphql's answer to the model = %+v, %v; want the mutation's result", out, ok)
	}
}

// symphonyCurrentFile is Symphony's WORKFLOW.md as its main branch has it since
// 2026-07-17 (testdata/symphony-2026-07-17/SOURCE.md): Linear's settings under
// tracker.provider, a workspace root under ~, an after_create hook that clones Symphony
// and a codex.command with its own model settings.
const symphonyCurrentFile = "testdata/symphony-2026-07-17/WORKFLOW.md"

// symphonyCurrentCommand is the codex.command line of that file, the one line the
// test replaces.
const symphonyCurrentCommand = `  command: codex --config shell_environment_policy.inherit=all --config 'model="gpt-5.5"' --config model_reasoning_effort=xhigh app-server` + "\n"

// TestSymphony_CurrentWorkflowRunsUnchanged: Symphony's current WORKFLOW.md, byte for
// byte but for codex.command, validates with no problem and runs a ticket to hand-off
// with the fake Linear API (reached through SORTIE_TRACKER_ENDPOINT, since the file
// names no endpoint) and the real codex CLI. Its after_create hook clones Symphony's
// repository: git's url.<base>.insteadOf in the test's HOME points that at a local
// repository, as the machine has no network. Blockers hold only Todo issues, as in
// Symphony: an In Progress issue whose blocker is open is still dispatched.
func TestSymphony_CurrentWorkflowRunsUnchanged(t *testing.T) {
	t.Parallel()
	codex := clis.Codex(t)
	original, err := os.ReadFile(symphonyCurrentFile)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(original), symphonyCurrentCommand) {
		t.Fatalf("%s no longer has the codex.command line the test replaces", symphonyCurrentFile)
	}

	home := t.TempDir()
	upstream := filepath.Join(t.TempDir(), "symphony")
	gitRun(t, "", "init", "-q", upstream)
	writeFile(t, upstream, "README.md", "symphony\n")
	gitRun(t, upstream, "add", "README.md")
	gitRun(t, upstream, "-c", "user.email=a@example.com", "-c", "user.name=a", "commit", "-q", "-m", "init")
	writeFile(t, home, ".gitconfig", fmt.Sprintf("[url \"file://%s\"]\n\tinsteadOf = https://github.com/openai/symphony\n[user]\n\temail = a@example.com\n\tname = a\n", upstream))

	m := fakemodel.StartResponses(t)
	provider := fmt.Sprintf(`%s --config model_provider=fakemodel --config 'model_providers.fakemodel={name="fakemodel", base_url="%s", wire_api="responses", env_key="%s", request_max_retries=0, stream_max_retries=0}' --config model=%s`,
		codex, m.URL, clis.CodexProviderKeyEnv, clis.CodexModel)
	dir := t.TempDir()
	wf := writeFile(t, dir, "WORKFLOW.md", strings.Replace(string(original), symphonyCurrentCommand, "  command: "+provider+" app-server\n", 1))

	lin := fakelinear.New(t, nil)
	lin.AddTeam("ENG", "Engineering")
	review := lin.AddState("ENG", "Human Review", "started")
	inProject := func(i *fakelinear.Issue) { i.ProjectSlug = "0c79b11b75ea" }
	blocker := lin.AddIssue("ENG", "An open blocker elsewhere", "Todo", nil)
	todoBlocked := lin.AddIssue("ENG", "Waits for its blocker", "Todo", inProject)
	lin.Block(blocker.ID, todoBlocked.ID)
	env := append(clis.CodexEnv(testEnv(t.TempDir()), home), "LINEAR_API_KEY="+fakelinear.Key, "SORTIE_TRACKER_ENDPOINT="+lin.URL)

	v := runSortie(t, dir, env, "validate", wf)
	if v.code != exitOK || !strings.Contains(v.stdout, "(0 warnings)") {
		t.Fatalf("sortie validate on Symphony's current file: want valid with no warning, got:\n%s", v)
	}

	// The blocker rule, read from the dry run: the In Progress issue goes, the Todo
	// one waits.
	progressBlocked := lin.AddIssue("ENG", "Add hello.txt", "In Progress", inProject)
	lin.Block(blocker.ID, progressBlocked.ID)
	d := runSortie(t, dir, env, "--dry-run", wf)
	if d.code != exitOK {
		t.Fatalf("--dry-run: %s", d)
	}
	for _, want := range []string{progressBlocked.Identifier + " .*dispatch$", todoBlocked.Identifier + " .*skip: blocked by " + blocker.Identifier} {
		if !regexp.MustCompile(`(?m)` + want).MatchString(d.stdout) {
			t.Errorf("--dry-run lacks a line matching %q:\n%s", want, d.stdout)
		}
	}

	mutation := `mutation($id: String!, $stateId: String!) { issueUpdate(id: $id, input: {stateId: $stateId}) { success issue { state { name } } } }`
	m.Push(
		fakemodel.ResponsesReply{Text: "Writing the file.", FunctionCalls: []fakemodel.FunctionCall{{Name: "exec_command",
			Arguments: map[string]any{"cmd": "printf hello > hello.txt"}}}},
		fakemodel.ResponsesReply{Text: "Moving the ticket.", FunctionCalls: []fakemodel.FunctionCall{{Namespace: "mcp__sortie_tools",
			Name: "linear_graphql", Arguments: map[string]any{"query": mutation,
				"variables": map[string]any{"id": progressBlocked.ID, "stateId": review.ID}}}}},
		fakemodel.ResponsesReply{Text: "Done; the ticket is in Human Review."},
	)
	r := runSortie(t, dir, env, "--exit-when-idle", "--port", "0", wf)
	if r.code != exitOK {
		t.Fatalf("sortie: %s", r)
	}
	runs := runsByIssue(t, filepath.Join(dir, ".sortie.db"))
	if len(runs[todoBlocked.ID]) != 0 {
		t.Errorf("%s ran while its blocker is open: %+v", todoBlocked.Identifier, runs[todoBlocked.ID])
	}
	got := runs[progressBlocked.ID]
	if len(got) != 1 || got[0].AgentKind != "codex" || got[0].Status == store.StatusFailed {
		t.Fatalf("runs of %s = %+v, want one codex run\n%s", progressBlocked.Identifier, got, r)
	}
	if _, state := lin.Issue(progressBlocked.ID); state != "Human Review" {
		t.Errorf("%s is in %q, want Human Review", progressBlocked.Identifier, state)
	}
	ws := got[0].Workspace
	if !strings.HasPrefix(ws, filepath.Join(home, "code", "symphony-workspaces")+string(filepath.Separator)) {
		t.Errorf("workspace %s is not under the file's ~/code/symphony-workspaces", ws)
	}
	for name, want := range map[string]string{"hello.txt": "hello", "README.md": "symphony\n"} {
		if data, err := os.ReadFile(filepath.Join(ws, name)); err != nil || string(data) != want {
			t.Errorf("%s in the workspace = %q, %v; want %q (the agent's file and the after_create clone)", name, data, err, want)
		}
	}
}

// gitRun runs git in dir and fails the test when it fails.
func gitRun(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}
