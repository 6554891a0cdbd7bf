package copilot

// The dialect against a fake CLI (clis.Fake) that answers --version and --help, copies
// a prepared usage file to --usage-output-file and prints a prepared transcript, one
// set of files per turn: the canary and the authentication preflight, how the result
// event decides a turn, how turns resume, the usage file and where the prompt goes.
// The runner's own lifecycle is tested in package cli.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"sortie/internal/agent"
	"sortie/internal/agent/agenttest"
	"sortie/internal/agent/cli"
	"sortie/internal/testkit/clis"
)

// copyUsage is what every run of the fake sources: it copies usage.<n> to the file
// --usage-output-file names, as the pinned CLI writes its token counts there on exit.
const copyUsage = `usage=
while [ $# -gt 0 ]; do case "$1" in --usage-output-file) usage=$2; shift;; esac; shift; done
[ -n "$usage" ] && [ -f "$dir/usage.$n" ] && cp "$dir/usage.$n" "$usage"
`

// newFakeCLI is a fake copilot 1.0.102 that knows --usage-output-file.
func newFakeCLI(t *testing.T) *clis.Fake {
	t.Helper()
	f := clis.NewFake(t, "copilot")
	f.Set(t, "version", "GitHub Copilot CLI 1.0.102.\nRun 'copilot update' to check for updates.\n")
	f.Set(t, "help", "  --usage-output-file <file>\n")
	f.Set(t, "each", copyUsage)
	return f
}

// usage scripts run n's usage file: output tokens of the CLI session so far.
func usage(t *testing.T, f *clis.Fake, n int, output int64) {
	t.Helper()
	f.Set(t, "usage."+strconv.Itoa(n), fmt.Sprintf(
		`{"modelMetrics":{"claude-sonnet-4-5":{"usage":{"inputTokens":900,"outputTokens":%d}}},"currentModel":"claude-sonnet-4-5"}`, output))
}

// byok is an agent environment whose credential is a BYOK provider, with HOME below
// the package's cache.
func byok() []string {
	return []string{"PATH=/usr/bin:/bin", "COPILOT_PROVIDER_BASE_URL=http://127.0.0.1:9", "HOME=" + cliCache}
}

func resultLine(session string, exitCode int, apiMS int64) string {
	return fmt.Sprintf(`{"type":"result","timestamp":"2026-01-01T00:00:00Z","sessionId":%q,"exitCode":%d,"usage":{"premiumRequests":0,"totalApiDurationMs":%d,"sessionDurationMs":9}}`,
		session, exitCode, apiMS)
}

const message = `{"type":"assistant.message","data":{"messageId":"m","content":"working","toolRequests":[]}}`

func newFakeAdapter(t *testing.T, f *clis.Fake, opts map[string]any) *adapter {
	t.Helper()
	a, err := New(agent.Config{Kind: Kind, Command: f.Path, Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	ad := a.(*adapter)
	dialectOf(ad).gh = filepath.Join(t.TempDir(), "no-gh")
	ad.Grace = time.Second
	return ad
}

func startFake(t *testing.T, a *adapter, p agent.StartParams) *agent.Session {
	t.Helper()
	if p.Workspace == "" {
		p.Workspace = t.TempDir()
	}
	if p.Env == nil {
		p.Env = byok()
	}
	return agenttest.StartSession(t, a, p)
}

func runTurn(t *testing.T, a *adapter, s *agent.Session, n int, prompt string) agenttest.Outcome {
	t.Helper()
	return agenttest.RunTurn(context.Background(), a, s, n, prompt)
}

func TestStartSession_CanaryFailureIsAgentNotFound(t *testing.T) {
	f := newFakeCLI(t)
	f.Remove(t, "version")
	f.Set(t, "version.stderr", "node: not found\n")
	a := newFakeAdapter(t, f, nil)
	_, err := a.StartSession(context.Background(), agent.StartParams{Workspace: t.TempDir(), Env: byok()})
	if agent.KindOf(err) != agent.ErrNotFound || !strings.Contains(err.Error(), "--version") ||
		!strings.Contains(err.Error(), "node: not found") || !strings.Contains(err.Error(), "Node.js") {
		t.Fatalf("StartSession = %v; want agent_not_found naming the canary, its stderr and Node.js", err)
	}
}

func TestStartSession_AuthenticationPreflight(t *testing.T) {
	ghOK := filepath.Join(t.TempDir(), "gh")
	if err := os.WriteFile(ghOK, []byte("#!/bin/sh\n[ \"$1 $2\" = 'auth status' ] && [ \"$GH_CONFIG_DIR\" = /cfg ]\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		env  []string
		gh   string
		ok   bool
		note string // notification on the first turn
	}{
		{"COPILOT_GITHUB_TOKEN", []string{"COPILOT_GITHUB_TOKEN=github_pat_1"}, "", true, ""},
		{"GH_TOKEN", []string{"GH_TOKEN=gho_1"}, "", true, ""},
		{"GITHUB_TOKEN", []string{"GITHUB_TOKEN=ghu_1"}, "", true, ""},
		{"BYOK provider", []string{"COPILOT_PROVIDER_BASE_URL=http://localhost:11434/v1"}, "", true, ""},
		{"gh login", []string{"GH_CONFIG_DIR=/cfg"}, ghOK, true, "gh auth status succeeded"},
		{"gh not logged in", []string{"GH_CONFIG_DIR=/elsewhere"}, ghOK, false, ""},
		{"nothing", nil, "", false, ""},
		{"blank variables", []string{"GH_TOKEN=  ", "COPILOT_PROVIDER_BASE_URL="}, "", false, ""},
		{"only a classic PAT", []string{"GITHUB_TOKEN=ghp_classic"}, "", true, "GITHUB_TOKEN: classic personal access token"},
		{"a classic PAT beside a good token", []string{"GITHUB_TOKEN=ghp_classic", "GH_TOKEN=github_pat_1"}, "", true, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeCLI(t)
			a := newFakeAdapter(t, f, nil)
			if c.gh != "" {
				dialectOf(a).gh = c.gh
			}
			s, err := a.StartSession(context.Background(), agent.StartParams{Workspace: t.TempDir(), Env: append([]string{"PATH=/usr/bin:/bin", "HOME=" + cliCache}, c.env...)})
			if !c.ok {
				for _, v := range []string{"COPILOT_GITHUB_TOKEN, GH_TOKEN or GITHUB_TOKEN", "gh auth login", "COPILOT_PROVIDER_BASE_URL"} {
					if agent.KindOf(err) != agent.ErrNotFound || !strings.Contains(err.Error(), v) {
						t.Fatalf("StartSession = %v, want agent_not_found naming %s", err, v)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer a.StopSession(context.Background(), s)
			f.Run(t, 1, 0, resultLine("s1", 0, 1))
			f.Run(t, 2, 0, resultLine("s1", 0, 1))
			var notes []string
			for _, e := range runTurn(t, a, s, 1, "p").Of(agent.EventNotification) {
				notes = append(notes, e.Message)
			}
			if c.note == "" && len(notes) > 0 || c.note != "" && (len(notes) != 1 || !strings.Contains(notes[0], c.note)) {
				t.Errorf("notifications = %q, want %q", notes, c.note)
			}
			if o2 := runTurn(t, a, s, 2, "p"); len(o2.Of(agent.EventNotification)) != 0 {
				t.Errorf("the note was repeated on turn 2")
			}
		})
	}
}

// TestRunTurn_ResultDecides pins how the result event maps to a turn's outcome: the
// spec's exit code table and what the pinned CLI added to it.
func TestRunTurn_ResultDecides(t *testing.T) {
	cases := []struct {
		name   string
		code   int
		lines  []string
		reason agent.EventType
		kind   agent.ErrorKind
		msg    string
	}{
		{"exit 0 without a result", 0, []string{message}, agent.EventTurnCompleted, "", "without a result event"},
		{"exit 0 with result exitCode 0", 0, []string{message, resultLine("s1", 0, 5)}, agent.EventTurnCompleted, "", "turn completed"},
		{"exit 0 with result exitCode 1", 0, []string{resultLine("s1", 1, 5)}, agent.EventTurnFailed, agent.ErrTurnFailed, "result exit code 1"},
		{"non-zero without a result", 3, []string{message}, agent.EventTurnFailed, agent.ErrPortExit, "exit status 3; stderr: boom"},
		{"non-zero with a failed result", 1, []string{`{"type":"session.error","data":{"errorType":"query","message":"500 boom","statusCode":500}}`,
			resultLine("s1", 1, 5)}, agent.EventTurnFailed, agent.ErrTurnFailed, "query: 500 boom (status 500)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeCLI(t)
			f.Run(t, 1, c.code, c.lines...)
			f.Set(t, "stderr.1", "boom\n")
			a := newFakeAdapter(t, f, nil)
			o := runTurn(t, a, startFake(t, a, agent.StartParams{}), 1, "p")
			if o.Result.ExitReason != c.reason || agent.KindOf(o.Err) != c.kind {
				t.Fatalf("turn = %s, %v; want %s with kind %q", o.Result.ExitReason, o.Err, c.reason, c.kind)
			}
			if last := o.Last(); last.Type != c.reason || !strings.Contains(last.Message, c.msg) {
				t.Errorf("terminal event = %s %q, want %s containing %q", last.Type, last.Message, c.reason, c.msg)
			}
			if o.Events[0].Type != agent.EventSessionStarted {
				t.Errorf("first event = %s, want session_started", o.Events[0].Type)
			}
		})
	}
}

func TestRunTurn_SessionIDFromResultThenResumeOrContinue(t *testing.T) {
	f := newFakeCLI(t)
	f.Run(t, 1, 0, message) // no result: the id stays unknown
	f.Run(t, 2, 0, message, resultLine("cli-session-1", 0, 5))
	f.Run(t, 3, 0, message, resultLine("cli-session-1", 0, 9))
	a := newFakeAdapter(t, f, nil)
	s := startFake(t, a, agent.StartParams{})

	one := runTurn(t, a, s, 1, "p1")
	if s.ID != "" || one.Result.SessionID != "" {
		t.Fatalf("session after a turn without result = %q", s.ID)
	}
	two := runTurn(t, a, s, 2, "p2")
	if s.ID != "cli-session-1" || two.Result.SessionID != "cli-session-1" {
		t.Fatalf("session after turn 2 = %q, want the result's", s.ID)
	}
	if last := two.Last(); last.SessionID != "cli-session-1" {
		t.Errorf("terminal event session = %q", last.SessionID)
	}
	runTurn(t, a, s, 3, "p3")

	argvs := f.Argvs(t)
	if slices.Contains(argvs[0], "--resume") || slices.Contains(argvs[0], "--continue") {
		t.Errorf("turn 1 argv %q: want neither --resume nor --continue", argvs[0])
	}
	if !slices.Contains(argvs[1], "--continue") || slices.Contains(argvs[1], "--resume") {
		t.Errorf("turn 2 argv %q: want --continue (no id was ever captured)", argvs[1])
	}
	if v, _ := clis.FlagValue(argvs[2], "--resume"); v != "cli-session-1" || slices.Contains(argvs[2], "--continue") {
		t.Errorf("turn 3 argv %q: want --resume cli-session-1", argvs[2])
	}
}

func TestRunTurn_ResumedSessionResumesFromTheFirstTurn(t *testing.T) {
	f := newFakeCLI(t)
	f.Run(t, 1, 0, resultLine("earlier", 0, 5))
	a := newFakeAdapter(t, f, nil)
	s := startFake(t, a, agent.StartParams{ResumeSessionID: "earlier"})
	if s.ID != "earlier" {
		t.Fatalf("session id = %q", s.ID)
	}
	o := runTurn(t, a, s, 1, "p")
	if v, _ := clis.FlagValue(f.Argvs(t)[0], "--resume"); v != "earlier" {
		t.Errorf("argv %q: want --resume earlier", f.Argvs(t)[0])
	}
	if o.Events[0].SessionID != "earlier" || !strings.Contains(o.Events[0].Message, "resuming session earlier") {
		t.Errorf("session_started = %+v", o.Events[0])
	}
}

// TestRunTurn_UsageFromTheUsageFile: the pinned CLI reports tokens only in its usage
// file, as totals of the CLI session; each turn counts its own share.
func TestRunTurn_UsageFromTheUsageFile(t *testing.T) {
	f := newFakeCLI(t)
	f.Run(t, 1, 0, message, resultLine("s1", 0, 100))
	usage(t, f, 1, 15)
	f.Run(t, 2, 0, message, resultLine("s1", 0, 130))
	usage(t, f, 2, 24)
	f.Run(t, 3, 0, `{"type":"assistant.message","data":{"messageId":"m","content":"x","outputTokens":50}}`, resultLine("s1", 0, 130))
	usage(t, f, 3, 30) // the stream says more than the file: keep the stream's
	a := newFakeAdapter(t, f, nil)
	s := startFake(t, a, agent.StartParams{})
	st := s.Internal.(*cli.Session[state])
	if st.State.usageDir == "" {
		t.Fatal("no usage file directory although the CLI knows --usage-output-file")
	}

	want := []struct {
		usage agent.Usage
		api   int64
	}{{agent.Usage{Output: 15, Total: 15}, 100}, {agent.Usage{Output: 24, Total: 24}, 30}, {agent.Usage{Output: 74, Total: 74}, 0}}
	for i, w := range want {
		o := runTurn(t, a, s, i+1, "p")
		if o.Result.Usage != w.usage {
			t.Errorf("turn %d usage = %+v, want %+v", i+1, o.Result.Usage, w.usage)
		}
		if last := o.Last(); last.Usage != w.usage || last.APIDurationMS != w.api {
			t.Errorf("turn %d terminal event: usage %+v api %d ms; want %+v, %d ms", i+1, last.Usage, last.APIDurationMS, w.usage, w.api)
		}
		u := o.Of(agent.EventTokenUsage)
		if len(u) == 0 || u[len(u)-1].Usage != w.usage || u[len(u)-1].Model != "claude-sonnet-4-5" {
			t.Errorf("turn %d token_usage = %+v", i+1, u)
		}
	}
	for i, argv := range f.Argvs(t) {
		v, ok := clis.FlagValue(argv, "--usage-output-file")
		if !ok || !strings.HasPrefix(v, st.State.usageDir+string(os.PathSeparator)) {
			t.Errorf("turn %d argv %q: want --usage-output-file in %s", i+1, argv, st.State.usageDir)
		}
	}
	a.StopSession(context.Background(), s)
	if _, err := os.Stat(st.State.usageDir); !os.IsNotExist(err) {
		t.Errorf("usage directory %s left after StopSession: %v", st.State.usageDir, err)
	}
}

// TestRunTurn_ResumedSessionsFirstTurnDoesNotRecountTheEarlierRun: the usage file of a
// session resumed from an earlier run includes that run's tokens, which were counted
// then.
func TestRunTurn_ResumedSessionsFirstTurnDoesNotRecountTheEarlierRun(t *testing.T) {
	f := newFakeCLI(t)
	f.Run(t, 1, 0, message, resultLine("earlier", 0, 5000))
	usage(t, f, 1, 1000)
	f.Run(t, 2, 0, message, resultLine("earlier", 0, 5040))
	usage(t, f, 2, 1012)
	a := newFakeAdapter(t, f, nil)
	s := startFake(t, a, agent.StartParams{ResumeSessionID: "earlier"})
	one := runTurn(t, a, s, 1, "p")
	two := runTurn(t, a, s, 2, "p")
	if one.Result.Usage.Output != 0 || one.Last().APIDurationMS != 0 {
		t.Errorf("turn 1: %+v, api %d; want nothing from the CLI session's totals", one.Result.Usage, one.Last().APIDurationMS)
	}
	if two.Result.Usage.Output != 12 || two.Last().APIDurationMS != 40 {
		t.Errorf("turn 2: %+v, api %d; want 12 tokens and 40 ms", two.Result.Usage, two.Last().APIDurationMS)
	}
}

func TestRunTurn_NoUsageFileFlagForACLIWithoutIt(t *testing.T) {
	f := newFakeCLI(t)
	f.Set(t, "help", "usage: copilot [options]\n")
	f.Run(t, 1, 0, `{"type":"assistant.message","data":{"messageId":"m","content":"x","outputTokens":6}}`, resultLine("s1", 0, 5))
	a := newFakeAdapter(t, f, nil)
	o := runTurn(t, a, startFake(t, a, agent.StartParams{}), 1, "p")
	if _, ok := clis.FlagValue(f.Argvs(t)[0], "--usage-output-file"); ok {
		t.Errorf("argv %q: the CLI does not know --usage-output-file", f.Argvs(t)[0])
	}
	if o.Result.Usage != (agent.Usage{Output: 6, Total: 6}) {
		t.Errorf("usage = %+v, want the stream's 6 output tokens", o.Result.Usage)
	}
}

// TestRunTurn_UsageFileCountsAsARequestOnlyWithoutStreamedUsage: the usage file's
// totals are the turn's one API request when the stream reported no tokens (the pinned
// CLI), and only revise the requests already counted when it did (older CLIs).
func TestRunTurn_UsageFileCountsAsARequestOnlyWithoutStreamedUsage(t *testing.T) {
	f := newFakeCLI(t)
	f.Run(t, 1, 0, message, resultLine("s1", 0, 100))
	usage(t, f, 1, 15)
	f.Run(t, 2, 0, `{"type":"assistant.message","data":{"messageId":"m","content":"x","outputTokens":5}}`, resultLine("s1", 0, 130))
	usage(t, f, 2, 40)
	a := newFakeAdapter(t, f, nil)
	s := startFake(t, a, agent.StartParams{})
	for i, want := range []struct {
		requests int
		output   int64
	}{{1, 15}, {1, 40}} {
		o := runTurn(t, a, s, i+1, "p")
		requests := 0
		for _, e := range o.Of(agent.EventTokenUsage) {
			if !e.Revision {
				requests++
			}
		}
		if requests != want.requests || o.Result.Usage.Output != want.output {
			t.Errorf("turn %d: %d API requests, %d output tokens; want %d, %d (events %+v)",
				i+1, requests, o.Result.Usage.Output, want.requests, want.output, o.Of(agent.EventTokenUsage))
		}
	}
}

// A prompt goes as --prompt=<prompt>, so that one starting with '-' is no flag of its
// own; one too long for an argument goes to standard input instead.
func TestRunTurn_LargePromptGoesToStandardInput(t *testing.T) {
	f := newFakeCLI(t)
	a := newFakeAdapter(t, f, nil)
	s := startFake(t, a, agent.StartParams{})
	small := "- a list item\n'quoted' $(not run)"
	big := strings.Repeat("x", maxArg) + "END"
	agenttest.MustComplete(t, runTurn(t, a, s, 1, small))
	agenttest.MustComplete(t, runTurn(t, a, s, 2, big))
	argvs := f.Argvs(t)
	if v, ok := clis.FlagValue(argvs[0], "--prompt"); !ok || v != small || f.Stdin(t, 1) != "" {
		t.Errorf("turn 1: argv %q, stdin %q; want --prompt=<prompt>", argvs[0], f.Stdin(t, 1))
	}
	if _, ok := clis.FlagValue(argvs[1], "--prompt"); ok || f.Stdin(t, 2) != big {
		t.Errorf("turn 2: the prompt must arrive on stdin (got %d bytes) and not in argv", len(f.Stdin(t, 2)))
	}
}

func TestStartSession_MCPConfigs(t *testing.T) {
	cases := []struct {
		name      string
		operator  string
		generated string
		want      []string
	}{
		{"none", "", "", nil},
		{"the operator's alone", "/ops/mcp.json", "", []string{"@/ops/mcp.json"}},
		{"the generated file, which holds the operator's servers", "/ops/mcp.json", "/ws/.sortie/mcp.json", []string{"@/ws/.sortie/mcp.json"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeCLI(t)
			a := newFakeAdapter(t, f, map[string]any{"mcp_config": c.operator})
			runTurn(t, a, startFake(t, a, agent.StartParams{MCPConfigPath: c.generated}), 1, "p")
			if got := clis.FlagValues(f.Argvs(t)[0], "--additional-mcp-config"); !slices.Equal(got, c.want) {
				t.Errorf("--additional-mcp-config values = %q, want %q", got, c.want)
			}
		})
	}
}
