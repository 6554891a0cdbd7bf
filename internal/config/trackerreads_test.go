package config

import (
	"strings"
	"testing"
)

func TestLoad_TrackerReads(t *testing.T) {
	if cfg, _ := mustLoad(t, minimalWith("agent: {kind: mock}\n"), nil); cfg.Agent.TrackerReads != "" {
		t.Errorf("absent agent.tracker_reads = %q, want \"\" (own)", cfg.Agent.TrackerReads)
	}
	for in, want := range map[string]string{"own": TrackerReadsOwn, "project": TrackerReadsProject, "Project": TrackerReadsProject} {
		cfg, _ := mustLoad(t, minimalWith("agent: {kind: mock, tracker_reads: "+in+"}\n"), nil)
		if cfg.Agent.TrackerReads != want {
			t.Errorf("agent.tracker_reads %s = %q, want %q", in, cfg.Agent.TrackerReads, want)
		}
	}
	for _, bad := range []string{"all", "true", "[project]"} {
		_, problems, _ := checkFrontMatter(t, minimalWith("agent: {kind: mock, tracker_reads: "+bad+"}\n"), nil)
		if !strings.Contains(problemLines(problems), "agent.tracker_reads: must be own (the default") {
			t.Errorf("agent.tracker_reads %s: problems\n%s", bad, problemLines(problems))
		}
	}
}
