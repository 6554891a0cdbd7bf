package orchestrator

import (
	"testing"

	"sortie/internal/config"
)

func TestPickHost(t *testing.T) {
	cfg := &config.Config{}
	cfg.Worker.SSHHosts = []string{"a", "b", "c"}
	cfg.Worker.MaxConcurrentAgentsPerHost = 2
	cases := []struct {
		name   string
		load   map[string]int
		prefer string
		want   string
		ok     bool
	}{
		{"least loaded", map[string]int{"a": 1, "b": 0, "c": 1}, "", "b", true},
		{"ties go to the first listed", map[string]int{}, "", "a", true},
		{"full hosts are skipped", map[string]int{"a": 2, "b": 2, "c": 1}, "", "c", true},
		{"every host full: wait, no local fallback", map[string]int{"a": 2, "b": 2, "c": 2}, "", "", false},
		{"the session's host is kept", map[string]int{"a": 0, "b": 1}, "b", "b", true},
		{"the session's host full: wait for it", map[string]int{"a": 0, "b": 2}, "b", "", false},
		{"a host no longer configured is not preferred", map[string]int{"a": 1}, "gone", "b", true},
	}
	for _, c := range cases {
		o := &Orchestrator{hostLoad: c.load}
		got, ok := o.pickHost(cfg, c.prefer)
		if got != c.want || ok != c.ok {
			t.Errorf("%s: pickHost = %q,%v want %q,%v", c.name, got, ok, c.want, c.ok)
		}
	}
	o := &Orchestrator{hostLoad: map[string]int{}}
	if h, ok := o.pickHost(&config.Config{}, ""); h != "" || !ok {
		t.Errorf("no ssh_hosts: pickHost = %q,%v want local", h, ok)
	}
}
