package agent

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"sortie/internal/runas"
)

// Paths the agent user controls. With agent.run_as the daemon is root and the agent's
// user owns its home, its cache and what the CLIs keep there (a login included): a link
// it plants there must never lead the daemon's reads or writes elsewhere (to the
// daemon's env file, /etc/shadow, another user's files), into a directory the agent
// can read. So these paths are walked one directory at a time, by file descriptor,
// without following a link in any directory someone other than root or the daemon's
// user could write, and what is found is checked by its owner.

// maxLinks bounds the links followed while walking one path, as the kernel's own 40.
const maxLinks = 40

// AgentUID is the uid the agent runs as: owner's (agent.run_as), or the daemon's own.
func AgentUID(owner *runas.User) int {
	if owner == nil {
		return os.Geteuid()
	}
	return int(owner.UID)
}

// OpenDir opens the directory at the absolute path dir. Missing directories are
// created when create is set: mode 0700, owned by the agent's user. A link is followed
// only in a directory owned by root or the daemon's user that no one else can write
// (and, with agent.run_as, not owned by the agent's user); every directory on the way
// must belong to root, the daemon's user or the agent's user. The error names the
// path and what to do.
func OpenDir(dir string, owner *runas.User, create bool) (*os.File, error) {
	if !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("%s is not an absolute path", dir)
	}
	uid := AgentUID(owner)
	links := 0
restart:
	fd, err := unix.Open("/", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: "/", Err: err}
	}
	done := "/"
	parts := strings.Split(strings.TrimPrefix(filepath.Clean(dir), "/"), "/")
	for i, name := range parts {
		if name == "" {
			continue
		}
		at := filepath.Join(done, name)
		next, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) && create {
			if err = unix.Mkdirat(fd, name, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
				unix.Close(fd)
				return nil, &os.PathError{Op: "mkdir", Path: at, Err: err}
			}
			created := err == nil
			next, err = unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err == nil && created {
				err = GiveDir(next, owner)
			}
		}
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.EMLINK) {
			target, lerr := trustedLink(fd, name, owner)
			unix.Close(fd)
			if lerr != nil {
				return nil, fmt.Errorf("%s: %w", at, lerr)
			}
			if links++; links > maxLinks {
				return nil, &os.PathError{Op: "open", Path: dir, Err: unix.ELOOP}
			}
			if !filepath.IsAbs(target) {
				target = filepath.Join(done, target) // done holds no link: ".." is textual
			}
			dir = filepath.Join(append([]string{target}, parts[i+1:]...)...)
			goto restart
		}
		unix.Close(fd)
		if err != nil {
			return nil, &os.PathError{Op: "open", Path: at, Err: err}
		}
		fd, done = next, at
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return nil, &os.PathError{Op: "stat", Path: at, Err: err}
		}
		if st.Uid != 0 && int(st.Uid) != os.Geteuid() && int(st.Uid) != uid {
			unix.Close(fd)
			return nil, fmt.Errorf("%s belongs to uid %d, who could replace what Sortie keeps below it; it must belong to root, the daemon's user or the agent's (uid %d): remove it or give it to one of them", at, st.Uid, uid)
		}
	}
	return os.NewFile(uintptr(fd), done), nil
}

// trustedLink is the target of the link name in the directory dirfd when that
// directory is one only root or the daemon's user can write, else an error.
func trustedLink(dirfd int, name string, owner *runas.User) (string, error) {
	var lst unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &lst, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return "", err
	}
	if lst.Mode&unix.S_IFMT != unix.S_IFLNK {
		return "", errors.New("not a directory")
	}
	var st unix.Stat_t
	if err := unix.Fstat(dirfd, &st); err != nil {
		return "", err
	}
	trusted := (st.Uid == 0 || int(st.Uid) == os.Geteuid()) && st.Mode&0o022 == 0
	if owner != nil && st.Uid == owner.UID {
		trusted = false
	}
	if !trusted {
		return "", fmt.Errorf("is a link in a directory that uid %d (or its group, or anyone) can write; Sortie does not follow it: replace it with a directory", st.Uid)
	}
	buf := make([]byte, 4096)
	n, err := unix.Readlinkat(dirfd, name, buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

// GiveDir makes the directory Sortie just created, open at fd, private to the agent's
// user (owner; nil for the daemon's): that user's, 0700.
func GiveDir(fd int, owner *runas.User) error {
	if owner != nil {
		if err := unix.Fchown(fd, int(owner.UID), int(owner.GID)); err != nil {
			return err
		}
	}
	return unix.Fchmod(fd, 0o700)
}

// ReadOwnedFile reads the agent's login (or another file of the agent's user that
// Sortie copies where the agent can read it) at the absolute path path, at most limit
// bytes, and returns it with its modification time. Its directory is opened by
// OpenDir, without following a link the agent's user could have planted; the file must
// be a regular file, not a link (symbolic or hard: it has one name only), owned by the
// agent's user (owner, or the daemon's user when nil). It is read through the
// descriptor it was checked by; a FIFO or a device is never opened. A missing file (or
// directory) is an error that matches fs.ErrNotExist; every other refusal names the
// path and what to fix.
func ReadOwnedFile(path string, owner *runas.User, limit int64) ([]byte, time.Time, error) {
	var none time.Time
	d, err := OpenDir(filepath.Dir(path), owner, false)
	if err != nil {
		return nil, none, err
	}
	defer d.Close()
	name := filepath.Base(path)
	const why = "the agent's login is copied only from a regular file its user owns"
	var lst unix.Stat_t
	if err := unix.Fstatat(int(d.Fd()), name, &lst, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, none, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	switch lst.Mode & unix.S_IFMT {
	case unix.S_IFREG:
	case unix.S_IFLNK:
		return nil, none, fmt.Errorf("%s is a symbolic link; %s, never through a link: put the file itself there", path, why)
	default:
		return nil, none, fmt.Errorf("%s is not a regular file; %s", path, why)
	}
	fd, err := unix.Openat(int(d.Fd()), name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, none, &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, none, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	uid := AgentUID(owner)
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG || st.Dev != lst.Dev || st.Ino != lst.Ino:
		return nil, none, fmt.Errorf("%s changed while Sortie opened it, or is not a regular file; %s", path, why)
	case st.Nlink != 1:
		return nil, none, fmt.Errorf("%s has %d hard links; %s, with no other name: replace it with a copy of its own (cp, then remove the other names)", path, st.Nlink, why)
	case int(st.Uid) != uid:
		return nil, none, fmt.Errorf("%s belongs to uid %d, not to the agent's user (uid %d); %s: chown it to the agent's user, or log in again as that user", path, st.Uid, uid, why)
	case st.Size > limit:
		return nil, none, fmt.Errorf("%s is larger than %d bytes, more than a login", path, limit)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit))
	if err != nil {
		return nil, none, &os.PathError{Op: "read", Path: path, Err: err}
	}
	return data, time.Unix(st.Mtim.Unix()), nil
}
