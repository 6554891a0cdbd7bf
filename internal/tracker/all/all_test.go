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
