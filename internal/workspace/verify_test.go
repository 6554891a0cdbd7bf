package workspace

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestVerify_ExitCodesAreResultsNotErrors(t *testing.T) {
	m, ws := hookWorkspace(t, 0)
	for _, tt := range []struct {
		script string
		want   int
		output string
	}{
		{"echo fine", 0, "fine\n"},
		{"echo broken >&2; exit 3", 3, "broken\n"},
		{"exit 1", 1, ""},
	} {
		res, err := m.Verify(t.Context(), "self_review_verify", tt.script, ws, testIssue, time.Minute)
		if err != nil {
			t.Fatalf("Verify(%q) err = %v, want nil", tt.script, err)
		}
		if res.ExitCode != tt.want || res.TimedOut || res.Output != tt.output || res.Command != tt.script {
			t.Errorf("Verify(%q) = %+v, want exit %d, output %q", tt.script, res, tt.want, tt.output)
		}
		if res.Duration <= 0 {
			t.Errorf("Verify(%q) Duration = %v, want > 0", tt.script, res.Duration)
		}
	}
}

func TestVerify_RunsInWorkspaceWithHookEnv(t *testing.T) {
	m, ws := hookWorkspace(t, 0)
	res, err := m.Verify(t.Context(), "v", `pwd; echo "$SORTIE_ISSUE_IDENTIFIER"`, ws, testIssue, time.Minute)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("Verify = %+v, %v", res, err)
	}
	if want := ws.Path + "\n" + testIssue.Identifier + "\n"; res.Output != want {
		t.Errorf("Output = %q, want %q", res.Output, want)
	}
}

// TestVerify_TimeoutKillsTheGroup: the timeout is a result (TimedOut, exit -1), and a
// background child of the command dies with it.
func TestVerify_TimeoutKillsTheGroup(t *testing.T) {
	m, ws := hookWorkspace(t, time.Hour) // Verify's own timeout applies, not the hooks'
	g := newGroupWatch(t)
	done := make(chan struct{})
	var res CommandResult
	var err error
	go func() {
		defer close(done)
		res, err = m.Verify(t.Context(), "v", "FIFO='"+g.path+"'; "+backgroundChildScript, ws, testIssue, 300*time.Millisecond)
	}()
	g.ready(t)
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("Verify did not return 20s after its 300ms timeout")
	}
	if err != nil {
		t.Fatalf("Verify err = %v, want nil (a timeout is a result)", err)
	}
	if !res.TimedOut || res.ExitCode != -1 {
		t.Errorf("Verify = %+v, want TimedOut with exit -1", res)
	}
	g.childGone(t)
}

func TestVerify_CancelIsAnError(t *testing.T) {
	m, ws := hookWorkspace(t, time.Hour)
	g := newGroupWatch(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := m.Verify(ctx, "v", "FIFO='"+g.path+"'; "+backgroundChildScript, ws, testIssue, time.Hour)
		done <- err
	}()
	g.ready(t)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Verify err = %v, want one wrapping context.Canceled", err)
	}
	g.childGone(t)

	// Already cancelled: not run at all.
	res, err := m.Verify(ctx, "v", "touch ran", ws, testIssue, time.Hour)
	if !errors.Is(err, context.Canceled) || res.ExitCode != -1 {
		t.Errorf("Verify(cancelled ctx) = %+v, %v; want exit -1 and context.Canceled", res, err)
	}
	if _, err := os.Stat(filepath.Join(ws.Path, "ran")); err == nil {
		t.Error("a command ran under a cancelled context")
	}
}

func TestVerify_OutputIsCappedKeepingTheEnd(t *testing.T) {
	m, ws := hookWorkspace(t, 0)
	script := `head -c 100000 /dev/zero | tr '\0' a; echo; echo FINAL LINE >&2`
	res, err := m.Verify(t.Context(), "v", script, ws, testIssue, time.Minute)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("Verify = %+v, %v", res, err)
	}
	if len(res.Output) > MaxCommandOutput+100 {
		t.Errorf("Output has %d bytes, want at most about %d", len(res.Output), MaxCommandOutput)
	}
	if !strings.Contains(res.Output, "earlier bytes of output dropped") || !strings.HasSuffix(res.Output, "FINAL LINE\n") {
		t.Errorf("Output = %q…%q, want a dropped-output note and the last line", res.Output[:min(60, len(res.Output))], res.Output[max(0, len(res.Output)-20):])
	}
}

func TestVerify_CannotRunIsAnError(t *testing.T) {
	m, ws := hookWorkspace(t, 0)
	for _, tt := range []struct {
		name   string
		script string
		ws     Workspace
	}{
		{"blank", " \n", ws},
		{"NUL", "true\x00", ws},
		{"no workspace", "true", Workspace{Path: filepath.Join(ws.Path, "missing")}},
	} {
		res, err := m.Verify(t.Context(), "v", tt.script, tt.ws, testIssue, time.Minute)
		if he, ok := errors.AsType[*HookError](err); !ok || he.Op != HookOpValidate || res.ExitCode != -1 {
			t.Errorf("%s: Verify = %+v, %v; want a validate HookError and exit -1", tt.name, res, err)
		}
	}
}

// TestVerify_IsConfinedAsAHookAfterTheAgent: even in the run that created the
// workspace, the command is confined (ConfineHook gets its name), runs without
// SSH_AUTH_SOCK and with git neutralised.
func TestVerify_IsConfinedAsAHookAfterTheAgent(t *testing.T) {
	rec := &recordingConfine{}
	m := newManager(t, Config{ConfineHook: rec.confine,
		BaseEnv: []string{"PATH=" + os.Getenv("PATH"), "SSH_AUTH_SOCK=/tmp/agent.sock"}})
	ws, err := m.Prepare(t.Context(), testIssue, 0)
	if err != nil || !ws.CreatedNow {
		t.Fatalf("Prepare = %+v, %v", ws, err)
	}
	res, err := m.Verify(t.Context(), "self_review_diff",
		`echo "confined=$SORTIE_TEST_CONFINED ssh=$SSH_AUTH_SOCK git=$GIT_CONFIG_NOSYSTEM"`, ws, testIssue, time.Minute)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("Verify = %+v, %v", res, err)
	}
	if want := "confined=1 ssh= git=1\n"; res.Output != want {
		t.Errorf("Output = %q, want %q", res.Output, want)
	}
	if !slices.Equal(rec.hooks, []string{"self_review_diff"}) || rec.done != 1 {
		t.Errorf("ConfineHook called for %v with %d Done calls, want [self_review_diff] with one", rec.hooks, rec.done)
	}
}

func TestVerify_ConfinementFailureIsAnError(t *testing.T) {
	m := newManager(t, Config{ConfineHook: func(string, string, []string) (*HookConfinement, error) {
		return nil, errors.New("no landlock")
	}})
	ws, err := m.Prepare(t.Context(), testIssue, 0)
	if err != nil {
		t.Fatal(err)
	}
	res, err := m.Verify(t.Context(), "v", "touch ran", ws, testIssue, time.Minute)
	if he, ok := errors.AsType[*HookError](err); !ok || he.Op != HookOpStart || !strings.Contains(err.Error(), "no landlock") || res.ExitCode != -1 {
		t.Fatalf("Verify = %+v, %v; want a start HookError naming the confinement's failure", res, err)
	}
	if _, err := os.Stat(filepath.Join(ws.Path, "ran")); err == nil {
		t.Error("the command ran although it could not be confined")
	}
}
