package confine

import (
	"slices"
	"testing"

	"sortie/internal/config"
)

func TestHookPolicy_IsTheRunsPolicyPlusHooksSandbox(t *testing.T) {
	cfg := &config.Config{}
	cfg.Agent.Sandbox.ReadPaths = []string{"/opt/sdk"}
	cfg.Hooks.Sandbox.ReadPaths = []string{"/home/op/.ssh/deploy_key"}
	cfg.Hooks.Sandbox.WritePaths = []string{"/srv/mirror.git"}
	s := Sandbox{Self: "/bin/sortie", Hide: []string{"/srv/p/.sortie.db", "/srv/p/.env"}}
	env := []string{"PATH=/usr/local/go/bin:/usr/bin", "HOME=/home/op"}
	run := s.RunPolicy(cfg, "/srv/ws/A-1", "/tmp/hook-1", env)
	p := s.HookPolicy(cfg, "/srv/ws/A-1", "/tmp/hook-1", env)
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
