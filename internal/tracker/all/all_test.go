package all_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sortie/internal/tracker"
	_ "sortie/internal/tracker/all"
)

// TestKinds: every tracker adapter is linked, so config and the daemon know the same
// kinds.
func TestKinds(t *testing.T) {
	if got, want := tracker.Kinds(), []string{"file", "github", "jira", "linear"}; !slices.Equal(got, want) {
		t.Errorf("tracker.Kinds() = %v, want %v", got, want)
	}
}

// TestDocs_EveryDeclaredKeyIsDocumented keeps docs/trackers/<kind>.md in step with the
// keys each tracker declares for its block (tracker.Meta.Options): every key has a Doc
// line and is named on the page as `<kind>.<key>`.
func TestDocs_EveryDeclaredKeyIsDocumented(t *testing.T) {
	for _, kind := range tracker.Kinds() {
		meta, _ := tracker.Lookup(kind)
		page := filepath.Join("..", "..", "..", "docs", "trackers", kind+".md")
		doc, err := os.ReadFile(page)
		if err != nil {
			t.Errorf("%s: %v", kind, err)
			continue
		}
		for _, o := range meta.Options.Keys {
			if strings.TrimSpace(o.Doc) == "" {
				t.Errorf("%s.%s: the declaration has no Doc line", kind, o.Key)
			}
			if o.Retired == "" && !strings.Contains(string(doc), "`"+kind+"."+o.Key+"`") {
				t.Errorf("%s does not name `%s.%s`, a key the %s tracker declares", page, kind, o.Key, kind)
			}
		}
	}
}

// TestLabeler_EveryKindCanLabelAndSaysSo: every adapter implements tracker.Labeler (so
// escalating with a label works whatever the tracker), and its page documents it.
func TestLabeler_EveryKindCanLabelAndSaysSo(t *testing.T) {
	cfgs := map[string]tracker.Config{
		"file":   {Kind: "file", Options: map[string]any{"path": filepath.Join(t.TempDir(), "issues.json")}},
		"github": {Kind: "github", Project: "octo/hello", APIKey: "ghp_x"},
		"jira":   {Kind: "jira", Endpoint: "https://example.atlassian.net", Project: "PROJ", APIKey: "a@example.com:tok"},
		"linear": {Kind: "linear", Team: "ENG", APIKey: "lin_api_x"},
	}
	for _, kind := range tracker.Kinds() {
		cfg, ok := cfgs[kind]
		if !ok {
			t.Errorf("%s: no test configuration; add one", kind)
			continue
		}
		tr, err := tracker.New(cfg)
		if err != nil {
			t.Errorf("%s: %v", kind, err)
			continue
		}
		if _, ok := tracker.As[tracker.Labeler](tr); !ok {
			t.Errorf("%s: the adapter is not a tracker.Labeler", kind)
		}
		doc, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "trackers", kind+".md"))
		if err != nil || !strings.Contains(string(doc), "needs-human") {
			t.Errorf("docs/trackers/%s.md does not say how a label (needs-human) is added: %v", kind, err)
		}
	}
}
