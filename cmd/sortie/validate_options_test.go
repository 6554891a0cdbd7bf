package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"sortie/internal/agent"
)

// TestValidate_AdapterOptionsComeFromTheRegistry: `sortie validate` accepts every key an
// agent adapter declares (agent.Meta.Options), set to its default, and reports a key the
// adapter does not declare: a warning, or an error when the adapter's set is Strict.
// The keys come from the registry, so a key added to an adapter needs no edit here, in
// config or in validate.
func TestValidate_AdapterOptionsComeFromTheRegistry(t *testing.T) {
	t.Parallel()
	kinds := agent.Kinds()
	if len(kinds) == 0 {
		t.Fatal("no agent adapter is registered in the sortie binary's test")
	}
	for _, kind := range kinds {
		meta, _ := agent.Lookup(kind)
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			if len(meta.Options.Known()) == 0 {
				t.Fatalf("the %s adapter declares no option keys", kind)
			}
			for _, key := range meta.Options.Known() {
				opt, _ := meta.Options.Lookup(key)
				v := validateAdapterBlock(t, kind, map[string]any{key: opt.Default})
				if !v.Valid || mentions(v.Errors, kind+"."+key) || mentions(v.Warnings, kind+"."+key) {
					t.Errorf("%s.%s: %v, its default, want it accepted without a problem naming it; got %+v", kind, key, opt.Default, v)
				}
			}

			const undeclared = "sortie_undeclared_key"
			v := validateAdapterBlock(t, kind, map[string]any{undeclared: "x"})
			want, other := v.Warnings, v.Errors
			if meta.Options.Strict {
				want, other = v.Errors, v.Warnings
			}
			if v.Valid == meta.Options.Strict || !mentions(want, kind+"."+undeclared) || mentions(other, kind+"."+undeclared) {
				t.Errorf("%s.%s, undeclared: want one %s naming it (strict: %v), got %+v", kind, undeclared,
					map[bool]string{true: "error", false: "warning"}[meta.Options.Strict], meta.Options.Strict, v)
			}
		})
	}
}

// validateAdapterBlock runs `sortie validate --format json` on a WORKFLOW.md with the
// file tracker, agent.kind kind and block as the adapter's top-level block.
func validateAdapterBlock(t *testing.T, kind string, block map[string]any) validateJSON {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, dir, "issues.json", "[]\n")
	// JSON is YAML: the front matter is written as one JSON object.
	front, err := json.Marshal(map[string]any{
		"tracker": map[string]any{"kind": "file", "path": "issues.json", "active_states": []string{"Todo"}, "terminal_states": []string{"Done"}},
		"agent":   map[string]any{"kind": kind},
		kind:      block,
	})
	if err != nil {
		t.Fatal(err)
	}
	wf := writeFile(t, dir, "WORKFLOW.md", "---\n"+string(front)+"\n---\nWork on {{ .issue.identifier }}.\n")
	return parseValidateJSON(t, runSortie(t, "", testEnv(t.TempDir()), "validate", "--format", "json", filepath.Clean(wf)))
}

// mentions reports whether a problem names path, as its field or in its message.
func mentions(ps []problemJSON, path string) bool {
	for _, p := range ps {
		if p.Field == path || strings.Contains(p.Message, path+":") || strings.Contains(p.Message, path+" ") {
			return true
		}
	}
	return false
}
