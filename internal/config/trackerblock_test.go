package config

import (
	"slices"
	"strings"
	"testing"

	"sortie/internal/tracker"
)

// TestTrackerBlock_UnknownKeysAreWarned: a key of the tracker's own block (`jira:`) that
// the adapter does not declare (tracker.Meta.Options) draws an unknown_sub_key warning
// listing the declared keys, as a key of the `codex:` block does; the file still loads.
func TestTrackerBlock_UnknownKeysAreWarned(t *testing.T) {
	const agentMock = "agent: {kind: mock}\n"
	cases := []struct {
		name, front string
		want        []string // the warnings, as Problem.String renders them
	}{
		{"file", "tracker: {kind: file, active_states: [a]}\nfile: {path: i.json, pth: j.json}\n",
			[]string{"config: file.pth: unknown key in file; it is ignored (known: path)"}},
		{"jira", "tracker: {kind: jira, project: PROJ, api_key: u@x:t, endpoint: https://x.atlassian.net, active_states: [a]}\njira: {api: cloud, page_sise: 10}\n",
			[]string{"config: jira.page_sise: unknown key in jira; it is ignored (known: api, page_size, timeout_ms)"}},
		{"linear", "tracker: {kind: linear, project_slug: abc123, api_key: k}\nlinear: {agent_reads: scoped, agent_read: unrestricted}\n",
			[]string{"config: linear.agent_read: unknown key in linear; it is ignored (known: agent_reads)"}},
		// github: is not the GitHub tracker's block but reactions' (reactions_test.go):
		// with tracker.kind github it draws one warning that it is ignored.
		{"github is reactions' block", "tracker: {kind: github, project: o/r, api_key: k, active_states: [a]}\ngithub: {labels: [x]}\n",
			nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, problems, _ := checkFrontMatter(t, c.front+agentMock, nil)
			if cfg == nil {
				t.Fatalf("the file does not load:\n%s", problemLines(problems))
			}
			var got []string
			for _, p := range problems {
				if p.Check == CheckUnknownSubKey {
					got = append(got, p.String())
				}
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("unknown_sub_key warnings:\n%s\nwant %q", problemLines(problems), c.want)
			}
		})
	}
}

// TestTrackerBlock_OnlyTheActiveKindsIsChecked: a block of another tracker kind, or a
// tracker block that is not a mapping, is kept as before, without a warning.
func TestTrackerBlock_OnlyTheActiveKindsIsChecked(t *testing.T) {
	for _, front := range []string{
		"tracker: {kind: file, path: i.json, active_states: [a]}\njira: {bogus: 1}\nagent: {kind: mock}\n",
		"tracker: {kind: jira, project: PROJ, api_key: u@x:t, endpoint: https://x.atlassian.net, active_states: [a]}\njira: cloud\nagent: {kind: mock}\n",
	} {
		cfg, problems, _ := checkFrontMatter(t, front, nil)
		if cfg == nil || len(problems) != 0 {
			t.Errorf("%s: want no problem, got:\n%s", front, problemLines(problems))
		}
	}
}

// TestTrackerKinds_AreTheRegistrysKinds: config learns the tracker kinds from the
// tracker registry, every adapter linked (internal/tracker/all), and each kind's
// declared keys are the keys its block accepts.
func TestTrackerKinds_AreTheRegistrysKinds(t *testing.T) {
	if got, want := TrackerKinds(), []string{"file", "github", "jira", "linear"}; !slices.Equal(got, want) {
		t.Errorf("TrackerKinds() = %v, want %v", got, want)
	}
	for _, k := range TrackerKinds() {
		if !isTrackerKind(k) {
			t.Errorf("%s is not registered", k)
		}
	}
	meta, _ := tracker.Lookup("jira")
	if got := strings.Join(meta.Options.Known(), ","); got != "api,page_size,timeout_ms" {
		t.Errorf("jira declares %s", got)
	}
}
