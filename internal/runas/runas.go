// Package runas is the OS account local agents run as when the daemon runs as root and
// agent.run_as names another user (docs/security.md#running-agents-as-another-user):
// the account's ids and home, the credential its processes start with, the
// environment that names it, and the ownership and reachability checks that let it
// work in its workspaces and nowhere else.
package runas

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	_ "sortie/internal/platform" // Linux and macOS only
)

// User is an OS account. A nil *User is the daemon's own account: every method of a
// nil User leaves things as they are.
type User struct {
	Name   string
	UID    uint32
	GID    uint32   // primary group
	Groups []uint32 // supplementary groups, the primary one included
	Home   string
}

// Lookup finds the account spec names, a user name or a numeric uid. It refuses root
// (uid 0), which would separate nothing.
func Lookup(spec string) (*User, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return nil, errors.New("agent.run_as is empty")
	}
	u, err := user.Lookup(spec)
	if err != nil {
		if _, numeric := strconv.ParseUint(spec, 10, 32); numeric == nil {
			u, err = user.LookupId(spec)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("agent.run_as: no user %q on this machine (create it, e.g. useradd --create-home %s): %w", spec, spec, err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("agent.run_as: user %q has ids %s:%s, which are not numbers", spec, u.Uid, u.Gid)
	}
	if uid == 0 {
		return nil, fmt.Errorf("agent.run_as: %q is root; name an unprivileged user", spec)
	}
	out := &User{Name: u.Username, UID: uint32(uid), GID: uint32(gid), Home: u.HomeDir, Groups: []uint32{uint32(gid)}}
	if ids, err := u.GroupIds(); err == nil {
		for _, g := range ids {
			if n, err := strconv.ParseUint(g, 10, 32); err == nil && !slices.Contains(out.Groups, uint32(n)) {
				out.Groups = append(out.Groups, uint32(n))
			}
		}
	}
	return out, nil
}

// String names the account for logs: name(uid).
func (u *User) String() string {
	if u == nil {
		return "the daemon's user"
	}
	return fmt.Sprintf("%s(%d)", u.Name, u.UID)
}

// Credential is what a process of u starts with (exec.Cmd.SysProcAttr.Credential); nil
// for a nil User, which starts it as the daemon's user.
func (u *User) Credential() *syscall.Credential {
	if u == nil {
		return nil
	}
	return &syscall.Credential{Uid: u.UID, Gid: u.GID, Groups: slices.Clone(u.Groups)}
}

// Env returns env with HOME, USER and LOGNAME naming u, so that the agent CLI and the
// tools it runs keep their state in u's home, not the daemon's. env itself for a nil
// User.
func (u *User) Env(env []string) []string {
	if u == nil {
		return env
	}
	out := slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return k == "HOME" || k == "USER" || k == "LOGNAME"
	})
	return append(out, "HOME="+u.Home, "USER="+u.Name, "LOGNAME="+u.Name)
}

// Owns reports whether path (not followed if a link) belongs to u. Always true for a
// nil User.
func (u *User) Owns(path string) (bool, error) {
	if u == nil {
		return true, nil
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return false, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Uid == u.UID, nil
}

// Chown gives path (not followed if a link) to u. Nothing for a nil User.
func (u *User) Chown(path string) error {
	if u == nil {
		return nil
	}
	return os.Lchown(path, int(u.UID), int(u.GID))
}

// ChownTree gives the tree at root to u: a workspace made before agent.run_as was set,
// owned by the daemon's user. The tree is listed first, while u can change nothing in
// it, then each entry is given away deepest first, so that no directory is u's, and
// open to u's renames and links, while anything under it is still to be changed: no
// link u could plant redirects the walk outside root. Links are changed, never
// followed. Nothing for a nil User.
func (u *User) ChownTree(root string) error {
	if u == nil {
		return nil
	}
	var paths []string
	err := filepath.WalkDir(root, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		paths = append(paths, p)
		return nil
	})
	if err != nil {
		return fmt.Errorf("giving %s to %s: %w", root, u, err)
	}
	for i := len(paths) - 1; i >= 0; i-- {
		if err := u.Chown(paths[i]); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("giving %s to %s: %w", root, u, err)
		}
	}
	return nil
}

// Access is what CanReach checks u may do with a path.
type Access uint32

// Access bits, as in a file's mode.
const (
	Read  Access = 4
	Write Access = 2
	Exec  Access = 1 // run a file; search a directory
)

// CanReach reports, from the permission bits, whether u can reach path and do want
// with it: search every directory on the way, then want on path itself. It says which
// component stops u and how to fix it. (ACLs and mount options are not consulted.)
// nil for a nil User.
func (u *User) CanReach(path string, want Access) error {
	if u == nil {
		return nil
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	resolved, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return err
	}
	var dirs []string
	for d := filepath.Dir(resolved); ; d = filepath.Dir(d) {
		dirs = append(dirs, d)
		if d == filepath.Dir(d) {
			break
		}
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := u.may(dirs[i], Exec); err != nil {
			return err
		}
	}
	return u.may(resolved, want)
}

func (u *User) may(path string, want Access) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	perm := uint32(fi.Mode().Perm())
	var bits uint32
	switch {
	case st.Uid == u.UID:
		bits = perm >> 6
	case slices.Contains(u.Groups, st.Gid) || st.Gid == u.GID:
		bits = perm >> 3
	default:
		bits = perm
	}
	if bits&uint32(want) == uint32(want) {
		return nil
	}
	what := map[Access]string{Read: "read", Write: "write", Exec: "search"}[want]
	if want == Read|Exec {
		what = "read and run"
	}
	if want == Exec && !fi.IsDir() {
		what = "run"
	}
	if what == "" {
		what = fmt.Sprintf("use (%o)", want)
	}
	return fmt.Errorf("%s cannot %s %s (mode %s, owner %d:%d): give it access (e.g. chmod o+x on a directory on the way, or move the path out of root's home)",
		u, what, path, fi.Mode().Perm(), st.Uid, st.Gid)
}

// MkdirAll creates path and any missing parents with mode perm, as os.MkdirAll does,
// and gives each directory it creates to u: a CLI state directory the daemon makes
// before the CLI starts (Landlock grants only what exists) must be the agent's.
func (u *User) MkdirAll(path string, perm os.FileMode) error {
	if u == nil {
		return os.MkdirAll(path, perm)
	}
	var missing []string
	for d := filepath.Clean(path); ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil {
			break
		}
		missing = append(missing, d)
		if d == filepath.Dir(d) {
			break
		}
	}
	for i := len(missing) - 1; i >= 0; i-- {
		if err := os.Mkdir(missing[i], perm); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		if err := u.Chown(missing[i]); err != nil {
			return err
		}
	}
	return nil
}
