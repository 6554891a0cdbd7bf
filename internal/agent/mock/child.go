package mock

import (
	"bufio"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"strconv"
	"strings"
	"time"
)

// ChildEnv is the environment variable that turns the running executable into the mock
// agent's child process. The adapter sets it to "1" for a turn; the child sets it to
// "helper" for the helper processes it spawns.
const ChildEnv = "SORTIE_MOCK_AGENT_CHILD"

const (
	childModeTurn   = "1"
	childModeHelper = "helper"
)

// IssueEnv names the issue whose per-issue profile the child follows. The orchestrator
// puts it in the agent's environment (StartParams.Env).
const IssueEnv = "SORTIE_ISSUE_IDENTIFIER"

// instructionsVersion guards against a child built from another version of this file
// (agent.command pointing at a different sortie binary). Version 2 added mcp_calls.
const instructionsVersion = 2

// instructions is the turn file the adapter writes and passes to the child as its last
// argument.
type instructions struct {
	Version   int     `json:"version"`
	SessionID string  `json:"session_id"`
	Turn      int     `json:"turn"` // TurnParams.TurnNumber, 1-based within the run
	Prompt    string  `json:"prompt"`
	Mock      options `json:"mock"`
}

// IsChild reports whether this process was started as the mock agent's child. A main
// function, and the TestMain of every test package that runs the mock adapter, must
// start with:
//
//	if mock.IsChild() {
//		os.Exit(mock.ChildMain())
//	}
func IsChild() bool { return os.Getenv(ChildEnv) != "" }

// ChildMain runs one mock agent turn (or a helper process) in this process and returns
// the exit status. It reads the turn file named by the last argument, works in the
// current directory (the workspace) and writes JSONL events to stdout. It only returns
// for outcomes that end; "hang" and helpers sleep until they are killed.
func ChildMain() int {
	if os.Getenv(ChildEnv) == childModeHelper {
		sleepForever()
	}
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "mock agent: missing the turn file argument")
		return 2
	}
	in, err := readInstructions(os.Args[len(os.Args)-1])
	if err != nil {
		fmt.Fprintf(os.Stderr, "mock agent: %v\n", err)
		return 2
	}
	return runChildTurn(in, os.Getenv(IssueEnv), os.Stdout, os.Stderr)
}

func readInstructions(name string) (instructions, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return instructions{}, fmt.Errorf("reading turn file: %w", err)
	}
	var in instructions
	if err := json.Unmarshal(data, &in); err != nil {
		return instructions{}, fmt.Errorf("turn file %s: %w", name, err)
	}
	if in.Version != instructionsVersion {
		return instructions{}, fmt.Errorf("turn file %s: version %d, this binary speaks %d", name, in.Version, instructionsVersion)
	}
	if len(in.Mock.Default.Script) == 0 {
		return instructions{}, fmt.Errorf("turn file %s: empty script", name)
	}
	return in, nil
}

// runChildTurn plays one turn of the issue's profile in the current directory.
func runChildTurn(in instructions, issue string, stdout, stderr io.Writer) int {
	prof := in.Mock.profileFor(issue)
	fail := func(err error) int {
		fmt.Fprintf(stderr, "mock agent: %v\n", err)
		return 1
	}
	root, err := os.OpenRoot(".")
	if err != nil {
		return fail(err)
	}
	defer root.Close()

	seq, err := nextTurnIndex(root)
	if err != nil {
		return fail(err)
	}
	out := prof.Script[min(seq, len(prof.Script)-1)]

	helpers, err := startHelpers(int(prof.HelperProcesses))
	if err != nil {
		return fail(err)
	}
	if err := writeWorkspace(root, prof); err != nil {
		return fail(err)
	}
	if err := runShell(root, prof.Shell); err != nil {
		return fail(err)
	}

	w := &eventWriter{w: bufio.NewWriter(stdout)}
	w.event(wireEvent{Type: wireSessionStarted, SessionID: in.SessionID, Model: prof.Model})
	// MCP calls come first, after files and status are written (a tool may look at
	// what the "agent" wrote). A call that goes wrong fails the turn whatever the
	// script says: the rest of the turn is skipped.
	if err := runMCPCalls(root, prof.MCPCalls, in.SessionID, w); err != nil {
		w.event(usageEvent(prof))
		w.event(wireEvent{Type: wireResult, Outcome: string(outcomeFailure), Message: err.Error()})
		if err := w.flush(); err != nil {
			return fail(err)
		}
		return 0
	}
	if out == outcomeHang {
		sleepForever()
	}
	for _, pid := range helpers {
		w.event(wireEvent{Type: wireNotification, Message: fmt.Sprintf("mock: started helper process %d", pid)})
	}

	// Spread the delay over the turn so that progress arrives the way a real agent's
	// does: a slice before each event and one before the end.
	steps := prof.EventsPerTurn + int64(len(prof.ToolCalls)) + 1
	slice := time.Duration(prof.DelayMS) * time.Millisecond / time.Duration(steps)
	for i := range prof.EventsPerTurn {
		time.Sleep(slice)
		w.event(wireEvent{Type: wireNotification, Message: fmt.Sprintf("mock: turn %d step %d/%d", in.Turn, i+1, prof.EventsPerTurn)})
	}
	for _, c := range prof.ToolCalls {
		time.Sleep(slice + time.Duration(c.DurationMS)*time.Millisecond)
		ev := wireEvent{Type: wireToolResult, Name: c.Name, DurationMS: c.DurationMS, Error: c.Error}
		if c.Error {
			ev.Message = "mock: " + c.Name + " failed as scripted"
		}
		w.event(ev)
	}
	for i := range prof.MalformedLines {
		w.raw(fmt.Sprintf("mock: malformed line %d, not JSON", i+1))
	}
	time.Sleep(slice)

	if out == outcomeCrash {
		if err := w.flush(); err != nil {
			return fail(err)
		}
		fmt.Fprintf(stderr, "mock agent: crashing with exit status %d as scripted (script entry %d)\n", prof.CrashExitCode, seq+1)
		return int(prof.CrashExitCode)
	}
	w.event(usageEvent(prof))
	w.event(wireEvent{Type: wireResult, Outcome: string(out), Message: resultMessage(out, seq)})
	if err := w.flush(); err != nil {
		return fail(err)
	}
	return 0
}

func usageEvent(prof profile) wireEvent {
	return wireEvent{
		Type: wireUsage, Model: prof.Model, APIDurationMS: prof.APIDurationMS,
		InputTokens: prof.InputTokens, OutputTokens: prof.OutputTokens, CacheReadTokens: prof.CacheReadTokens,
	}
}

func resultMessage(out outcome, seq int) string {
	switch out {
	case outcomeFailure:
		return fmt.Sprintf("mock: turn failed as scripted (script entry %d)", seq+1)
	case outcomeInputRequired:
		return fmt.Sprintf("mock: waiting for human input as scripted (script entry %d)", seq+1)
	}
	return fmt.Sprintf("mock: turn completed (script entry %d)", seq+1)
}

// nextTurnIndex returns how many turns this workspace has already played and records
// one more. The counter outlives sessions, so a script runs across retries.
func nextTurnIndex(root *os.Root) (int, error) {
	seq := 0
	data, err := root.ReadFile(counterFile)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return 0, err
	default:
		seq, err = strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil || seq < 0 {
			return 0, fmt.Errorf("%s: want a turn count, got %q; delete the file to restart the script", counterFile, data)
		}
	}
	if err := root.MkdirAll(counterDir, 0o755); err != nil {
		return 0, err
	}
	tmp := counterFile + ".tmp"
	if err := root.WriteFile(tmp, []byte(strconv.Itoa(seq+1)+"\n"), 0o644); err != nil {
		return 0, err
	}
	if err := root.Rename(tmp, counterFile); err != nil {
		return 0, err
	}
	return seq, nil
}

// writeWorkspace writes the profile's files and .sortie/status. os.Root keeps every
// write inside the workspace even through symlinks.
func writeWorkspace(root *os.Root, prof profile) error {
	for _, name := range sortedKeys(prof.Files) {
		if dir := path.Dir(name); dir != "." {
			if err := root.MkdirAll(dir, 0o755); err != nil {
				return fmt.Errorf("files[%q]: %w", name, err)
			}
		}
		if err := root.WriteFile(name, []byte(prof.Files[name]), 0o644); err != nil {
			return fmt.Errorf("files[%q]: %w", name, err)
		}
	}
	if prof.Status == "" {
		return nil
	}
	if err := root.MkdirAll(statusDir, 0o755); err != nil {
		return fmt.Errorf("status: %w", err)
	}
	if err := root.WriteFile(statusFile, []byte(prof.Status+"\n"), 0o644); err != nil {
		return fmt.Errorf("status: %w", err)
	}
	return nil
}

// startHelpers starts n long-lived processes in this process's group, like the MCP
// servers a real CLI spawns. Nothing waits for them: they outlive this process unless
// the adapter kills the group, which is what they are there to check.
func startHelpers(n int) ([]int, error) {
	if n == 0 {
		return nil, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	env := append(withoutKey(os.Environ(), ChildEnv), ChildEnv+"="+childModeHelper)
	pids := make([]int, 0, n)
	for range n {
		cmd := exec.Command(exe)
		cmd.Env = env
		if err := cmd.Start(); err != nil {
			return nil, fmt.Errorf("starting helper process: %w", err)
		}
		pids = append(pids, cmd.Process.Pid)
	}
	return pids, nil
}

func sleepForever() {
	for {
		time.Sleep(time.Hour)
	}
}

// eventWriter writes JSONL and flushes after every line, so that the adapter sees each
// event when it happens, as with a real CLI. The first write error is kept.
type eventWriter struct {
	w   *bufio.Writer
	err error
}

func (e *eventWriter) event(ev wireEvent) {
	line, err := json.Marshal(ev)
	if err != nil {
		e.err = cmp.Or(e.err, err)
		return
	}
	e.raw(string(line))
}

func (e *eventWriter) raw(line string) {
	if e.err != nil {
		return
	}
	e.w.WriteString(line)
	e.w.WriteByte('\n')
	e.err = e.w.Flush()
}

func (e *eventWriter) flush() error {
	if e.err != nil {
		return e.err
	}
	return e.w.Flush()
}

// withoutKey returns env without entries for key.
func withoutKey(env []string, key string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, key+"=") {
			out = append(out, kv)
		}
	}
	return out
}
