package session

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestLoadOrCreateKey_CreatesOwnerOnlyKeyAndReadsItBack(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "session.key")
	key, err := LoadOrCreateKey(path)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if len(key) != KeySize || bytes.Equal(key, make([]byte, KeySize)) {
		t.Fatalf("key = %x, want %d random bytes", key, KeySize)
	}
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 || !fi.Mode().IsRegular() {
		t.Fatalf("key file mode = %s, want -rw-------", fi.Mode())
	}
	di, _ := os.Stat(filepath.Dir(path))
	if di.Mode().Perm() != 0o700 {
		t.Fatalf("key directory mode = %s, want drwx------", di.Mode())
	}
	again, err := LoadOrCreateKey(path)
	if err != nil || !bytes.Equal(again, key) {
		t.Fatalf("reload = %x, %v; want the same key", again, err)
	}
	if leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".*tmp*")); len(leftovers) != 0 {
		t.Fatalf("temporary files left behind: %v", leftovers)
	}
}

func TestLoadOrCreateKey_ConcurrentCreatorsAgreeOnOneKey(t *testing.T) {
	for range 20 {
		path := filepath.Join(t.TempDir(), "session.key")
		const n = 4
		keys := make([][]byte, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { keys[i], errs[i] = LoadOrCreateKey(path) })
		}
		wg.Wait()
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("creator %d: %v", i, errs[i])
			}
			if !bytes.Equal(keys[i], keys[0]) {
				t.Fatalf("creator %d got key %x, creator 0 got %x: two keys were created", i, keys[i], keys[0])
			}
		}
	}
}

func TestLoadOrCreateKey_RefusesUnsafeFiles(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.key")
	if err := os.WriteFile(good, bytes.Repeat([]byte{7}, KeySize), 0o600); err != nil {
		t.Fatal(err)
	}
	readable := filepath.Join(dir, "readable.key")
	if err := os.WriteFile(readable, bytes.Repeat([]byte{7}, KeySize), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(readable, 0o644); err != nil { // not subject to umask
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.key")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	short := filepath.Join(dir, "short.key")
	if err := os.WriteFile(short, []byte("tooshort"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, path, want string
	}{
		{"group/world readable", readable, "chmod 600"},
		{"symlink", link, "symbolic link"},
		{"directory", dir, "not a regular file"},
		{"wrong size", short, "holds 8 bytes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			key, err := LoadOrCreateKey(tc.path)
			if err == nil {
				t.Fatalf("LoadOrCreateKey(%s) = %x, want refusal", tc.path, key)
			}
			if !strings.Contains(err.Error(), tc.path) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not name the file and %q", err, tc.want)
			}
		})
	}
	// The symlink's target was not replaced or altered.
	if b, _ := os.ReadFile(good); !bytes.Equal(b, bytes.Repeat([]byte{7}, KeySize)) {
		t.Fatal("symlink target was modified")
	}
}

func TestLoadOrCreateKey_DanglingSymlinkIsNotReplaced(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(dir, "session.key")
	target := filepath.Join(dir, "elsewhere")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOrCreateKey(link); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("dangling symlink: error = %v, want refusal", err)
	}
	if _, err := os.Lstat(target); !os.IsNotExist(err) {
		t.Fatalf("a key was written through the symlink to %s", target)
	}
}
