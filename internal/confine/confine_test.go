package confine

import (
	"slices"
	"testing"

	"sortie/internal/agent/sandbox"
	"sortie/internal/config"
)

func TestSandbox_ConfinedUnlessOffOrUnavailable(t *testing.T) {
	cfg := func(mode string) *config.Config {
		c := &config.Config{}
		c.Agent.Sandbox.Mode = mode
		return c
	}
	for _, c := range []struct {
		name string
		s    Sandbox
		mode string
		want bool
	}{
		{"default mode where Landlock works", Sandbox{Self: "/bin/sortie"}, "", true},
		{"explicit landlock", Sandbox{Self: "/bin/sortie"}, config.SandboxLandlock, true},
		{"off", Sandbox{Self: "/bin/sortie"}, config.SandboxOff, false},
		{"kernel without Landlock", Sandbox{Self: "/bin/sortie", Unavailable: "no landlock"}, "", false},
		{"no executable to confine with", Sandbox{}, "", false},
	} {
		got, why := c.s.Confined(cfg(c.mode))
		if got != c.want || (!got && why == "") {
			t.Errorf("%s: confined = %v (%q), want %v with a reason when false", c.name, got, why, c.want)
		}
	}
}

func TestSandbox_RunPolicy(t *testing.T) {
	cfg := &config.Config{}
	cfg.Agent.Sandbox.ReadPaths = []string{"/opt/sdk"}
	cfg.Agent.Sandbox.WritePaths = []string{"/home/op/.cache/go-build"}
	s := Sandbox{Self: "/bin/sortie", Hide: []string{"/srv/p/.sortie.db", "/srv/p/.env"}}
	p := s.RunPolicy(cfg, "/srv/ws/A-1", "/tmp/sortie-run-1", []string{"PATH=/usr/local/go/bin:/usr/bin"})
	for _, w := range []string{"/srv/ws/A-1", "/tmp/sortie-run-1", "/dev/null", "/home/op/.cache/go-build"} {
		if !slices.Contains(p.Write, w) {
			t.Errorf("write %v lacks %s", p.Write, w)
		}
	}
	for _, r := range append([]string{"/opt/sdk", "/usr/local/go"}, sandbox.SystemRead...) {
		if !slices.Contains(p.Read, r) {
			t.Errorf("read %v lacks %s", p.Read, r)
		}
	}
	if !slices.Equal(p.Hide, s.Hide) {
		t.Errorf("hide = %v, want %v", p.Hide, s.Hide)
	}
}

// What every run has a piece of is private to its own rules, wherever it lies:
// workspace.root, the runs' temporary directories, the CLIs' per-issue state and the
// homes; the run's own workspace and temporary directory are written; of git's
// configuration only its files are read, never git/credentials beside them.
func TestSandbox_RunPolicyPrivateAndGitFiles(t *testing.T) {
	cfg := &config.Config{}
	cfg.Workspace.Root = "/var/lib/sortie/workspaces"
	cfg.Agent.Sandbox.ReadPaths = []string{"/var/lib/sortie"}
	s := Sandbox{Self: "/usr/local/bin/sortie"}
	home := "/var/lib/agent"
	env := []string{"HOME=" + home, "PATH=" + home + "/.cargo/bin:" + home + "/.local/bin:/usr/bin"}
	p := s.RunPolicy(cfg, "/var/lib/sortie/workspaces/A-1", "/tmp/sortie-runs-x/1", env)
	for _, want := range []string{cfg.Workspace.Root, RunTmpRoot(cfg), home, home + "/.cache/sortie"} {
		if !slices.Contains(p.Private, want) {
			t.Errorf("private %v lacks %s", p.Private, want)
		}
	}
	for _, want := range []string{home + "/.gitconfig", home + "/.config/git/config", home + "/.config/git/ignore",
		home + "/.config/git/attributes", home + "/.cargo/bin", home + "/.local/bin"} {
		if !slices.Contains(p.Read, want) {
			t.Errorf("read %v lacks %s", p.Read, want)
		}
	}
	for _, never := range []string{home + "/.config/git", home + "/.cargo", home + "/.local", "/usr/local"} {
		if slices.Contains(p.Read, never) {
			t.Errorf("read %v grants %s whole", p.Read, never)
		}
	}
	if p.Write[0] != "/var/lib/sortie/workspaces/A-1" || p.Write[1] != "/tmp/sortie-runs-x/1" {
		t.Errorf("write = %v, want the workspace and the run's temporary directory first", p.Write)
	}
	xdg := s.RunPolicy(cfg, "/w", "/t", []string{"HOME=/h", "XDG_CONFIG_HOME=/cfg", "XDG_CACHE_HOME=/c"})
	if !slices.Contains(xdg.Read, "/cfg/git/config") || slices.Contains(xdg.Read, "/h/.config/git/config") ||
		!slices.Contains(xdg.Private, "/c/sortie") {
		t.Errorf("with XDG_CONFIG_HOME and XDG_CACHE_HOME: read %v, private %v", xdg.Read, xdg.Private)
	}
}
