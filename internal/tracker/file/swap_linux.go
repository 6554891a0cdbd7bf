package file

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
	"time"
	"unsafe"

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
//
// The version written is stamped (see stampBehind); its stamp is returned, zero when
// it could not be stamped.
func writeNext(path string, data []byte, perm fs.FileMode) (name string, stamp time.Time, err error) {
	next := nextPath(path)
	fd, st, err := fdio.OpenForOverwrite(unix.AT_FDCWD, next, uint32(perm), os.Geteuid())
	if errors.Is(err, fdio.ErrInTheWay) {
		name, err := writeTemp(path, data, perm) // a directory, say: leave it be
		return name, time.Time{}, err
	}
	if err != nil {
		return "", time.Time{}, err
	}
	chmod := st != nil && st.Mode&0o7777 != uint32(perm)
	stamp, werr := writeAll(fd, data, chmod, uint32(perm))
	if err := errors.Join(werr, unix.Close(fd)); err != nil {
		return "", time.Time{}, err
	}
	return next, stamp, nil
}

// writeAll makes fd hold data with perm (chmod first when it differs), stamped, on
// disk.
func writeAll(fd int, data []byte, chmod bool, perm uint32) (time.Time, error) {
	if chmod {
		if err := unix.Fchmod(fd, perm); err != nil {
			return time.Time{}, err
		}
	}
	if err := fdio.Overwrite(fd, data); err != nil {
		return time.Time{}, err
	}
	stamp := stampBehind(fd)
	return stamp, unix.Fsync(fd)
}

// stampBehind sets the modification time of the file open as fd, just written, to
// just before the one the kernel gave the write, and returns it; zero when that did
// not hold (the file system cannot store it).
//
// A stat alone cannot tell two writes apart within one tick of the file system's
// clock: both get the tick's time, so a cache compared by (inode, size, mtime) must
// otherwise distrust a file modified in the last moments (racyWindow) and read it
// whole. Any write after this one gets the kernel's time of that write, never earlier
// than the write stamped here, so never the stamp: a file still carrying the stamp
// has not been written since.
func stampBehind(fd int) time.Time {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return time.Time{}
	}
	written := time.Unix(st.Mtim.Unix())
	stamp := written.Add(-time.Nanosecond)
	ts := [2]unix.Timespec{{Nsec: unix.UTIME_OMIT}, unix.NsecToTimespec(stamp.UnixNano())}
	// utimensat with no path changes the file open as fd.
	if _, _, errno := unix.Syscall6(unix.SYS_UTIMENSAT, uintptr(fd), 0, uintptr(unsafe.Pointer(&ts[0])), 0, 0, 0); errno != 0 {
		return time.Time{}
	}
	if unix.Fstat(fd, &st) != nil {
		return time.Time{}
	}
	// A file system that keeps coarser times rounds the stamp down, which is as good;
	// one that rounds it back up to the write's own time is not.
	if got := time.Unix(st.Mtim.Unix()); got.Before(written) {
		return got
	}
	return time.Time{}
}

// sameChange reports whether a and b, two stats of one file, have the same status
// change time (ctime), which no program can set: an edit that puts back the
// modification time it found still moves it.
func sameChange(a, b fs.FileInfo) bool {
	sa, ok1 := a.Sys().(*syscall.Stat_t)
	sb, ok2 := b.Sys().(*syscall.Stat_t)
	return !ok1 || !ok2 || sa.Ctim == sb.Ctim
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
