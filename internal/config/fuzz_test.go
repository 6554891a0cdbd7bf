package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func FuzzSplitFrontMatter(f *testing.F) {
	for _, s := range []string{
		"", "---", "---\n", "---\n---\n", "---\na: 1\n---\nbody", "\uFEFF---\r\na: 1\r\n---\r\n\r\nbody",
		"--- \t\nx\n---\t\n", "no front matter\n---\n", "---\nunclosed: true\n", " ---\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		doc := SplitFrontMatter(data)
		if doc.PromptLine < 1 {
			t.Errorf("PromptLine = %d, want >= 1", doc.PromptLine)
		}
		if doc.Prompt != strings.TrimSpace(doc.Prompt) {
			t.Errorf("Prompt is not trimmed: %q", doc.Prompt)
		}
		if doc.Closed && !doc.HasFrontMatter {
			t.Error("Closed without front matter")
		}
		if !doc.HasFrontMatter && (doc.FrontMatter != "" || doc.FrontMatterLine != 0) {
			t.Errorf("front matter reported without a delimiter: %+v", doc)
		}
		if doc.HasFrontMatter && !doc.Closed && doc.Prompt != "" {
			t.Errorf("unclosed front matter left a prompt: %q", doc.Prompt)
		}
		// The prompt's first line really is on line PromptLine of the normalised file.
		if doc.Prompt != "" {
			norm := strings.ReplaceAll(strings.TrimPrefix(string(data), "\uFEFF"), "\r\n", "\n")
			lines := strings.Split(norm, "\n")
			first, _, _ := strings.Cut(doc.Prompt, "\n")
			if doc.PromptLine > len(lines) || !strings.Contains(lines[doc.PromptLine-1], first) {
				t.Errorf("PromptLine %d does not hold the prompt's first line %q", doc.PromptLine, first)
			}
		}
		// Parsing the split must never panic either.
		_, _ = parseFrontMatter("/w/WORKFLOW.md", doc)
	})
}

func FuzzBuild(f *testing.F) {
	seeds := []string{
		minimal,
		"tracker: {kind: jira, api_key: $K, project: ${P}, active_states: [a], handoff_state: b, in_progress_state: a}\n",
		"agent: {kind: claude-code, max_turns: '5', max_concurrent_agents_by_state: {A: 1, b: x}}\n",
		"server: {port: 1e9, host: '::'}\nworker: {ssh_hosts: [a, a, '']}\ntoken_rates: {x: {input_per_mtok: .5}}\n",
		"hooks: {timeout_ms: -1}\ndb_path: ~/x\nworkspace: {root: $HOME/$NOPE}\n",
		"a: &a [*a]\n", "tracker: [1, 2]\n", "- x\n", "null\n", "1: 2\n",
	}
	if data, err := os.ReadFile(filepath.Join(examplesDir, "WORKFLOW.md")); err == nil {
		seeds = append(seeds, SplitFrontMatter(data).FrontMatter)
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	env := fakeEnv(map[string]string{"HOME": "/home/op", "TMPDIR": "/tmp", "K": "key", "P": "PRJ", "SORTIE_AGENT_MAX_TURNS": "4"})
	f.Fuzz(func(t *testing.T, data []byte) {
		var v any
		if err := unmarshalYAML(data, &v); err != nil {
			return
		}
		raw, ok := normalizeYAML(v).(map[string]any)
		if !ok {
			return
		}
		_ = secretEnv(raw)
		sources, _ := applyOverrides(raw, overrideLookup(env, map[string]string{"SORTIE_TRACKER_ACTIVE_STATES": "a,b"}))
		b := &builder{dir: "/w", env: env, sources: sources}
		cfg := b.build(raw)
		if hasErrors(b.problems) {
			return
		}
		for _, p := range b.problems {
			if p.Severity != SeverityWarning || p.Message == "" {
				t.Errorf("malformed problem: %+v", p)
			}
		}
		if cfg.Agent.MaxTurns < 1 || cfg.Agent.MaxConcurrentAgents < 1 || cfg.Polling.Interval <= 0 || cfg.Hooks.Timeout <= 0 {
			t.Errorf("a limit below its floor: %+v %+v", cfg.Agent, cfg.Polling)
		}
		if cfg.Server.Port < 0 || cfg.Server.Port > 65535 {
			t.Errorf("port %d out of range", cfg.Server.Port)
		}
		if !filepath.IsAbs(cfg.Workspace.Root) || !filepath.IsAbs(cfg.DBPath) {
			t.Errorf("relative path: root %q db %q", cfg.Workspace.Root, cfg.DBPath)
		}
	})
}
