package config

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// failAfter bounds every wait in these tests. It is only a guard against a hang: tests
// wait on channels, never on the clock.
const failAfter = 10 * time.Second

func workflowText(maxTurns string) string {
	return "---\n" + minimalWith("agent:\n  kind: mock\n  max_turns: "+maxTurns+"\n") + "---\nDo {{ .issue.title }}\n"
}

// rejectBadTemplates stands in for the prompt-template parse the daemon passes.
func rejectBadTemplates(c *Config) error {
	if strings.Contains(c.Prompt, "{{ bad") {
		return errors.New("template parse error in prompt")
	}
	return nil
}

type watchFixture struct {
	dir, path string
	w         *Watcher
	reloads   chan error // one value per reload the file watch triggered
	logs      *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// newWatchFixture writes a valid WORKFLOW.md (max_turns 3) and builds a Watcher on it.
// With start, the file watch runs until the test ends.
func newWatchFixture(t *testing.T, start bool) *watchFixture {
	t.Helper()
	dir := t.TempDir()
	f := &watchFixture{dir: dir, path: writeFile(t, dir, "WORKFLOW.md", workflowText("3")), reloads: make(chan error, 100), logs: &syncBuffer{}}
	w, err := NewWatcher(f.path, Options{Env: fakeEnv(baseEnv())}, rejectBadTemplates, slog.New(slog.NewTextHandler(f.logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	f.w = w
	if start {
		w.debounce = 5 * time.Millisecond
		w.onReload = func(err error) { f.reloads <- err }
		ctx, cancel := context.WithCancel(context.Background())
		if err := w.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cancel(); w.Wait() })
	}
	return f
}

// saveAtomically writes content the way many editors do: a temp file renamed over the
// target.
func (f *watchFixture) saveAtomically(t *testing.T, content string) {
	t.Helper()
	tmp := writeFile(t, f.dir, ".WORKFLOW.md.swp", content)
	if err := os.Rename(tmp, f.path); err != nil {
		t.Fatal(err)
	}
}

func (f *watchFixture) waitChange(t *testing.T) *Config {
	t.Helper()
	select {
	case c := <-f.w.Changes():
		return c
	case <-time.After(failAfter):
		t.Fatal("no configuration change arrived")
		return nil
	}
}

// waitFailedReload waits until a watch-triggered reload fails.
func (f *watchFixture) waitFailedReload(t *testing.T) error {
	t.Helper()
	for {
		select {
		case err := <-f.reloads:
			if err != nil {
				return err
			}
		case <-time.After(failAfter):
			t.Fatal("no failed reload happened")
			return nil
		}
	}
}

func TestWatcher_GoodEditIsApplied(t *testing.T) {
	f := newWatchFixture(t, true)
	if err := os.WriteFile(f.path, []byte(workflowText("7")), 0o644); err != nil {
		t.Fatal(err)
	}
	// An in-place write may be seen half-written first; wait for the final version.
	for c := f.waitChange(t); c.Agent.MaxTurns != 7; c = f.waitChange(t) {
	}
	if got := f.w.Current().Agent.MaxTurns; got != 7 {
		t.Errorf("Current().Agent.MaxTurns = %d, want 7", got)
	}
	if err := f.w.LastError(); err != nil {
		t.Errorf("LastError() = %v, want nil", err)
	}
}

func TestWatcher_AtomicRenameSaveIsApplied(t *testing.T) {
	f := newWatchFixture(t, true)
	f.saveAtomically(t, workflowText("8"))
	if c := f.waitChange(t); c.Agent.MaxTurns != 8 {
		t.Errorf("applied MaxTurns = %d, want 8", c.Agent.MaxTurns)
	}
}

func TestWatcher_BadEditIsRejectedAndOldConfigKept(t *testing.T) {
	f := newWatchFixture(t, true)
	old := f.w.Current()
	f.saveAtomically(t, "---\n"+minimalWith("agent: {kind: mock, max_sessions: -1}\n")+"---\n")
	err := f.waitFailedReload(t)
	if want := "config: agent.max_sessions: must be non-negative (got -1)"; err.Error() != want {
		t.Errorf("reload error = %v, want %q", err, want)
	}
	if f.w.Current() != old {
		t.Errorf("Current() changed after a rejected edit")
	}
	if f.w.LastError() == nil {
		t.Errorf("LastError() = nil after a rejected edit")
	}
	select {
	case c := <-f.w.Changes():
		t.Errorf("a rejected edit was published: %+v", c.Agent)
	default:
	}
}

func TestWatcher_ValidationRejectionKeepsOldConfig(t *testing.T) {
	f := newWatchFixture(t, true)
	old := f.w.Current()
	f.saveAtomically(t, "---\n"+minimal+"---\nHello {{ bad template\n")
	err := f.waitFailedReload(t)
	if !strings.Contains(err.Error(), "template parse error") {
		t.Errorf("reload error = %v, want the validate error", err)
	}
	if f.w.Current() != old || f.w.LastError() == nil {
		t.Errorf("Current changed or LastError unset after a validation rejection")
	}
	if !strings.Contains(f.logs.String(), "workflow reload rejected by validation") {
		t.Errorf("rejection not logged; logs:\n%s", f.logs.String())
	}
}

func TestWatcher_DeletedFileKeepsLastGoodThenRestoreApplies(t *testing.T) {
	f := newWatchFixture(t, true)
	old := f.w.Current()
	if err := os.Remove(f.path); err != nil {
		t.Fatal(err)
	}
	err := f.waitFailedReload(t)
	if !strings.Contains(err.Error(), "file not found") {
		t.Errorf("reload error = %v, want file not found", err)
	}
	if f.w.Current() != old {
		t.Errorf("Current() changed after the file was deleted")
	}
	if f.w.LastError() == nil {
		t.Errorf("LastError() = nil after the file was deleted")
	}
	f.saveAtomically(t, workflowText("9"))
	if c := f.waitChange(t); c.Agent.MaxTurns != 9 {
		t.Errorf("restored MaxTurns = %d, want 9", c.Agent.MaxTurns)
	}
	if err := f.w.LastError(); err != nil {
		t.Errorf("LastError() = %v after restore, want nil", err)
	}
}

func TestWatcher_ConfigMapSymlinkSwapIsApplied(t *testing.T) {
	// Kubernetes mounts a ConfigMap as WORKFLOW.md -> ..data/WORKFLOW.md, ..data -> ..v1,
	// and updates it by pointing a new ..data at ..v2 with a rename.
	dir := t.TempDir()
	for _, v := range []struct{ name, turns string }{{"..v1", "3"}, {"..v2", "4"}} {
		if err := os.Mkdir(filepath.Join(dir, v.name), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, v.name), "WORKFLOW.md", workflowText(v.turns))
	}
	if err := os.Symlink("..v1", filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "WORKFLOW.md")
	if err := os.Symlink("..data/WORKFLOW.md", path); err != nil {
		t.Fatal(err)
	}
	w, err := NewWatcher(path, Options{Env: fakeEnv(baseEnv())}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	w.debounce = 5 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); w.Wait() }()
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("..v2", filepath.Join(dir, "..data_tmp")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-w.Changes():
		if c.Agent.MaxTurns != 4 {
			t.Errorf("MaxTurns = %d, want 4 from ..v2", c.Agent.MaxTurns)
		}
		if c.Dir != dir {
			t.Errorf("Dir = %q, want the mount directory %q, not the symlink target", c.Dir, dir)
		}
	case <-time.After(failAfter):
		t.Fatal("symlink swap was not noticed")
	}
}

func TestWatcher_Reload(t *testing.T) {
	f := newWatchFixture(t, false)
	first := f.w.Current()

	if err := f.w.Reload(); err != nil {
		t.Fatalf("Reload of unchanged file = %v", err)
	}
	if f.w.Current() != first {
		t.Errorf("Reload of unchanged content replaced the config")
	}
	select {
	case <-f.w.Changes():
		t.Errorf("Reload of unchanged content published a change")
	default:
	}

	writeFile(t, f.dir, "WORKFLOW.md", workflowText("5"))
	if err := f.w.Reload(); err != nil {
		t.Fatalf("Reload = %v", err)
	}
	if got := f.w.Current().Agent.MaxTurns; got != 5 {
		t.Errorf("MaxTurns = %d, want 5", got)
	}

	writeFile(t, f.dir, "WORKFLOW.md", "---\n[broken\n---\n")
	for range 3 {
		if err := f.w.Reload(); err == nil {
			t.Fatal("Reload of a broken file returned nil")
		}
	}
	if n := strings.Count(f.logs.String(), "workflow reload failed"); n != 1 {
		t.Errorf("the same failure was logged %d times, want once", n)
	}
	if f.w.Current().Agent.MaxTurns != 5 || f.w.LastError() == nil {
		t.Errorf("after a broken file: MaxTurns %d, LastError %v", f.w.Current().Agent.MaxTurns, f.w.LastError())
	}

	// Putting back the content in force clears the error without a new change.
	<-f.w.Changes() // the max_turns 5 change
	writeFile(t, f.dir, "WORKFLOW.md", workflowText("5"))
	if err := f.w.Reload(); err != nil {
		t.Fatalf("Reload after restore = %v", err)
	}
	if f.w.LastError() != nil {
		t.Errorf("LastError() = %v after restoring the applied content", f.w.LastError())
	}
	select {
	case <-f.w.Changes():
		t.Errorf("restoring identical content published a change")
	default:
	}
}

func TestWatcher_ReloadNoticesEnvFileChanges(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, dir, "WORKFLOW.md", workflowText("3"))
	envFile := writeFile(t, dir, ".env", "SORTIE_AGENT_MAX_TURNS=4\n")
	w, err := NewWatcher(path, Options{Env: fakeEnv(baseEnv()), EnvFile: envFile}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, ".env", "SORTIE_AGENT_MAX_TURNS=6\n")
	if err := w.Reload(); err != nil {
		t.Fatal(err)
	}
	if got := w.Current().Agent.MaxTurns; got != 6 {
		t.Errorf("MaxTurns = %d, want 6 from the edited .env", got)
	}
}

func TestWatcher_ChangesHoldsOnlyTheLatest(t *testing.T) {
	f := newWatchFixture(t, false)
	for _, n := range []string{"4", "5", "6"} {
		writeFile(t, f.dir, "WORKFLOW.md", workflowText(n))
		if err := f.w.Reload(); err != nil {
			t.Fatal(err)
		}
	}
	if c := <-f.w.Changes(); c.Agent.MaxTurns != 6 {
		t.Errorf("Changes delivered MaxTurns %d, want the latest (6)", c.Agent.MaxTurns)
	}
	select {
	case c := <-f.w.Changes():
		t.Errorf("Changes held a stale config too: %d", c.Agent.MaxTurns)
	default:
	}
}

func TestNewWatcher_InitialLoadMustSucceed(t *testing.T) {
	dir := t.TempDir()
	bad := writeFile(t, dir, "bad.md", "---\ntracker: {}\n---\n")
	if _, err := NewWatcher(bad, Options{Env: fakeEnv(baseEnv())}, nil, nil); err == nil {
		t.Error("NewWatcher accepted an invalid file")
	} else if verr := (*ValidationError)(nil); !errors.As(err, &verr) {
		t.Errorf("error %T is not a *ValidationError", err)
	}
	rejected := writeFile(t, dir, "rejected.md", "---\n"+minimal+"---\n{{ bad\n")
	if _, err := NewWatcher(rejected, Options{Env: fakeEnv(baseEnv())}, rejectBadTemplates, nil); err == nil || !strings.Contains(err.Error(), "template parse error") {
		t.Errorf("NewWatcher error = %v, want the validate error", err)
	}
}

func TestWatcher_StartTwiceFails(t *testing.T) {
	f := newWatchFixture(t, true)
	if err := f.w.Start(context.Background()); err == nil {
		t.Error("second Start succeeded")
	}
}

func TestWatcher_WaitWithoutStartReturns(t *testing.T) {
	f := newWatchFixture(t, false)
	f.w.Wait()
}

func TestWatcher_IgnoresUnrelatedFiles(t *testing.T) {
	f := newWatchFixture(t, false)
	for name, want := range map[string]bool{
		"WORKFLOW.md": true, "..data": true, "..2026_01_01": true,
		".sortie.db": false, ".sortie.db-wal": false, "issues.json": false,
	} {
		if got := f.w.relevant(filepath.Join(f.dir, name)); got != want {
			t.Errorf("relevant(%q) = %v, want %v", name, got, want)
		}
	}
}
