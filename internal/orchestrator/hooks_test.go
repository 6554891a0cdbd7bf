package orchestrator

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sortie/internal/agent/sandbox"
	"sortie/internal/config"
	"sortie/internal/confine"
	"sortie/internal/workspace"
)

func TestConfineHook_UnconfinedWhereAgentsAreSaidOnce(t *testing.T) {
	off := &config.Config{}
	off.Agent.Sandbox.Mode = config.SandboxOff
	for _, c := range []struct {
		name string
		s    confine.Sandbox
		cfg  *config.Config
		host string
	}{
		{"agent.sandbox.mode off", confine.Sandbox{Self: "/bin/sortie"}, off, ""},
		{"no Landlock", confine.Sandbox{Self: "/bin/sortie", Unavailable: "old kernel"}, &config.Config{}, ""},
		{"SSH host", confine.Sandbox{Self: "/bin/sortie"}, &config.Config{}, "build1"},
	} {
		var logs bytes.Buffer
		o := &Orchestrator{opts: Options{Sandbox: c.s}, log: slog.New(slog.NewTextHandler(&logs, nil))}
		for range 2 {
			hc, err := o.confineHook(c.cfg, c.host)(workspace.HookAfterRun, "/srv/ws/A-1", nil)
			if hc != nil || err != nil {
				t.Errorf("%s: ConfineHook = %v, %v; want nil, nil (unconfined)", c.name, hc, err)
			}
		}
		if n := strings.Count(logs.String(), "hooks run unconfined"); n != 1 {
			t.Errorf("%s: said %d times that hooks run unconfined, want once:\n%s", c.name, n, logs.String())
		}
	}
}

// TestConfineHook_HidesWhatHooksSandboxWouldGrant runs an after_run hook through the
// orchestrator's workspace manager, confined for real: it reads the deploy key and
// writes the mirror hooks.sandbox grants, writes its private TMPDIR (gone afterwards),
// and is refused the operator token, hidden although it lies in a granted directory.
func TestConfineHook_HidesWhatHooksSandboxWouldGrant(t *testing.T) {
	if !sandbox.ThreadConfinable() {
		t.Skip("Landlock cannot confine a thread here")
	}
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", filepath.Join(dir, "tmp"))
	keys := filepath.Join(dir, "keys")
	mirror := filepath.Join(dir, "mirror")
	for _, d := range []string{keys, mirror, filepath.Join(dir, "tmp")} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	token := filepath.Join(keys, "sortie.db.operator-token")
	for path, body := range map[string]string{filepath.Join(keys, "deploy_key"): "key", token: "operator-secret"} {
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg := &config.Config{DBPath: filepath.Join(dir, "sortie.db")}
	cfg.Workspace.Root = filepath.Join(dir, "ws")
	cfg.Hooks.AfterRun = `cat ` + filepath.Join(keys, "deploy_key") + ` > key.out
echo pushed > ` + filepath.Join(mirror, "ref") + `
echo "$TMPDIR" > tmpdir.out && echo t > "$TMPDIR/t"
cat ` + token + ` > token.out 2>&1 || true`
	cfg.Hooks.Sandbox.ReadPaths = []string{keys}
	cfg.Hooks.Sandbox.WritePaths = []string{mirror}
	o := &Orchestrator{opts: Options{Sandbox: confine.Sandbox{Self: "/nonexistent/sortie", Hide: []string{token}},
		Environ: []string{"PATH=" + os.Getenv("PATH")}}, log: slog.New(slog.DiscardHandler)}
	mgr, err := o.workspaces(cfg)
	if err != nil {
		t.Fatal(err)
	}
	is := workspace.Issue{ID: "1", Identifier: "A-1"}
	ws, err := mgr.Prepare(t.Context(), is, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := mgr.AfterRun(t.Context(), ws, is, nil); err != nil {
		t.Fatal(err)
	}
	read := func(name string) string {
		b, _ := os.ReadFile(filepath.Join(ws.Path, name))
		return strings.TrimSpace(string(b))
	}
	if got := read("key.out"); got != "key" {
		t.Errorf("the hook read %q from the deploy key hooks.sandbox grants, want %q", got, "key")
	}
	if _, err := os.Stat(filepath.Join(mirror, "ref")); err != nil {
		t.Errorf("the hook could not write the mirror hooks.sandbox grants: %v", err)
	}
	if got := read("token.out"); strings.Contains(got, "operator-secret") {
		t.Errorf("the hook read the hidden operator token: %q", got)
	}
	tmp := read("tmpdir.out")
	if !strings.HasPrefix(tmp, confine.RunTmpRoot(cfg)+string(filepath.Separator)+"hook-") {
		t.Errorf("the hook's TMPDIR is %q, want a private one in %s", tmp, confine.RunTmpRoot(cfg))
	}
	if _, err := os.Stat(tmp); err == nil {
		t.Errorf("the hook's temporary directory %s outlived it", tmp)
	}
}
