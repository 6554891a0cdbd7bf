package sandbox

import (
	"path/filepath"
	"strings"
)

func containsSlash(s string) bool { return strings.Contains(s, "/") }

func splitList(path string) []string {
	if path == "" {
		return nil
	}
	return filepath.SplitList(path)
}
