package config

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// symphonyCurrent is Symphony's WORKFLOW.md as its main branch has it since its generic
// tracker interface (2026-07-17), kept byte for byte beside the end-to-end test that
// runs it (cmd/sortie/testdata/symphony-2026-07-17/SOURCE.md says where it is from).
const symphonyCurrent = "../../cmd/sortie/testdata/symphony-2026-07-17/WORKFLOW.md"

// Symphony's current file keeps its Linear settings under tracker.provider: it loads
// with no problem, and the provider's project_slug scopes the tracker.
func TestSymphonyCurrentWorkflow_LoadsUnchanged(t *testing.T) {
	path, err := filepath.Abs(symphonyCurrent)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the kept Symphony file is missing: %v", err)
	}
	env := baseEnv()
	env[LinearAPIKeyEnv] = "lin_api_test"
	cfg, problems := Check(path, Options{Env: fakeEnv(env)})
	if cfg == nil || len(problems) > 0 {
		t.Fatalf("Check: want no problems, got:\n%s", problemLines(problems))
	}
	tr := cfg.Tracker
	if tr.Kind != "linear" || tr.Project != "symphony-0c79b11b75ea" || tr.APIKey != "lin_api_test" || tr.Endpoint != DefaultLinearEndpoint {
		t.Errorf("Tracker = %+v", tr)
	}
	if !reflect.DeepEqual(tr.BlockedStates, []string{"Todo"}) {
		t.Errorf("BlockedStates = %#v, want Symphony's [Todo]", tr.BlockedStates)
	}
	if cfg.Agent.Kind != "codex" {
		t.Errorf("Agent.Kind = %q, want codex", cfg.Agent.Kind)
	}
}

func TestTrackerProvider_LinearSettings(t *testing.T) {
	const head = "tracker:\n  kind: linear\n"
	t.Run("provider keys are read, $VARs resolved and kept from agents", func(t *testing.T) {
		cfg, _ := mustLoad(t, head+"  provider:\n    endpoint: $LIN_URL\n    api_key: $MY_LINEAR\n    project_slug: proj-1\n    assignee: me\n",
			map[string]string{"LIN_URL": "http://127.0.0.1:9/graphql", "MY_LINEAR": "k"})
		tr := cfg.Tracker
		if tr.Endpoint != "http://127.0.0.1:9/graphql" || tr.APIKey != "k" || tr.Project != "proj-1" || tr.Assignee != "me" {
			t.Errorf("Tracker = %+v", tr)
		}
		for _, v := range []string{"MY_LINEAR", "LIN_URL", LinearAPIKeyEnv} {
			if !slices.Contains(cfg.SecretEnv, v) {
				t.Errorf("SecretEnv = %v, want %s in it", cfg.SecretEnv, v)
			}
		}
	})
	t.Run("team_key under provider", func(t *testing.T) {
		cfg, _ := mustLoad(t, head+"  provider: {team_key: ENG}\n", map[string]string{LinearAPIKeyEnv: "k"})
		if cfg.Tracker.Team != "ENG" {
			t.Errorf("Team = %q", cfg.Tracker.Team)
		}
	})
	t.Run("the same value both ways is fine", func(t *testing.T) {
		cfg, _ := mustLoad(t, head+"  project_slug: p\n  provider: {project_slug: p}\n", map[string]string{LinearAPIKeyEnv: "k"})
		if cfg.Tracker.Project != "p" {
			t.Errorf("Project = %q", cfg.Tracker.Project)
		}
	})
	t.Run("different values both ways name both keys", func(t *testing.T) {
		_, problems, _ := checkFrontMatter(t, head+"  project_slug: old\n  provider: {project_slug: new, assignee: a@example.com}\n  assignee: b@example.com\n",
			map[string]string{LinearAPIKeyEnv: "k"})
		for _, key := range []string{"project_slug", "assignee"} {
			if !slices.ContainsFunc(problems, func(p Problem) bool {
				return p.IsError() && p.Field == "tracker.provider."+key && strings.Contains(p.Message, "tracker."+key)
			}) {
				t.Errorf("no error naming tracker.provider.%s and tracker.%s:\n%s", key, key, problemLines(problems))
			}
		}
	})
	t.Run("a conflicting key is never shown", func(t *testing.T) {
		_, problems, _ := checkFrontMatter(t, head+"  project_slug: p\n  api_key: flat-secret\n  provider: {api_key: provider-secret}\n", nil)
		lines := problemLines(problems)
		if !strings.Contains(lines, "tracker.provider.api_key") || strings.Contains(lines, "secret") {
			t.Errorf("want an error on tracker.provider.api_key that shows neither key:\n%s", lines)
		}
	})
	t.Run("an override of the flat key wins", func(t *testing.T) {
		env := baseEnv()
		env[LinearAPIKeyEnv] = "k"
		env["SORTIE_TRACKER_ENDPOINT"] = "http://127.0.0.1:7/graphql"
		dir := t.TempDir()
		path := writeFile(t, dir, "WORKFLOW.md", "---\n"+head+"  provider: {endpoint: 'https://api.linear.app/graphql', project_slug: p}\n---\nDo it\n")
		cfg, problems := Check(path, Options{Env: fakeEnv(env)})
		if cfg == nil || cfg.Tracker.Endpoint != "http://127.0.0.1:7/graphql" {
			t.Errorf("Endpoint with SORTIE_TRACKER_ENDPOINT set: %+v\n%s", cfg, problemLines(problems))
		}
	})
	t.Run("unknown provider keys warn for linear", func(t *testing.T) {
		_, problems, _ := checkFrontMatter(t, head+"  provider: {project_slug: p, board: 7}\n", map[string]string{LinearAPIKeyEnv: "k"})
		if !slices.ContainsFunc(problems, func(p Problem) bool { return !p.IsError() && p.Field == "tracker.provider.board" }) {
			t.Errorf("no warning on tracker.provider.board:\n%s", problemLines(problems))
		}
	})
}

func TestTrackerBlockedStates(t *testing.T) {
	const file = "tracker:\n  kind: file\n  path: i.json\n  active_states: [Todo, In Progress]\n"
	cfg, _ := mustLoad(t, file, nil)
	if cfg.Tracker.BlockedStates != nil {
		t.Errorf("Sortie's default BlockedStates = %#v, want nil (every active state)", cfg.Tracker.BlockedStates)
	}
	cfg, _ = mustLoad(t, file+"  blocked_states: [Todo]\n", nil)
	if !reflect.DeepEqual(cfg.Tracker.BlockedStates, []string{"Todo"}) {
		t.Errorf("BlockedStates = %#v", cfg.Tracker.BlockedStates)
	}
	cfg, _ = mustLoad(t, file+"  blocked_states: []\n", nil)
	if cfg.Tracker.BlockedStates == nil || len(cfg.Tracker.BlockedStates) != 0 {
		t.Errorf("an empty list: BlockedStates = %#v, want empty, not nil", cfg.Tracker.BlockedStates)
	}
	_, problems, _ := checkFrontMatter(t, file+"  blocked_states: [Backlog]\n", nil)
	if !slices.ContainsFunc(problems, func(p Problem) bool { return !p.IsError() && p.Field == "tracker.blocked_states[0]" }) {
		t.Errorf("no warning on a blocked state that is not active:\n%s", problemLines(problems))
	}
	// A Symphony file (codex: block, no agent.kind) waits only in Todo, unless it says.
	cfg, _ = mustLoad(t, file+"codex: {command: codex app-server}\n", nil)
	if !reflect.DeepEqual(cfg.Tracker.BlockedStates, []string{"Todo"}) {
		t.Errorf("Symphony file: BlockedStates = %#v, want [Todo]", cfg.Tracker.BlockedStates)
	}
	cfg, _ = mustLoad(t, file+"  blocked_states: [Todo, In Progress]\ncodex: {command: codex app-server}\n", nil)
	if len(cfg.Tracker.BlockedStates) != 2 {
		t.Errorf("Symphony file with blocked_states: %#v", cfg.Tracker.BlockedStates)
	}
}
