package agent

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"sortie/internal/runas"
)

// ReadOwnedFile reads a regular file of the agent's user, and refuses, naming the path
// and the fix, whatever the agent's user could plant to make the daemon read another
// file for it: a symbolic link, a hard link, another user's file, a FIFO (without
// blocking on it), a link in a directory of its own.
func TestReadOwnedFile(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "shadow") // stands in for /etc/shadow
	if err := os.WriteFile(secret, []byte("root:SECRET"), 0o600); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(dir, "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	own := filepath.Join(home, "auth.json")
	if err := os.WriteFile(own, []byte(`{"k":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	b, mtime, err := ReadOwnedFile(own, nil, 1<<20)
	if err != nil || string(b) != `{"k":1}` {
		t.Fatalf("the user's own file: %q, %v", b, err)
	}
	if fi, _ := os.Stat(own); !fi.ModTime().Equal(mtime) {
		t.Errorf("mtime = %v, want %v", mtime, fi.ModTime())
	}
	if _, _, err := ReadOwnedFile(filepath.Join(home, "none"), nil, 1<<20); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v, want fs.ErrNotExist", err)
	}
	if _, _, err := ReadOwnedFile(filepath.Join(home, "no", "auth.json"), nil, 1<<20); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing directory: %v, want fs.ErrNotExist", err)
	}
	if _, _, err := ReadOwnedFile(own, nil, 3); err == nil {
		t.Error("a file over the limit was read")
	}

	refused := func(path, want string) {
		t.Helper()
		b, _, err := ReadOwnedFile(path, nil, 1<<20)
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %q, %v; want a refusal naming it and saying %q", path, b, err, want)
		}
	}
	sym := filepath.Join(home, "sym.json")
	os.Symlink(secret, sym)
	refused(sym, "is a symbolic link")
	hard := filepath.Join(home, "hard.json")
	if err := os.Link(secret, hard); err == nil {
		refused(hard, "hard links")
	}
	fifo := filepath.Join(home, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o600); err == nil {
		refused(fifo, "not a regular file")
	}
	if os.Geteuid() != 0 {
		return
	}
	other := filepath.Join(home, "other.json")
	os.WriteFile(other, []byte("x"), 0o600)
	os.Chown(other, 54321, 54321)
	refused(other, "belongs to uid 54321")

	// agent.run_as: the daemon is root, the file must be the agent user's, and no link
	// in the agent user's directories is followed.
	u := &runas.User{Name: "nobody", UID: 65534, GID: 65534, Groups: []uint32{65534}}
	os.Chmod(dir, 0o755)
	agentHome := filepath.Join(dir, "agent")
	os.Mkdir(agentHome, 0o700)
	os.Chown(agentHome, 65534, 65534)
	mine := filepath.Join(agentHome, "auth.json")
	os.WriteFile(mine, []byte("mine"), 0o600)
	os.Chown(mine, 65534, 65534)
	if b, _, err := ReadOwnedFile(mine, u, 1<<20); err != nil || string(b) != "mine" {
		t.Errorf("the agent user's own file: %q, %v", b, err)
	}
	if _, _, err := ReadOwnedFile(own, u, 1<<20); err == nil || !strings.Contains(err.Error(), "uid 65534") {
		t.Errorf("root's file for the agent's user: %v, want a refusal", err)
	}
	// ~/.local -> a directory of root's, with a file given to the agent's user there.
	rootDir := filepath.Join(dir, "rootdir")
	os.Mkdir(rootDir, 0o700)
	given := filepath.Join(rootDir, "auth.json")
	os.WriteFile(given, []byte("behind root's directory"), 0o600)
	os.Chown(given, 65534, 65534)
	link := filepath.Join(agentHome, ".local")
	os.Symlink(rootDir, link)
	os.Lchown(link, 65534, 65534)
	if b, _, err := ReadOwnedFile(filepath.Join(link, "auth.json"), u, 1<<20); err == nil {
		t.Errorf("read %q through a link in the agent user's home", b)
	}
}
