package codex

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
// user owns its home, its cache and its CODEX_HOME: a link it plants there must never
// lead the daemon's reads or writes elsewhere (to the daemon's env file, /etc/shadow,
// another user's files). So these paths are walked one directory at a time, by file
// descriptor, without following a link in any directory someone other than root or
// the daemon's user could write, and what is found is checked by its owner.

// maxLinks bounds the links followed while walking one path, as the kernel's own 40.
const maxLinks = 40

// agentUID is the uid the agent runs as: owner's, or the daemon's own.
func agentUID(owner *runas.User) int {
	if owner == nil {
		return os.Geteuid()
	}
	return int(owner.UID)
}

// openDir opens the directory at the absolute path dir. Missing directories are
// created when create is set: mode 0700, owned by the agent's user. A link is followed
// only in a directory owned by root or the daemon's user that no one else can write
// (and, with agent.run_as, not owned by the agent's user); every directory on the way
// must belong to root, the daemon's user or the agent's user. The error names the
// path and what to do.
func openDir(dir string, owner *runas.User, create bool) (*os.File, error) {
	if !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("%s is not an absolute path", dir)
	}
	uid := agentUID(owner)
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
				err = giveDir(next, owner)
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

// giveDir makes the directory Sortie just created private to the agent's user.
func giveDir(fd int, owner *runas.User) error {
	if owner != nil {
		if err := unix.Fchown(fd, int(owner.UID), int(owner.GID)); err != nil {
			return err
		}
	}
	return unix.Fchmod(fd, 0o700)
}

// checkPrivate refuses a CODEX_HOME that is not the agent user's alone: another user
// (who could have made it in a shared directory beforehand) or group or others could
// read its threads and the login, or plant what codex loads.
func checkPrivate(d *os.File, owner *runas.User) error {
	fi, err := d.Stat()
	if err != nil {
		return err
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(d.Fd()), &st); err != nil {
		return err
	}
	uid := agentUID(owner)
	if int(st.Uid) != uid || fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("CODEX_HOME %s belongs to uid %d with mode %s; it must belong to the agent's user (uid %d) with no access for group or others: remove it (Sortie creates it), or chown %d and chmod 700 it if it is yours",
			d.Name(), st.Uid, fi.Mode().Perm(), uid, uid)
	}
	return nil
}

// openRoot is d as an os.Root, for the operations below it (which never leave it),
// checked to be the very directory d is, whatever happened to its path since.
func openRoot(d *os.File) (*os.Root, error) {
	r, err := os.OpenRoot(d.Name())
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
		return nil, fmt.Errorf("%s changed while Sortie opened it", d.Name())
	}
	return r, nil
}

// readOwnFile reads name in the directory d: a regular file, not a link, owned by the
// agent's user, at most limit bytes; a FIFO or a device is never opened for reading.
func readOwnFile(d *os.File, name string, owner *runas.User, limit int64) ([]byte, time.Time, error) {
	var st unix.Stat_t
	var none time.Time
	fd, err := unix.Openat(int(d.Fd()), name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, none, &os.PathError{Op: "open", Path: filepath.Join(d.Name(), name), Err: err}
	}
	f := os.NewFile(uintptr(fd), filepath.Join(d.Name(), name))
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, none, err
	}
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, none, err
	}
	if !fi.Mode().IsRegular() {
		return nil, none, fmt.Errorf("%s is not a regular file", f.Name())
	}
	if int(st.Uid) != agentUID(owner) {
		return nil, none, fmt.Errorf("%s belongs to uid %d, not the agent's user (uid %d)", f.Name(), st.Uid, agentUID(owner))
	}
	if fi.Size() > limit {
		return nil, none, fmt.Errorf("%s is larger than %d bytes", f.Name(), limit)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit))
	return data, fi.ModTime(), err
}
