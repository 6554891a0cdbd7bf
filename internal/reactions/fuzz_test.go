package reactions

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzReadBranch: .sortie/scm.json and .git/HEAD are the agent's files. Whatever they
// hold, reading them ends in a branch of one line, or none, and never panics.
func FuzzReadBranch(f *testing.F) {
	f.Add([]byte(`{"branch":"fix/x","pr_number":3}`), []byte("ref: refs/heads/main\n"))
	f.Add([]byte(`{"branch":""}`), []byte("ref: refs/heads/a\nref: refs/heads/b"))
	f.Add([]byte(`[]`), []byte("1f3a9c0e2b7d4e1f3a9c0e2b7d4e1f3a9c0e2b7d\n"))
	f.Add([]byte(`{"branch":"a\nb","pr_number":-4}`), []byte{})
	f.Fuzz(func(t *testing.T, scm, head []byte) {
		ws := t.TempDir()
		if len(scm) > 0 {
			os.MkdirAll(filepath.Join(ws, ".sortie"), 0o755)
			os.WriteFile(filepath.Join(ws, ".sortie", "scm.json"), scm, 0o644)
		}
		os.MkdirAll(filepath.Join(ws, ".git"), 0o755)
		os.WriteFile(filepath.Join(ws, ".git", "HEAD"), head, 0o644)
		branch, pr, err := readBranch(ws)
		if err != nil && branch != "" {
			t.Fatalf("branch %q with error %v", branch, err)
		}
		if pr < 0 {
			t.Fatalf("pr = %d", pr)
		}
		if branch != strings.TrimSpace(branch) || strings.ContainsAny(branch, "\n\r\x00") {
			t.Fatalf("branch %q is not one trimmed line", branch)
		}
	})
}
