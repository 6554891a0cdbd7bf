package workspace

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"sortie/internal/agent/sandbox"
)

// recordingConfine is a ConfineHook that records which hooks it confined, marks their
// environment with SORTIE_TEST_CONFINED=1 and counts Done calls.
type recordingConfine struct {
	mu    sync.Mutex
	hooks []string
	done  int
	envs  [][]string
}

func (r *recordingConfine) confine(hook, _ string, env []string) (*HookConfinement, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.hooks = append(r.hooks, hook)
	r.envs = append(r.envs, env)
	return &HookConfinement{
		Env: []string{"SORTIE_TEST_CONFINED=1"},
		Done: func() {
			r.mu.Lock()
			r.done++
			r.mu.Unlock()
		},
	}, nil
}

func TestRunHook_HooksAfterTheAgentAreConfined(t *testing.T) {
	rec := &recordingConfine{}
	root := filepath.Join(t.TempDir(), "workspaces")
	log := func(hook string) string { return filepath.Join(root, "PROJ-1."+hook) }
	mark := func(hook string) string {
		return `echo "${SORTIE_TEST_CONFINED:-0}${GIT_CONFIG_NOSYSTEM:-0}" >> ` + log(hook)
	}
	m := newManager(t, Config{Root: root, ConfineHook: rec.confine, Hooks: Hooks{
		AfterCreate: mark(HookAfterCreate), BeforeRun: mark(HookBeforeRun),
		AfterRun: mark(HookAfterRun), BeforeRemove: mark(HookBeforeRemove),
	}})
	// The first run creates the workspace: after_create and its before_run run before
	// any agent, unconfined and with the operator's git configuration whole. The second
	// run's before_run, both after_runs and before_remove follow an agent's run:
	// confined, and their git neutralised.
	for attempt := range 2 {
		ws, err := m.Prepare(t.Context(), testIssue, attempt)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.AfterRun(t.Context(), ws, testIssue, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Remove(t.Context(), filepath.Join(realDir(t, root), "PROJ-1"), testIssue); err != nil {
		t.Fatal(err)
	}
	for hook, want := range map[string]string{
		HookAfterCreate: "00\n", HookBeforeRun: "00\n11\n", HookAfterRun: "11\n11\n", HookBeforeRemove: "11\n",
	} {
		got, _ := os.ReadFile(log(hook))
		if string(got) != want {
			t.Errorf("%s ran confined (1 or 0), with git neutralised (1 or 0): %q, want %q", hook, got, want)
		}
	}
	wantHooks := []string{HookAfterRun, HookBeforeRun, HookAfterRun, HookBeforeRemove}
	if !slices.Equal(rec.hooks, wantHooks) || rec.done != len(wantHooks) {
		t.Errorf("ConfineHook called for %v with %d Done calls, want %v with one Done each", rec.hooks, rec.done, wantHooks)
	}
}

func TestRunHook_ConfinedHookGetsNoSSHAuthSock(t *testing.T) {
	rec := &recordingConfine{}
	m := newManager(t, Config{ConfineHook: rec.confine,
		BaseEnv: []string{"PATH=" + os.Getenv("PATH"), "SSH_AUTH_SOCK=/tmp/ssh-x/agent.1"}})
	ws, err := m.Prepare(t.Context(), testIssue, 0) // created now: before_run unconfined
	if err != nil {
		t.Fatal(err)
	}
	ws.CreatedNow = false
	if err := m.RunHook(t.Context(), HookBeforeRun, `echo "${SSH_AUTH_SOCK:-none}" > sock.out`, ws, testIssue, nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(ws.Path, "sock.out")); string(got) != "none\n" {
		t.Errorf("a confined hook saw SSH_AUTH_SOCK=%q, want it unset", got)
	}
	if slices.ContainsFunc(rec.envs[0], func(kv string) bool { return strings.HasPrefix(kv, "SSH_AUTH_SOCK=") }) {
		t.Errorf("ConfineHook was given SSH_AUTH_SOCK: %v", rec.envs[0])
	}
}

func TestRunHook_ConfinementFailureFailsTheHookUnrun(t *testing.T) {
	m := newManager(t, Config{ConfineHook: func(string, string, []string) (*HookConfinement, error) {
		return nil, errors.New("no policy")
	}})
	ws, err := m.Prepare(t.Context(), testIssue, 0)
	if err != nil {
		t.Fatal(err)
	}
	err = m.RunHook(t.Context(), HookAfterRun, "touch ran", ws, testIssue, nil)
	he, ok := errors.AsType[*HookError](err)
	if !ok || he.Op != HookOpStart || !strings.Contains(err.Error(), "no policy") {
		t.Fatalf("RunHook = %v, want a start HookError naming the confinement's failure", err)
	}
	if _, err := os.Stat(filepath.Join(ws.Path, "ran")); err == nil {
		t.Error("the hook ran although it could not be confined")
	}
}

func TestRunHook_ConfinementWrapsTheShell(t *testing.T) {
	env, err := exec.LookPath("env")
	if err != nil {
		t.Skip("no env program")
	}
	m := newManager(t, Config{ConfineHook: func(string, string, []string) (*HookConfinement, error) {
		return &HookConfinement{Wrap: []string{env, "WRAPPED=yes"}}, nil
	}})
	ws, err := m.Prepare(t.Context(), testIssue, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.RunHook(t.Context(), HookAfterRun, `echo "$WRAPPED" > w.out`, ws, testIssue, nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(ws.Path, "w.out")); string(got) != "yes\n" {
		t.Errorf("the shell ran outside Wrap: WRAPPED=%q", got)
	}
}

// TestRunHook_ThreadConfinementHoldsTheHook confines a hook for real, from its start
// thread (sandbox.RestrictThread): it writes its workspace and its TMPDIR, and is
// refused a secret beside the workspace root, as the agent would be.
func TestRunHook_ThreadConfinementHoldsTheHook(t *testing.T) {
	if !sandbox.ThreadConfinable() {
		t.Skip("Landlock cannot confine a thread here")
	}
	dir := realDir(t, t.TempDir())
	secret := filepath.Join(dir, "operator-token")
	if err := os.WriteFile(secret, []byte("s3cret"), 0o600); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, "hooktmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "workspaces")
	m := newManager(t, Config{Root: root, ConfineHook: func(_, ws string, _ []string) (*HookConfinement, error) {
		p := sandbox.Policy{Write: append([]string{ws, tmp}, sandbox.SystemWrite...), Read: sandbox.SystemRead}
		return &HookConfinement{Thread: func() error { return sandbox.RestrictThread(p) }, Env: []string{"TMPDIR=" + tmp}}, nil
	}})
	ws, err := m.Prepare(t.Context(), testIssue, 0)
	if err != nil {
		t.Fatal(err)
	}
	script := `echo ok > in-ws && echo ok > "$TMPDIR/t" && { cat ` + secret + ` > stolen 2>/dev/null; echo x > ` + filepath.Join(dir, "outside") + `; true; }`
	if err := m.RunHook(t.Context(), HookAfterRun, script, ws, testIssue, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(ws.Path, "in-ws")); err != nil {
		t.Errorf("the confined hook could not write its workspace: %v", err)
	}
	if _, err := os.Stat(filepath.Join(tmp, "t")); err != nil {
		t.Errorf("the confined hook could not write its TMPDIR: %v", err)
	}
	if got, _ := os.ReadFile(filepath.Join(ws.Path, "stolen")); len(got) != 0 {
		t.Errorf("the confined hook read the secret: %q", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "outside")); err == nil {
		t.Error("the confined hook wrote outside its workspace")
	}
	// The daemon's own threads are not confined by the hook's start.
	if _, err := os.ReadFile(secret); err != nil {
		t.Errorf("the daemon lost access after confining a hook: %v", err)
	}
}
