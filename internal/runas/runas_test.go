package runas

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

func TestLookup_RefusesRootAndNamesAMissingUser(t *testing.T) {
	if _, err := Lookup("root"); err == nil || !strings.Contains(err.Error(), "is root") {
		t.Errorf("Lookup(root) = %v, want a refusal", err)
	}
	if _, err := Lookup("0"); err == nil || !strings.Contains(err.Error(), "is root") {
		t.Errorf("Lookup(0) = %v, want a refusal", err)
	}
	if _, err := Lookup("no-such-user-sortie"); err == nil || !strings.Contains(err.Error(), "useradd") {
		t.Errorf("Lookup of a missing user = %v, want an error saying how to create it", err)
	}
	if _, err := Lookup(" "); err == nil {
		t.Error("Lookup of a blank name succeeded")
	}
}

func TestLookup_ByNameAndByUID(t *testing.T) {
	byName, err := Lookup("nobody")
	if err != nil {
		t.Skipf("skipped: this machine has no user nobody: %v", err)
	}
	byID, err := Lookup(byName.String()[len("nobody(") : len(byName.String())-1])
	if err != nil || byID.UID != byName.UID || byID.Home != byName.Home {
		t.Fatalf("Lookup by uid = %+v, %v; by name %+v", byID, err, byName)
	}
	if !slices.Contains(byName.Groups, byName.GID) {
		t.Errorf("groups %v lack the primary group %d", byName.Groups, byName.GID)
	}
	cred := byName.Credential()
	if cred.Uid != byName.UID || cred.Gid != byName.GID {
		t.Errorf("Credential = %+v", cred)
	}
}

func TestNilUser_ChangesNothing(t *testing.T) {
	var u *User
	env := []string{"HOME=/root", "PATH=/bin"}
	if got := u.Env(env); !slices.Equal(got, env) || u.Credential() != nil {
		t.Errorf("nil User: Env %v, Credential %v", got, u.Credential())
	}
	dir := t.TempDir()
	if err := u.Chown(dir); err != nil {
		t.Error(err)
	}
	if err := u.CanReach("/nonexistent/x", Read); err != nil {
		t.Errorf("nil User CanReach: %v", err)
	}
	if err := u.MkdirAll(filepath.Join(dir, "a", "b"), 0o700); err != nil {
		t.Error(err)
	}
}

func TestEnv_NamesTheUser(t *testing.T) {
	u := &User{Name: "agent", UID: 1234, GID: 1234, Home: "/home/agent"}
	got := u.Env([]string{"HOME=/root", "USER=root", "LOGNAME=root", "PATH=/bin"})
	want := []string{"PATH=/bin", "HOME=/home/agent", "USER=agent", "LOGNAME=agent"}
	if !slices.Equal(got, want) {
		t.Errorf("Env = %v, want %v", got, want)
	}
}

// TestCanReach_ReadsThePermissionBits: a user that is not a file's owner nor in its
// group gets the "other" bits, on every directory on the way and on the file.
func TestCanReach_ReadsThePermissionBits(t *testing.T) {
	stranger := &User{Name: "stranger", UID: 4000001, GID: 4000001, Groups: []uint32{4000001}}
	dir := t.TempDir()
	os.Chmod(filepath.Dir(dir), 0o755)
	os.Chmod(dir, 0o755)
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o700)
	f := filepath.Join(dir, "f")
	os.WriteFile(f, []byte("x"), 0o644)
	if err := stranger.CanReach(f, Read); err != nil {
		t.Errorf("a 0644 file in 0755 directories: %v", err)
	}
	if err := stranger.CanReach(f, Write); err == nil {
		t.Error("a stranger may write a 0644 file")
	}
	inner := filepath.Join(sub, "g")
	os.WriteFile(inner, []byte("x"), 0o644)
	err := stranger.CanReach(inner, Read)
	if err == nil || !strings.Contains(err.Error(), "cannot search "+sub) {
		t.Errorf("a file under a 0700 directory: %v, want the directory named", err)
	}
	// The owner's bits apply to the owner.
	st, _ := os.Stat(sub)
	owner := &User{Name: "owner", UID: st.Sys().(*syscall.Stat_t).Uid, GID: 4000002}
	if err := owner.CanReach(inner, Read); err != nil {
		t.Errorf("the owner: %v", err)
	}
}

// TestChownTree_GivesEverythingAwayWithoutFollowingLinks needs root.
func TestChownTree_GivesEverythingAwayWithoutFollowingLinks(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipped: changing owners needs root")
	}
	u := &User{Name: "x", UID: 4000003, GID: 4000003}
	outside := filepath.Join(t.TempDir(), "outside")
	os.WriteFile(outside, []byte("x"), 0o644)
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "a", "b"), 0o755)
	os.WriteFile(filepath.Join(root, "a", "b", "f"), []byte("x"), 0o644)
	os.Symlink(outside, filepath.Join(root, "a", "link"))
	if err := u.ChownTree(root); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{root, filepath.Join(root, "a"), filepath.Join(root, "a", "b", "f"), filepath.Join(root, "a", "link")} {
		if ok, err := u.Owns(p); !ok || err != nil {
			t.Errorf("%s not given to the user (%v)", p, err)
		}
	}
	if ok, _ := u.Owns(outside); ok {
		t.Error("the link's target outside the tree was given away")
	}
	made := filepath.Join(root, "new", "deeper")
	if err := u.MkdirAll(made, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(root, "new"), made} {
		if ok, _ := u.Owns(p); !ok {
			t.Errorf("MkdirAll did not give %s to the user", p)
		}
	}
}
