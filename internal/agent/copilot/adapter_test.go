package copilot

// Adapter tests against a fake CLI: a shell script that answers --version and --help,
// logs its argv, copies a prepared usage file to --usage-output-file, prints a prepared
// transcript and exits with a prepared status, one set of files per turn.

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
	"sortie/internal/agent/cli"
	"sortie/internal/agent/proc"
	"sortie/internal/agent/proc/proctest"
)

const fakeScript = `#!/bin/sh
dir=%s
case "$1" in
--version) [ -f "$dir/version" ] || { echo "node: not found" >&2; exit 127; }; cat "$dir/version"; exit 0;;
--help) cat "$dir/help"; exit 0;;
esac
printf '%%s\0' "$@" >> "$dir/argv"; printf '\001\0' >> "$dir/argv"
usage=
while [ $# -gt 0 ]; do case "$1" in --usage-output-file) usage=$2; shift;; esac; shift; done
n=$(cat "$dir/n" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "$dir/n"
cat > "$dir/stdin.$n"
[ -n "$usage" ] && [ -f "$dir/usage.$n" ] && cp "$dir/usage.$n" "$usage"
[ -f "$dir/out.$n" ] && cat "$dir/out.$n"
[ -f "$dir/stderr.$n" ] && cat "$dir/stderr.$n" >&2
[ -f "$dir/block.$n" ] && exec sleep 600
[ -f "$dir/kill.$n" ] && kill -KILL $$
exit $(cat "$dir/code.$n" 2>/dev/null || echo 0)
`

// fakeCLI is a fake copilot and the files that script its turns.
type fakeCLI struct {
	dir  string
	path string
}

func newFakeCLI(t *testing.T) *fakeCLI {
	t.Helper()
	f := &fakeCLI{dir: t.TempDir()}
	f.path = filepath.Join(f.dir, "copilot")
	writeFile(t, f.path, fmt.Sprintf(fakeScript, shellQuote(f.dir)))
	os.Chmod(f.path, 0o755)
	writeFile(t, filepath.Join(f.dir, "version"), "GitHub Copilot CLI 1.0.102.\nRun 'copilot update' to check for updates.\n")
	writeFile(t, filepath.Join(f.dir, "help"), "  --usage-output-file <file>\n")
	return f
}

// turn scripts the CLI's nth run: its stdout lines and exit status.
func (f *fakeCLI) turn(t *testing.T, n int, code int, lines ...string) {
	t.Helper()
	writeFile(t, filepath.Join(f.dir, "out."+strconv.Itoa(n)), strings.Join(lines, "\n")+"\n")
	writeFile(t, filepath.Join(f.dir, "code."+strconv.Itoa(n)), strconv.Itoa(code))
}

// file writes the nth run's file of that kind: usage, stderr, block, kill.
func (f *fakeCLI) file(t *testing.T, kind string, n int, body string) {
	t.Helper()
	writeFile(t, filepath.Join(f.dir, kind+"."+strconv.Itoa(n)), body)
}

func (f *fakeCLI) argvs(t *testing.T) [][]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(f.dir, "argv"))
	if err != nil {
		t.Fatal(err)
	}
	var out [][]string
	var cur []string
	for _, a := range strings.Split(strings.TrimSuffix(string(data), "\x00"), "\x00") {
		if a == "\x01" {
			out = append(out, cur)
			cur = nil
			continue
		}
		cur = append(cur, a)
	}
	return out
}

func (f *fakeCLI) stdin(t *testing.T, n int) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(f.dir, "stdin."+strconv.Itoa(n)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// byok is an agent environment whose credential is a BYOK provider.
var byok = []string{"PATH=/usr/bin:/bin", "COPILOT_PROVIDER_BASE_URL=http://127.0.0.1:9"}

func resultLine(session string, exitCode int, apiMS int64) string {
	return fmt.Sprintf(`{"type":"result","timestamp":"2026-01-01T00:00:00Z","sessionId":%q,"exitCode":%d,"usage":{"premiumRequests":0,"totalApiDurationMs":%d,"sessionDurationMs":9}}`,
		session, exitCode, apiMS)
}

func usageJSON(output int64) string {
	return fmt.Sprintf(`{"modelMetrics":{"claude-sonnet-4-5":{"usage":{"inputTokens":900,"outputTokens":%d}}},"currentModel":"claude-sonnet-4-5"}`, output)
}

const message = `{"type":"assistant.message","data":{"messageId":"m","content":"working","toolRequests":[]}}`

func newFakeAdapter(t *testing.T, f *fakeCLI, opts map[string]any) *adapter {
	t.Helper()
	a, err := New(agent.Config{Kind: Kind, Command: f.path, Options: opts})
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
		p.Env = byok
	}
	s, err := a.StartSession(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.StopSession(context.Background(), s) })
	return s
}

func runTurn(t *testing.T, a *adapter, s *agent.Session, n int, prompt string) turnOutcome {
	t.Helper()
	return runTurnCtx(t, context.Background(), a, s, n, prompt)
}

func runTurnCtx(t *testing.T, ctx context.Context, a *adapter, s *agent.Session, n int, prompt string) turnOutcome {
	t.Helper()
	var o turnOutcome
	o.res, o.err = a.RunTurn(ctx, s, agent.TurnParams{Prompt: prompt, TurnNumber: n,
		OnEvent: func(e agent.Event) { o.events = append(o.events, e) }})
	return o
}

func TestStartSession_Workspace(t *testing.T) {
	f := newFakeCLI(t)
	a := newFakeAdapter(t, f, nil)
	file := filepath.Join(t.TempDir(), "file")
	writeFile(t, file, "")
	for _, ws := range []string{"", "relative/dir", filepath.Join(t.TempDir(), "missing"), file} {
		_, err := a.StartSession(context.Background(), agent.StartParams{Workspace: ws, Env: byok})
		if agent.KindOf(err) != agent.ErrInvalidWorkspace {
			t.Errorf("workspace %q: %v, want invalid_workspace_cwd", ws, err)
		}
	}
}

func TestStartSession_CanaryFailureIsAgentNotFound(t *testing.T) {
	f := newFakeCLI(t)
	os.Remove(filepath.Join(f.dir, "version"))
	a := newFakeAdapter(t, f, nil)
	_, err := a.StartSession(context.Background(), agent.StartParams{Workspace: t.TempDir(), Env: byok})
	if agent.KindOf(err) != agent.ErrNotFound || !strings.Contains(err.Error(), "--version") ||
		!strings.Contains(err.Error(), "node: not found") || !strings.Contains(err.Error(), "Node.js") {
		t.Fatalf("StartSession = %v; want agent_not_found naming the canary, its stderr and Node.js", err)
	}
	if _, err := a.Version(context.Background()); agent.KindOf(err) != agent.ErrNotFound {
		t.Errorf("Version = %v, want agent_not_found", err)
	}
}

func TestVersion_FirstLineWithoutThePeriod(t *testing.T) {
	f := newFakeCLI(t)
	v, err := newFakeAdapter(t, f, nil).Version(context.Background())
	if err != nil || v != "GitHub Copilot CLI 1.0.102" {
		t.Errorf("Version = %q, %v", v, err)
	}
}

func TestStartSession_AuthenticationPreflight(t *testing.T) {
	ghOK := filepath.Join(t.TempDir(), "gh")
	writeFile(t, ghOK, "#!/bin/sh\n[ \"$1 $2\" = 'auth status' ] && [ \"$GH_CONFIG_DIR\" = /cfg ]\n")
	os.Chmod(ghOK, 0o755)
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
				if agent.KindOf(err) != agent.ErrNotFound || !strings.Contains(err.Error(), "COPILOT_GITHUB_TOKEN, GH_TOKEN or GITHUB_TOKEN") {
					t.Fatalf("StartSession = %v, want agent_not_found listing the variables", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer a.StopSession(context.Background(), s)
			f.turn(t, 1, 0, resultLine("s1", 0, 1))
			f.turn(t, 2, 0, resultLine("s1", 0, 1))
			o := runTurn(t, a, s, 1, "p")
			var notes []string
			for _, e := range o.of(agent.EventNotification) {
				notes = append(notes, e.Message)
			}
			if c.note == "" && len(notes) > 0 || c.note != "" && (len(notes) != 1 || !strings.Contains(notes[0], c.note)) {
				t.Errorf("notifications = %q, want %q", notes, c.note)
			}
			if o2 := runTurn(t, a, s, 2, "p"); len(o2.of(agent.EventNotification)) != 0 {
				t.Errorf("the note was repeated on turn 2")
			}
		})
	}
}

// TestRunTurn_ExitMapping pins the spec's exit code table and what the pinned CLI
// added to it.
func TestRunTurn_ExitMapping(t *testing.T) {
	cases := []struct {
		name   string
		code   int
		lines  []string
		kill   bool
		reason agent.EventType
		kind   agent.ErrorKind
		msg    string
	}{
		{"exit 0 without a result", 0, []string{message}, false, agent.EventTurnCompleted, "", "without a result event"},
		{"exit 0 with result exitCode 0", 0, []string{message, resultLine("s1", 0, 5)}, false, agent.EventTurnCompleted, "", "turn completed"},
		{"exit 0 with result exitCode 1", 0, []string{resultLine("s1", 1, 5)}, false, agent.EventTurnFailed, agent.ErrTurnFailed, "result exit code 1"},
		{"exit 127", 127, nil, false, agent.EventTurnFailed, agent.ErrNotFound, "the CLI was not found"},
		{"non-zero without a result", 3, []string{message}, false, agent.EventTurnFailed, agent.ErrPortExit, "exit status 3; stderr: boom"},
		{"non-zero with a failed result", 1, []string{`{"type":"session.error","data":{"errorType":"query","message":"500 boom","statusCode":500}}`,
			resultLine("s1", 1, 5)}, false, agent.EventTurnFailed, agent.ErrTurnFailed, "query: 500 boom (status 500)"},
		{"killed by a signal", 0, []string{message}, true, agent.EventTurnCancelled, agent.ErrTurnCancelled, "killed by signal"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeCLI(t)
			f.turn(t, 1, c.code, c.lines...)
			f.file(t, "stderr", 1, "boom\n")
			if c.kill {
				f.file(t, "kill", 1, "")
			}
			a := newFakeAdapter(t, f, nil)
			s := startFake(t, a, agent.StartParams{})
			o := runTurn(t, a, s, 1, "p")
			if o.res.ExitReason != c.reason || agent.KindOf(o.err) != c.kind {
				t.Fatalf("turn = %s, %v; want %s with kind %q", o.res.ExitReason, o.err, c.reason, c.kind)
			}
			last := o.events[len(o.events)-1]
			if last.Type != c.reason || !strings.Contains(last.Message, c.msg) {
				t.Errorf("terminal event = %s %q, want %s containing %q", last.Type, last.Message, c.reason, c.msg)
			}
			if o.events[0].Type != agent.EventSessionStarted {
				t.Errorf("first event = %s, want session_started", o.events[0].Type)
			}
		})
	}
}

func TestRunTurn_SessionIDFromResultThenResumeOrContinue(t *testing.T) {
	f := newFakeCLI(t)
	f.turn(t, 1, 0, message) // no result: the id stays unknown
	f.turn(t, 2, 0, message, resultLine("cli-session-1", 0, 5))
	f.turn(t, 3, 0, message, resultLine("cli-session-1", 0, 9))
	a := newFakeAdapter(t, f, nil)
	s := startFake(t, a, agent.StartParams{})

	one := runTurn(t, a, s, 1, "p1")
	if s.ID != "" || one.res.SessionID != "" {
		t.Fatalf("session after a turn without result = %q", s.ID)
	}
	two := runTurn(t, a, s, 2, "p2")
	if s.ID != "cli-session-1" || two.res.SessionID != "cli-session-1" {
		t.Fatalf("session after turn 2 = %q, want the result's", s.ID)
	}
	if last := two.events[len(two.events)-1]; last.SessionID != "cli-session-1" {
		t.Errorf("terminal event session = %q", last.SessionID)
	}
	runTurn(t, a, s, 3, "p3")

	argvs := f.argvs(t)
	has := func(argv []string, flag string) bool { return slices.Contains(argv, flag) }
	if has(argvs[0], "--resume") || has(argvs[0], "--continue") {
		t.Errorf("turn 1 argv %q: want neither --resume nor --continue", argvs[0])
	}
	if !has(argvs[1], "--continue") || has(argvs[1], "--resume") {
		t.Errorf("turn 2 argv %q: want --continue (no id was ever captured)", argvs[1])
	}
	if v, _ := flagValue(argvs[2], "--resume"); v != "cli-session-1" || has(argvs[2], "--continue") {
		t.Errorf("turn 3 argv %q: want --resume cli-session-1", argvs[2])
	}
}

func TestRunTurn_ResumedSessionResumesFromTheFirstTurn(t *testing.T) {
	f := newFakeCLI(t)
	f.turn(t, 1, 0, resultLine("earlier", 0, 5))
	a := newFakeAdapter(t, f, nil)
	s := startFake(t, a, agent.StartParams{ResumeSessionID: "earlier"})
	if s.ID != "earlier" {
		t.Fatalf("session id = %q", s.ID)
	}
	o := runTurn(t, a, s, 1, "p")
	if v, _ := flagValue(f.argvs(t)[0], "--resume"); v != "earlier" {
		t.Errorf("argv %q: want --resume earlier", f.argvs(t)[0])
	}
	if o.events[0].SessionID != "earlier" || !strings.Contains(o.events[0].Message, "resuming session earlier") {
		t.Errorf("session_started = %+v", o.events[0])
	}
}

// TestRunTurn_UsageFromTheUsageFile: the pinned CLI reports tokens only in its usage
// file, as totals of the CLI session; each turn counts its own share.
func TestRunTurn_UsageFromTheUsageFile(t *testing.T) {
	f := newFakeCLI(t)
	f.turn(t, 1, 0, message, resultLine("s1", 0, 100))
	f.file(t, "usage", 1, usageJSON(15))
	f.turn(t, 2, 0, message, resultLine("s1", 0, 130))
	f.file(t, "usage", 2, usageJSON(24))
	f.turn(t, 3, 0, `{"type":"assistant.message","data":{"messageId":"m","content":"x","outputTokens":50}}`, resultLine("s1", 0, 130))
	f.file(t, "usage", 3, usageJSON(30)) // the stream says more than the file: keep the stream's
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
		if o.res.Usage != w.usage {
			t.Errorf("turn %d usage = %+v, want %+v", i+1, o.res.Usage, w.usage)
		}
		last := o.events[len(o.events)-1]
		if last.Usage != w.usage || last.APIDurationMS != w.api {
			t.Errorf("turn %d terminal event: usage %+v api %d ms; want %+v, %d ms", i+1, last.Usage, last.APIDurationMS, w.usage, w.api)
		}
		usage := o.of(agent.EventTokenUsage)
		if len(usage) == 0 || usage[len(usage)-1].Usage != w.usage || usage[len(usage)-1].Model != "claude-sonnet-4-5" {
			t.Errorf("turn %d token_usage = %+v", i+1, usage)
		}
	}
	for i, argv := range f.argvs(t) {
		v, ok := flagValue(argv, "--usage-output-file")
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
	f.turn(t, 1, 0, message, resultLine("earlier", 0, 5000))
	f.file(t, "usage", 1, usageJSON(1000))
	f.turn(t, 2, 0, message, resultLine("earlier", 0, 5040))
	f.file(t, "usage", 2, usageJSON(1012))
	a := newFakeAdapter(t, f, nil)
	s := startFake(t, a, agent.StartParams{ResumeSessionID: "earlier"})
	one := runTurn(t, a, s, 1, "p")
	two := runTurn(t, a, s, 2, "p")
	if one.res.Usage.Output != 0 || one.events[len(one.events)-1].APIDurationMS != 0 {
		t.Errorf("turn 1: %+v, api %d; want nothing from the CLI session's totals", one.res.Usage, one.events[len(one.events)-1].APIDurationMS)
	}
	if two.res.Usage.Output != 12 || two.events[len(two.events)-1].APIDurationMS != 40 {
		t.Errorf("turn 2: %+v, api %d; want 12 tokens and 40 ms", two.res.Usage, two.events[len(two.events)-1].APIDurationMS)
	}
}

func TestRunTurn_NoUsageFileFlagForACLIWithoutIt(t *testing.T) {
	f := newFakeCLI(t)
	writeFile(t, filepath.Join(f.dir, "help"), "usage: copilot [options]\n")
	f.turn(t, 1, 0, `{"type":"assistant.message","data":{"messageId":"m","content":"x","outputTokens":6}}`, resultLine("s1", 0, 5))
	a := newFakeAdapter(t, f, nil)
	s := startFake(t, a, agent.StartParams{})
	o := runTurn(t, a, s, 1, "p")
	if _, ok := flagValue(f.argvs(t)[0], "--usage-output-file"); ok {
		t.Errorf("argv %q: the CLI does not know --usage-output-file", f.argvs(t)[0])
	}
	if o.res.Usage != (agent.Usage{Output: 6, Total: 6}) {
		t.Errorf("usage = %+v, want the stream's 6 output tokens", o.res.Usage)
	}
}

func TestRunTurn_LargePromptGoesToStandardInput(t *testing.T) {
	f := newFakeCLI(t)
	a := newFakeAdapter(t, f, nil)
	s := startFake(t, a, agent.StartParams{})
	small := "- a list item\n'quoted' $(not run)"
	big := strings.Repeat("x", maxArg) + "END"
	mustComplete(t, runTurn(t, a, s, 1, small))
	mustComplete(t, runTurn(t, a, s, 2, big))
	argvs := f.argvs(t)
	if v, ok := flagValue(argvs[0], "--prompt"); !ok || v != small || f.stdin(t, 1) != "" {
		t.Errorf("turn 1: argv %q, stdin %q; want --prompt=<prompt>", argvs[0], f.stdin(t, 1))
	}
	if _, ok := flagValue(argvs[1], "--prompt"); ok || f.stdin(t, 2) != big {
		t.Errorf("turn 2: the prompt must arrive on stdin (got %d bytes) and not in argv", len(f.stdin(t, 2)))
	}
}

func TestRunTurn_LongLines(t *testing.T) {
	content := strings.Repeat("y", 10<<20-200) // the whole line stays under 10 MB
	big := fmt.Sprintf(`{"type":"assistant.message","data":{"messageId":"m","content":%q,"toolRequests":[]}}`, content)
	if len(big) > proc.DefaultMaxLine {
		t.Fatalf("line of %d bytes is over the limit", len(big))
	}
	t.Run("a line of almost 10 MB is read", func(t *testing.T) {
		f := newFakeCLI(t)
		f.turn(t, 1, 0, big, resultLine("s1", 0, 5))
		a := newFakeAdapter(t, f, nil)
		s := startFake(t, a, agent.StartParams{})
		o := runTurn(t, a, s, 1, "p")
		mustComplete(t, o)
		if n := o.of(agent.EventNotification); len(n) != 1 || utf8Len(n[0].Message) != maxSummary+1 {
			t.Errorf("notifications = %d, want one with the truncated content", len(n))
		}
	})
	t.Run("a longer line fails the turn and stops the CLI", func(t *testing.T) {
		f := newFakeCLI(t)
		f.turn(t, 1, 0, big+strings.Repeat(" ", 300), resultLine("s1", 0, 5))
		f.file(t, "block", 1, "") // the CLI would go on; the adapter must stop it
		a := newFakeAdapter(t, f, nil)
		s := startFake(t, a, agent.StartParams{})
		o := runTurn(t, a, s, 1, "p")
		if o.res.ExitReason != agent.EventTurnFailed || agent.KindOf(o.err) != agent.ErrPortExit ||
			!strings.Contains(o.err.Error(), "line too long") {
			t.Fatalf("turn = %s, %v; want turn_failed with port_exit", o.res.ExitReason, o.err)
		}
		proctest.RequireGroupGone(t, o.res.PID)
	})
}

func utf8Len(s string) int { return len([]rune(s)) }

func TestRunTurn_CancelStopsTheProcessGroup(t *testing.T) {
	f := newFakeCLI(t)
	f.turn(t, 1, 0, message)
	f.file(t, "block", 1, "")
	a := newFakeAdapter(t, f, nil)
	s := startFake(t, a, agent.StartParams{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var o turnOutcome
	o.res, o.err = a.RunTurn(ctx, s, agent.TurnParams{Prompt: "p", OnEvent: func(e agent.Event) {
		o.events = append(o.events, e)
		if e.Type == agent.EventNotification {
			cancel() // the CLI is running and has printed: cancel mid-turn
		}
	}})
	if o.res.ExitReason != agent.EventTurnCancelled || agent.KindOf(o.err) != agent.ErrTurnCancelled {
		t.Fatalf("turn = %s, %v; want turn_cancelled", o.res.ExitReason, o.err)
	}
	proctest.RequireGroupGone(t, o.res.PID)
	if s.PID != 0 {
		t.Errorf("session pid = %d after the turn", s.PID)
	}
}

func TestStopSession_CancelsTheTurnAndLaterTurns(t *testing.T) {
	f := newFakeCLI(t)
	// The CLI answers SIGTERM with a clean exit and a result: still a cancelled turn.
	writeFile(t, f.path, strings.Replace(fmt.Sprintf(fakeScript, shellQuote(f.dir)),
		`[ -f "$dir/block.$n" ] && exec sleep 600`,
		`[ -f "$dir/block.$n" ] && { trap 'echo '"'"'`+resultLine("s1", 0, 5)+`'"'"'; exit 0' TERM; sleep 600 & wait $!; }`, 1))
	f.turn(t, 1, 0, message)
	f.file(t, "block", 1, "")
	a := newFakeAdapter(t, f, nil)
	s := startFake(t, a, agent.StartParams{})
	var o turnOutcome
	o.res, o.err = a.RunTurn(context.Background(), s, agent.TurnParams{Prompt: "p", OnEvent: func(e agent.Event) {
		o.events = append(o.events, e)
		if e.Type == agent.EventNotification && e.Message == "working" {
			go a.StopSession(context.Background(), s)
		}
	}})
	if o.res.ExitReason != agent.EventTurnCancelled || agent.KindOf(o.err) != agent.ErrTurnCancelled {
		t.Fatalf("turn = %s, %v; want turn_cancelled", o.res.ExitReason, o.err)
	}
	proctest.RequireGroupGone(t, o.res.PID)
	later := runTurn(t, a, s, 2, "p")
	if agent.KindOf(later.err) != agent.ErrTurnCancelled {
		t.Errorf("turn after StopSession = %v, want turn_cancelled", later.err)
	}
	if err := a.StopSession(context.Background(), s); err != nil {
		t.Errorf("second StopSession = %v", err)
	}
}

func TestRunTurn_OneTurnAtATime(t *testing.T) {
	f := newFakeCLI(t)
	f.turn(t, 1, 0, message)
	f.file(t, "block", 1, "")
	a := newFakeAdapter(t, f, nil)
	s := startFake(t, a, agent.StartParams{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var second turnOutcome
	a.RunTurn(ctx, s, agent.TurnParams{Prompt: "p", OnEvent: func(e agent.Event) {
		if e.Type == agent.EventNotification && second.res.ExitReason == "" {
			second = runTurn(t, a, s, 2, "p")
			cancel()
		}
	}})
	if agent.KindOf(second.err) != agent.ErrResponse || second.res.ExitReason != agent.EventStartupFailed {
		t.Errorf("concurrent turn = %s, %v; want startup_failed with response_error", second.res.ExitReason, second.err)
	}
}

func TestRunTurn_ForeignSession(t *testing.T) {
	a := newFakeAdapter(t, newFakeCLI(t), nil)
	if _, err := a.RunTurn(context.Background(), &agent.Session{ID: "x"}, agent.TurnParams{}); err == nil {
		t.Error("RunTurn accepted a session of another adapter")
	}
	if err := a.StopSession(context.Background(), &agent.Session{ID: "x"}); err != nil {
		t.Errorf("StopSession of a foreign session = %v", err)
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
			s := startFake(t, a, agent.StartParams{MCPConfigPath: c.generated})
			runTurn(t, a, s, 1, "p")
			argv := f.argvs(t)[0]
			var got []string
			for i, arg := range argv {
				if arg == "--additional-mcp-config" {
					got = append(got, argv[i+1])
				}
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("--additional-mcp-config values = %q, want %q", got, c.want)
			}
		})
	}
}

// TestRunTurn_UsageFileCountsAsARequestOnlyWithoutStreamedUsage: the usage file's
// totals are the turn's one API request when the stream reported no tokens (the pinned
// CLI), and only revise the requests already counted when it did (older CLIs).
func TestRunTurn_UsageFileCountsAsARequestOnlyWithoutStreamedUsage(t *testing.T) {
	f := newFakeCLI(t)
	f.turn(t, 1, 0, message, resultLine("s1", 0, 100))
	f.file(t, "usage", 1, usageJSON(15))
	f.turn(t, 2, 0, `{"type":"assistant.message","data":{"messageId":"m","content":"x","outputTokens":5}}`, resultLine("s1", 0, 130))
	f.file(t, "usage", 2, usageJSON(40))
	a := newFakeAdapter(t, f, nil)
	s := startFake(t, a, agent.StartParams{})
	for i, want := range []struct {
		requests int
		output   int64
	}{{1, 15}, {1, 40}} {
		o := runTurn(t, a, s, i+1, "p")
		requests := 0
		for _, e := range o.of(agent.EventTokenUsage) {
			if !e.Revision {
				requests++
			}
		}
		if requests != want.requests || o.res.Usage.Output != want.output {
			t.Errorf("turn %d: %d API requests, %d output tokens; want %d, %d (events %+v)",
				i+1, requests, o.res.Usage.Output, want.requests, want.output, o.of(agent.EventTokenUsage))
		}
	}
}
