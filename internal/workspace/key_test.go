package workspace

import (
	"errors"
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
