package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestGotValue(t *testing.T) {
	tests := []struct {
		in   any
		want string
	}{
		{nil, "null"}, {"x", `"x"`}, {true, "true"}, {1.5, "1.5"}, {3, "3"},
		{[]any{}, "a list"}, {map[string]any{}, "a map"},
	}
	for _, tt := range tests {
		if got := gotValue(tt.in); got != tt.want {
			t.Errorf("gotValue(%#v) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := gotType(42); got != "an integer" {
		t.Errorf("gotType(42) = %q, want %q", got, "an integer")
	}
}

func TestLoad_OversizedFileIsRefused(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "WORKFLOW.md")
	big := "---\n" + minimal + "---\n" + strings.Repeat("x", maxWorkflowSize)
	if err := os.WriteFile(path, []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path, Options{Env: fakeEnv(baseEnv())})
	if want := "config: " + path + ": file is larger than 4 MiB"; err == nil || err.Error() != want {
		t.Errorf("error = %v, want %q", err, want)
	}
}

func TestTrackerKindsAreASortedCopy(t *testing.T) {
	kinds := TrackerKinds()
	if !slices.IsSorted(kinds) || len(kinds) == 0 {
		t.Errorf("tracker kinds %v are not a sorted, non-empty list", kinds)
	}
	kinds[0] = "changed"
	if TrackerKinds()[0] == "changed" {
		t.Error("changing the returned slice changed the package's list")
	}
}
