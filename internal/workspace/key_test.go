package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestKey_Sanitisation(t *testing.T) {
	long := strings.Repeat("x", 300)
	tests := []struct {
		name       string
		identifier string
		want       string // exact key; "" when only the prefix is checked
		wantPrefix string
		hashed     bool
	}{
		{name: "safe identifier unchanged", identifier: "PROJ-1", want: "PROJ-1"},
		{name: "plain number unchanged", identifier: "42", want: "42"},
		{name: "dots and underscores unchanged", identifier: "a.b_c-d", want: "a.b_c-d"},
		{name: "three dots are a valid name", identifier: "...", want: "..."},
		{name: "slash replaced and hashed", identifier: "A/B", wantPrefix: "A_B-", hashed: true},
		{name: "path traversal neutralised", identifier: "../../etc", wantPrefix: ".._.._etc-", hashed: true},
		{name: "github style", identifier: "owner/repo#9", wantPrefix: "owner_repo_9-", hashed: true},
		{name: "unicode becomes one underscore per rune", identifier: "tâche-é", wantPrefix: "t_che-_-", hashed: true},
		{name: "spaces and NUL", identifier: "a b\x00c", wantPrefix: "a_b_c-", hashed: true},
		{name: "invalid utf-8 byte", identifier: "a\xffb", wantPrefix: "a_b-", hashed: true},
		{name: "very long safe identifier truncated", identifier: long, wantPrefix: strings.Repeat("x", MaxKeyLen-1-keyHashLen) + "-", hashed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Key(tt.identifier)
			if err != nil {
				t.Fatalf("Key(%q) error: %v", tt.identifier, err)
			}
			if tt.want != "" && got != tt.want {
				t.Errorf("Key(%q) = %q, want %q", tt.identifier, got, tt.want)
			}
			if tt.wantPrefix != "" && !strings.HasPrefix(got, tt.wantPrefix) {
				t.Errorf("Key(%q) = %q, want prefix %q", tt.identifier, got, tt.wantPrefix)
			}
			if tt.hashed && len(got) != len(tt.wantPrefix)+keyHashLen {
				t.Errorf("Key(%q) = %q, want prefix %q plus %d hex digits", tt.identifier, got, tt.wantPrefix, keyHashLen)
			}
			if len(got) > MaxKeyLen {
				t.Errorf("Key(%q) has %d bytes, want at most %d", tt.identifier, len(got), MaxKeyLen)
			}
			for _, r := range got {
				if !isKeyRune(r) {
					t.Errorf("Key(%q) = %q contains %q", tt.identifier, got, r)
				}
			}
			again, _ := Key(tt.identifier)
			if again != got {
				t.Errorf("Key(%q) not stable: %q then %q", tt.identifier, got, again)
			}
		})
	}
}

func TestKey_RejectsNamesThatAreNotDirectories(t *testing.T) {
	for _, id := range []string{"", ".", ".."} {
		if got, err := Key(id); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("Key(%q) = %q, %v; want ErrInvalidKey", id, got, err)
		}
	}
}

func TestKey_DistinctIdentifiersNeverShareADirectory(t *testing.T) {
	pairs := [][2]string{
		{"A/B", "A_B"},
		{"A/B", "A:B"},
		{"a b", "a_b"},
		{strings.Repeat("y", 200) + "1", strings.Repeat("y", 200) + "2"},
	}
	for _, p := range pairs {
		k1, err1 := Key(p[0])
		k2, err2 := Key(p[1])
		if err1 != nil || err2 != nil {
			t.Fatalf("Key errors: %v, %v", err1, err2)
		}
		if k1 == k2 {
			t.Errorf("Key(%q) == Key(%q) == %q, want distinct keys", p[0], p[1], k1)
		}
	}
}

// TestKey_KeepsSixtyFourBitsOfTheHash: two identifiers whose 32-bit hash prefixes
// collide (found by brute force, as a hostile issue author would) no longer share a
// workspace; with the old 8 hex digits they did.
func TestKey_KeepsSixtyFourBitsOfTheHash(t *testing.T) {
	if keyHashLen < 16 {
		t.Fatalf("keyHashLen = %d hex digits, want at least 16 (64 bits)", keyHashLen)
	}
	// Same sanitised name (x and 24 underscores), same first 8 hex digits.
	a, b := "x/:/::::////::://////////", "x::://:///::///://///////"
	if la, lb := legacyKey(a), legacyKey(b); la != lb {
		t.Fatalf("the fixture no longer collides under the old scheme: %q, %q", la, lb)
	}
	ka, _ := Key(a)
	kb, _ := Key(b)
	if ka == kb {
		t.Errorf("Key(%q) == Key(%q) == %q", a, b, ka)
	}
	if prefix := "x" + strings.Repeat("_", 24) + "-"; !strings.HasPrefix(ka, prefix) || len(ka) != len(prefix)+16 {
		t.Errorf("Key(%q) = %q, want the sanitised name, a dash and 16 hex digits", a, ka)
	}
	if legacyKey("PROJ-1") != "" {
		t.Error("an identifier that needs no hash has a legacy name")
	}
}

// TestPrepare_AdoptsWorkspaceOfTheOldName: after an upgrade, an issue's workspace
// named with the 32-bit hash is renamed to its new name on the issue's next run:
// neither orphaned nor duplicated, its files kept.
func TestPrepare_AdoptsWorkspaceOfTheOldName(t *testing.T) {
	root := t.TempDir()
	id := "owner/repo#9"
	old := filepath.Join(root, legacyKey(id))
	if err := os.MkdirAll(filepath.Join(old, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(old, "src", "work.go"), []byte("package x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// An identifier whose old name is the same (found by brute force, as 32 bits allow)
	// but whose runs never worked there does not take the workspace over.
	var asked []string
	owner := func(is Issue, oldPath string) bool {
		asked = append(asked, is.ID)
		return is.ID == "9" && oldPath == old
	}
	m, err := New(Config{Root: root, Hooks: Hooks{AfterCreate: "touch created-now"}, LegacyOwner: owner})
	if err != nil {
		t.Fatal(err)
	}
	if moved, err := AdoptLegacy(root, id, filepath.Join(root, "someone-else"), func(string) bool { return false }); moved != "" || err != nil {
		t.Fatalf("AdoptLegacy without the owner's confirmation = %q, %v; want nothing moved", moved, err)
	}
	if _, err := os.Stat(filepath.Join(old, "src", "work.go")); err != nil {
		t.Fatalf("the old workspace moved without its owner's confirmation: %v", err)
	}
	ws, err := m.Prepare(t.Context(), Issue{ID: "9", Identifier: id}, 0)
	if err != nil {
		t.Fatal(err)
	}
	key, _ := Key(id)
	if ws.Path != filepath.Join(root, key) || ws.CreatedNow {
		t.Errorf("Prepare = %+v, want the existing workspace under its new name %s", ws, key)
	}
	if _, err := os.Stat(filepath.Join(ws.Path, "src", "work.go")); err != nil {
		t.Errorf("the old workspace's files did not move with it: %v", err)
	}
	if _, err := os.Stat(filepath.Join(ws.Path, "created-now")); err == nil {
		t.Error("after_create ran again on an adopted workspace")
	}
	if _, err := os.Lstat(old); err == nil {
		t.Errorf("%s is still there beside the new name", old)
	}
	// A link of the old name is neither followed nor moved.
	id2 := "owner/repo#10"
	target := t.TempDir()
	if err := os.Symlink(target, filepath.Join(root, legacyKey(id2))); err != nil {
		t.Fatal(err)
	}
	if len(asked) != 1 || asked[0] != "9" {
		t.Errorf("LegacyOwner asked for %q, want issue 9 once", asked)
	}
	if moved, err := AdoptLegacy(root, id2, filepath.Join(root, "new"), func(string) bool { return true }); moved != "" || err != nil {
		t.Errorf("AdoptLegacy of a link = %q, %v", moved, err)
	}
}

func FuzzKey(f *testing.F) {
	for _, s := range []string{"PROJ-1", "../x", "A/B", "é", ".", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		k, err := Key(id)
		if err != nil {
			return
		}
		if k == "" || k == "." || k == ".." || len(k) > MaxKeyLen || strings.ContainsAny(k, "/\x00") {
			t.Fatalf("Key(%q) = %q is not a safe directory name", id, k)
		}
	})
}
