package orchestrator

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sortie/internal/agent/sandbox"
	"sortie/internal/config"
	"sortie/internal/workspace"
)

func TestHookPolicy_IsTheRunsPolicyPlusHooksSandbox(t *testing.T) {
	cfg := &config.Config{}
	cfg.Agent.Sandbox.ReadPaths = []string{"/opt/sdk"}
	cfg.Hooks.Sandbox.ReadPaths = []string{"/home/op/.ssh/deploy_key"}
	cfg.Hooks.Sandbox.WritePaths = []string{"/srv/mirror.git"}
	s := Sandbox{Self: "/bin/sortie", Hide: []string{"/srv/p/.sortie.db", "/srv/p/.env"}}
	env := []string{"PATH=/usr/local/go/bin:/usr/bin", "HOME=/home/op"}
	run := s.runPolicy(cfg, "/srv/ws/A-1", "/tmp/hook-1", env)
	p := hookPolicy(s, cfg, "/srv/ws/A-1", "/tmp/hook-1", env)
	if !slices.Equal(p.Write, append(run.Write, "/srv/mirror.git")) {
		t.Errorf("write = %v, want the run's %v and hooks.sandbox.write_paths", p.Write, run.Write)
	}
	if !slices.Equal(p.Read, append(run.Read, "/home/op/.ssh/deploy_key")) {
		t.Errorf("read = %v, want the run's %v and hooks.sandbox.read_paths", p.Read, run.Read)
	}
	if !p.PrivateTmp {
		t.Error("a confined hook gets the machine's /tmp, where tmux's and an SSH agent's sockets can be named")
	}
	if !slices.Equal(p.Hide, s.Hide) {
		t.Errorf("hide = %v, want %v", p.Hide, s.Hide)
	}
}

func TestConfineHook_UnconfinedWhereAgentsAreSaidOnce(t *testing.T) {
	off := &config.Config{}
	off.Agent.Sandbox.Mode = config.SandboxOff
	for _, c := range []struct {
		name string
		s    Sandbox
		cfg  *config.Config
		host string
	}{
		{"agent.sandbox.mode off", Sandbox{Self: "/bin/sortie"}, off, ""},
		{"no Landlock", Sandbox{Self: "/bin/sortie", Unavailable: "old kernel"}, &config.Config{}, ""},
		{"SSH host", Sandbox{Self: "/bin/sortie"}, &config.Config{}, "build1"},
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
	o := &Orchestrator{opts: Options{Sandbox: Sandbox{Self: "/nonexistent/sortie", Hide: []string{token}},
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
	if !strings.HasPrefix(tmp, runTmpRoot(cfg)+string(filepath.Separator)+"hook-") {
		t.Errorf("the hook's TMPDIR is %q, want a private one in %s", tmp, runTmpRoot(cfg))
	}
	if _, err := os.Stat(tmp); err == nil {
		t.Errorf("the hook's temporary directory %s outlived it", tmp)
	}
}
