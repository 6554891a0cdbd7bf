package workspace

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// writeBySwap writes data to `.sortie/<name>` through `.sortie/.<name>.next`: it
// overwrites that file (the version the previous swap displaced) or creates it, then
// swaps the two names in one step (renameat2 RENAME_EXCHANGE), or renames it when
// there is no target yet. done is false, with nothing written, when the file system
// cannot swap; the caller then writes the usual way.
//
// The .next file is in the agent's workspace: one that is not a regular file of ours
// with a single link (a link or hard link the agent planted, a FIFO) is removed and
// made afresh, never written through. Everything is relative to `.sortie/` opened
// through r, so a `.sortie/` swapped for a link cannot send the writes elsewhere.
func writeBySwap(r *os.Root, wsPath, name string, data []byte) (done bool, err error) {
	d, err := r.Open(SortieDir)
	if err != nil {
		return false, err
	}
	defer d.Close()
	if fi, err := d.Stat(); err != nil || !fi.IsDir() {
		return false, errors.New(SortieDir + " is not a directory")
	}
	dfd := int(d.Fd())
	next := "." + name + ".next"
	fd, err := unix.Openat(dfd, next, unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err == nil && !singleRegular(fd) {
		unix.Close(fd)
		err = unix.EEXIST
	}
	if err != nil && !errors.Is(err, unix.ENOENT) {
		// Not a file of ours (a link refused by O_NOFOLLOW, a FIFO, a hard link, a
		// directory): remove it and make it afresh below.
		if rerr := unix.Unlinkat(dfd, next, 0); rerr != nil && !errors.Is(rerr, unix.ENOENT) {
			if rerr = unix.Unlinkat(dfd, next, unix.AT_REMOVEDIR); rerr != nil {
				return false, rerr
			}
		}
		err = unix.ENOENT
	}
	if errors.Is(err, unix.ENOENT) {
		fd, err = unix.Openat(dfd, next, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	}
	if err != nil {
		return false, err
	}
	f := os.NewFile(uintptr(fd), next)
	werr := f.Truncate(0)
	if werr == nil {
		_, werr = f.WriteAt(data, 0)
	}
	merr := f.Chmod(0o600)
	oerr := giveToOwner(wsPath, f)
	if err := errors.Join(werr, merr, oerr, f.Close()); err != nil {
		return false, err
	}
	err = unix.Renameat2(dfd, next, dfd, name, unix.RENAME_EXCHANGE)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, unix.ENOENT):
		// No target yet: the first write. A plain rename leaves no .next behind.
		if err := unix.Renameat(dfd, next, dfd, name); err != nil {
			return false, err
		}
		return true, nil
	case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOSYS):
		// A file system (or kernel) that cannot swap names.
		_ = unix.Unlinkat(dfd, next, 0)
		return false, nil
	}
	return false, err
}

// singleRegular reports whether fd is a regular file with one link.
func singleRegular(fd int) bool {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return false
	}
	return st.Mode&syscall.S_IFMT == syscall.S_IFREG && st.Nlink == 1
}
