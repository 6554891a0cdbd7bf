package file

import (
	"errors"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"

	"sortie/internal/fdio"
)

// writeNext writes data, with perm, to the issues file's next version beside path
// (nextPath) and flushes it to disk, ready to take the file's place (replaceFile).
//
// The next file outlives the write: the swap that puts it in place leaves the version
// it replaced under its name, and the next write overwrites that. So a write creates
// and deletes no file, which on ext4 without a journal is what writing costs most
// (every file created there scans the inodes deleted in the last minute). One that is
// not a regular file of the daemon's own with one link (a hard link to the issues
// file's old name elsewhere, say) is never written through: it is removed and made
// afresh.
func writeNext(path string, data []byte, perm fs.FileMode) (name string, err error) {
	next := nextPath(path)
	fd, st, err := fdio.OpenForOverwrite(unix.AT_FDCWD, next, uint32(perm), os.Geteuid())
	if errors.Is(err, fdio.ErrInTheWay) {
		return writeTemp(path, data, perm) // a directory, say: leave it be
	}
	if err != nil {
		return "", err
	}
	chmod := st != nil && st.Mode&0o7777 != uint32(perm)
	werr := writeAll(fd, data, chmod, uint32(perm))
	if err := errors.Join(werr, unix.Close(fd)); err != nil {
		return "", err
	}
	return next, nil
}

// writeAll makes fd hold data with perm (chmod first when it differs), on disk.
func writeAll(fd int, data []byte, chmod bool, perm uint32) error {
	if chmod {
		if err := unix.Fchmod(fd, perm); err != nil {
			return err
		}
	}
	if err := fdio.Overwrite(fd, data); err != nil {
		return err
	}
	return unix.Fsync(fd)
}

// replaceFile puts tmp, a file writeNext or writeTemp wrote, in path's place. The next
// file swaps names with path in one step (renameat2 RENAME_EXCHANGE), keeping the old
// version for the next write; a temporary file, or a file system that cannot swap,
// is renamed over path.
func replaceFile(tmp, path string) error {
	if tmp == nextPath(path) {
		err := unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, path, unix.RENAME_EXCHANGE)
		if err == nil || !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOSYS) {
			return err
		}
	}
	return os.Rename(tmp, path)
}
