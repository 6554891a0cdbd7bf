package workspace

import (
	"errors"

	"golang.org/x/sys/unix"

	"sortie/internal/fdio"
)

// writeBySwap writes data to `.sortie/<name>` through `.sortie/.<name>.next`, both
// relative to dfd, the `.sortie/` directory: it overwrites that file (the version the
// previous swap displaced) or creates it, then swaps the two names in one step
// (renameat2 RENAME_EXCHANGE), or renames it when there is no target yet. done is
// false, with nothing written, when the file system cannot swap; the caller then
// writes the usual way. With chown the file is given to uid and gid.
//
// The .next file is in the agent's workspace: one that is not a regular file of ours
// with a single link (a link or hard link the agent planted, a FIFO) is removed and
// made afresh, never written through.
func writeBySwap(dfd int, name string, data []byte, uid, gid int, chown bool) (done bool, err error) {
	next := "." + name + ".next"
	fd, st, err := fdio.OpenForOverwrite(dfd, next, 0o600, -1)
	if errors.Is(err, fdio.ErrInTheWay) {
		// A directory the agent made: removed when empty, and the file made afresh.
		if rerr := unix.Unlinkat(dfd, next, unix.AT_REMOVEDIR); rerr != nil {
			return false, rerr
		}
		fd, st, err = fdio.OpenForOverwrite(dfd, next, 0o600, -1)
	}
	if err != nil {
		return false, err
	}
	if st == nil { // made just now, by us
		st = &unix.Stat_t{Mode: unix.S_IFREG | 0o600, Uid: uint32(unix.Geteuid())}
	}
	werr := fdio.Overwrite(fd, data)
	var merr, oerr error
	if st.Mode&0o7777 != 0o600 {
		merr = unix.Fchmod(fd, 0o600)
	}
	if chown && (st.Uid != uint32(uid) || st.Gid != uint32(gid)) {
		oerr = unix.Fchown(fd, uid, gid)
	}
	if err := errors.Join(werr, merr, oerr, unix.Close(fd)); err != nil {
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

// checkTarget refuses a `.sortie/<name>` (path, for messages) that is a link or not a
// regular file; a missing one is fine.
func (f *SortieFiles) checkTarget(name, path string) error {
	_, err := regularAt(f.dfd, name, path)
	return err
}
