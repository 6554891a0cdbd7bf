package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"sortie/internal/workflow/engine"
)

// writeWorkflowLibrary writes a library with one workflow, demo (one activity, work),
// into dir/lib and returns that directory.
func writeWorkflowLibrary(t *testing.T, dir string) string {
	t.Helper()
	lib := filepath.Join(dir, "lib")
	writeFile(t, lib, "demo/workflow.json", `{"id":"demo","version":"1.0.0","title":"Demo","description":"A one-activity workflow.","initialActivity":"work"}`)
	writeFile(t, lib, "demo/activities/01-work.json", `{"id":"work","version":"1.0.0","name":"Work","steps":[{"id":"do-it","name":"Do it"}]}`)
	return lib
}

// startWorkflowServer runs the built `sortie mcp-server` with args and connects the
// SDK's client to it; at cleanup, closing the session must end it with exit 0.
func startWorkflowServer(t *testing.T, env []string, args ...string) *sdk.ClientSession {
	t.Helper()
	cmd := exec.Command(sortieBin, append([]string{"mcp-server"}, args...)...)
	cmd.Env = testEnv(t.TempDir(), env...)
	cmd.Dir = t.TempDir()
	var stderr bytes.Buffer
	var mu sync.Mutex
	cmd.Stderr = &lockedWriter{mu: &mu, w: &stderr}
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "any-client", Version: "v0"}, nil).
		Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connecting to sortie mcp-server %v: %v", args, err)
	}
	closed := false
	t.Cleanup(func() {
		if closed {
			return
		}
		closed = true
		err := cs.Close()
		mu.Lock()
		defer mu.Unlock()
		if err != nil || cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 0 {
			t.Errorf("sortie mcp-server did not exit 0 when its stdin closed: %v\n%s", err, stderr.String())
		}
	})
	return cs
}

// callWorkflowTool calls a tool and returns its decoded body and _meta.
func callWorkflowTool(t *testing.T, cs *sdk.ClientSession, name string, args map[string]any) (map[string]any, map[string]any, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	var body map[string]any
	if err := json.Unmarshal([]byte(res.Content[0].(*sdk.TextContent).Text), &body); err != nil {
		t.Fatalf("tools/call %s: the body is not a JSON object: %v", name, err)
	}
	return body, res.Meta, res.IsError
}

// A standalone workflow server keeps its sessions in its state directory: after a
// restart, the newest token of a session still works.
func TestMCPWorkflows_StandaloneSessionSurvivesARestart(t *testing.T) {
	dir := t.TempDir()
	lib := writeWorkflowLibrary(t, dir)
	stateDir := filepath.Join(dir, "state")

	cs := startWorkflowServer(t, nil, "--workflows", lib, "--state-dir", stateDir)
	if got, want := toolNames(t, cs), slices.Sorted(slices.Values(engine.Names())); !slices.Equal(got, want) {
		t.Fatalf("tools/list = %v, want the workflow tools %v", got, want)
	}
	body, meta, isErr := callWorkflowTool(t, cs, "start_session", map[string]any{"workflow_id": "demo"})
	tok, _ := body["session_token"].(string)
	if isErr || tok == "" || meta["session_token"] != tok {
		t.Fatalf("start_session = %v (_meta %v)", body, meta)
	}
	_, meta, isErr = callWorkflowTool(t, cs, "next_activity", map[string]any{"session_token": tok, "activity_id": "work"})
	newest, _ := meta["session_token"].(string)
	if isErr || newest == "" {
		t.Fatalf("next_activity failed: _meta %v", meta)
	}
	if err := cs.Close(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(stateDir, "workflow.key"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the key file: %v, %v; want a 0600 file in the state directory", fi, err)
	}

	cs = startWorkflowServer(t, nil, "--workflows", lib, "--state-dir", stateDir)
	body, _, isErr = callWorkflowTool(t, cs, "get_workflow", map[string]any{"session_token": newest})
	if isErr {
		t.Fatalf("get_workflow with the newest token after a restart = %v; want the session kept", body)
	}
	if body, _, isErr = callWorkflowTool(t, cs, "get_workflow", map[string]any{"session_token": tok}); !isErr {
		t.Fatalf("get_workflow with a superseded token after a restart = %v; want it refused", body)
	}
}

func TestMCPWorkflows_DefaultStateDirFollowsXDG(t *testing.T) {
	dir := t.TempDir()
	lib := writeWorkflowLibrary(t, dir)
	xdg := filepath.Join(dir, "xdg")
	cs := startWorkflowServer(t, []string{"XDG_STATE_HOME=" + xdg}, "--workflows", lib)
	if _, _, isErr := callWorkflowTool(t, cs, "start_session", map[string]any{"workflow_id": "demo"}); isErr {
		t.Fatal("start_session failed")
	}
	cs.Close()
	for _, name := range []string{"workflow.key", "sessions.json"} {
		if _, err := os.Stat(filepath.Join(xdg, "sortie", "workflows", name)); err != nil {
			t.Errorf("%s: %v; want it under $XDG_STATE_HOME/sortie/workflows", name, err)
		}
	}
}

// Both flags: the session tools of the WORKFLOW.md and the workflow tools.
func TestMCPWorkflows_BothSets(t *testing.T) {
	f := newMCPFixture(t)
	lib := writeWorkflowLibrary(t, t.TempDir())
	cs := startWorkflowServer(t, f.env(true, false), "--workflow", f.workflow, "--workflows", lib, "--state-dir", t.TempDir())
	want := slices.Sorted(slices.Values(append([]string{"sortie_status"}, engine.Names()...)))
	if got := toolNames(t, cs); !slices.Equal(got, want) {
		t.Fatalf("tools/list = %v, want %v", got, want)
	}
}

func TestMCPWorkflows_StartupFailures(t *testing.T) {
	dir := t.TempDir()
	good := writeWorkflowLibrary(t, dir)
	bad := filepath.Join(dir, "bad")
	writeFile(t, bad, "broken/workflow.json", `{"id":"broken","version":"1.0.0","title":"Broken","initialActivity":"nowhere"}`)
	writeFile(t, bad, "broken/activities/01-a.json", `{"id":"a","version":"1.0.0","name":"A","steps":[{"id":"s"}],"bogus":true}`)
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr []string
	}{
		{name: "a library with errors", args: []string{"--workflows", bad, "--state-dir", filepath.Join(dir, "s1")}, code: exitFailure,
			stderr: []string{"problem(s) in the workflow library", filepath.Join(bad, "broken", "activities", "01-a.json"), filepath.Join(bad, "broken", "workflow.json")}},
		{name: "a missing library", args: []string{"--workflows", filepath.Join(dir, "nowhere")}, code: exitFailure, stderr: []string{"--workflows: workflow: library"}},
		{name: "--state-dir alone", args: []string{"--state-dir", dir}, code: exitUsage, stderr: []string{"--state-dir is only used with --workflows DIR"}},
		{name: "neither flag", args: nil, code: exitUsage, stderr: []string{"--workflow is required", "--workflows DIR"}},
		{name: "an unusable state directory", args: []string{"--workflows", good, "--state-dir", filepath.Join(good, "demo", "workflow.json")}, code: exitFailure,
			stderr: []string{"--state-dir:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runSortie(t, dir, testEnv(t.TempDir()), append([]string{"mcp-server"}, tt.args...)...)
			ok := r.code == tt.code && r.stdout == ""
			for _, s := range tt.stderr {
				ok = ok && strings.Contains(r.stderr, s)
			}
			if !ok {
				t.Fatalf("want exit %d, nothing on stdout and stderr containing %q; got:\n%s", tt.code, tt.stderr, r)
			}
		})
	}
}
