package orchestrator

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
		got, why := c.s.confined(cfg(c.mode))
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
	p := s.runPolicy(cfg, "/srv/ws/A-1", "/tmp/sortie-run-1", []string{"PATH=/usr/local/go/bin:/usr/bin"})
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
