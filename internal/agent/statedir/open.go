package statedir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"sortie/internal/agent"
	"sortie/internal/runas"
)

// opened is a state directory open for Sortie's use: root, below which nothing leads
// out of it, and the directory it is the entry name of, parent, through which it is
// renamed or removed.
type opened struct {
	root   *os.Root
	parent *os.File
	name   string
	path   string // parent's path, with no link in it, joined with name
	made   bool   // open made the directory: it is empty, and nothing but Sortie had it
}

// Close closes the directory and its parent.
func (o *opened) Close() {
	o.root.Close()
	o.parent.Close()
}

// open opens the state directory dir. Its parent is opened by agent.OpenDir, which
// follows no link the agent's user could have planted on the way and refuses a
// directory of another user's there; with create, the missing directories are made,
// 0700 and the agent user's. dir itself is never reached through a link, whoever owns
// its parent; with create it is made the same way when missing. It must be private to
// the agent's user (owner, or the daemon's user when nil): that user's, with no access
// for group or others, for it holds what resumes the sessions and, with a
// login, the login. A missing dir (or parent) is an error matching fs.ErrNotExist.
func open(dir string, owner *runas.User, create bool) (*opened, error) {
	dir = filepath.Clean(dir)
	parent, err := agent.OpenDir(filepath.Dir(dir), owner, create)
	if err != nil {
		return nil, err
	}
	o := &opened{parent: parent, name: filepath.Base(dir)}
	o.path = filepath.Join(parent.Name(), o.name)
	d, made, err := openLeaf(parent, o.name, owner, create)
	o.made = made
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
		err = fmt.Errorf("%s is not a directory (a link?); Sortie does not follow it: remove it, and Sortie makes the directory anew", dir)
	} else if err != nil {
		err = &os.PathError{Op: "open", Path: dir, Err: err}
	}
	if err == nil {
		err = checkPrivate(d, dir, owner)
		if err == nil {
			o.root, err = openRoot(d, o.path)
		}
		d.Close()
	}
	if err != nil {
		parent.Close()
		return nil, err
	}
	return o, nil
}

// openLeaf opens the directory name in parent without following a link. With create
// a missing one is made, 0700 and the agent user's, and made says so.
func openLeaf(parent *os.File, name string, owner *runas.User, create bool) (d *os.File, made bool, err error) {
	const flags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	pfd := int(parent.Fd())
	fd, err := unix.Openat(pfd, name, flags, 0)
	if errors.Is(err, unix.ENOENT) && create {
		err = unix.Mkdirat(pfd, name, 0o700)
		if err != nil && !errors.Is(err, unix.EEXIST) {
			return nil, false, err
		}
		made = err == nil
		if fd, err = unix.Openat(pfd, name, flags, 0); err == nil && made {
			err = agent.GiveDir(fd, owner)
			if err != nil {
				unix.Close(fd)
			}
		}
	}
	if err != nil {
		return nil, false, err
	}
	return os.NewFile(uintptr(fd), filepath.Join(parent.Name(), name)), made, nil
}

// checkPrivate refuses the directory d (at dir) unless it is the agent user's alone:
// another user (who could have made it beforehand in a shared directory), or group or
// others, could read its transcripts and the login, or plant what the CLI loads.
func checkPrivate(d *os.File, dir string, owner *runas.User) error {
	var st unix.Stat_t
	if err := unix.Fstat(int(d.Fd()), &st); err != nil {
		return &os.PathError{Op: "stat", Path: dir, Err: err}
	}
	uid := agent.AgentUID(owner)
	if int(st.Uid) != uid || st.Mode&0o077 != 0 {
		return fmt.Errorf("%s belongs to uid %d with mode %#o; it must belong to the agent's user (uid %d) with no access for group or others: remove it (Sortie makes it), or chown %d and chmod 700 it if it is yours",
			dir, st.Uid, st.Mode&0o777, uid, uid)
	}
	return nil
}

// openRoot is the directory d, at path, as an os.Root, checked to be the very directory
// d is, whatever happened to its path since d was opened.
func openRoot(d *os.File, path string) (*os.Root, error) {
	r, err := os.OpenRoot(path)
	if err != nil {
		return nil, err
	}
	a, err1 := d.Stat()
	b, err2 := r.Stat(".")
	if err := errors.Join(err1, err2); err != nil {
		r.Close()
		return nil, err
	}
	if !os.SameFile(a, b) {
		r.Close()
		return nil, fmt.Errorf("%s changed while Sortie opened it", path)
	}
	return r, nil
}
