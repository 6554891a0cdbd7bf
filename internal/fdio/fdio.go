// Package fdio opens and writes files for the daemon's hot paths with no more system
// calls than the job takes: through raw descriptors where a file is kept open by
// descriptor, and as an *os.File that skips the runtime's poller (whose every open
// asks it about the descriptor first) where a file is read or written once.
package fdio

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Open opens path as os.OpenFile does, for a file the runtime's poller cannot wait on
// anyway: a regular file or a directory. os.OpenFile offers every descriptor to the
// poller, which takes four system calls more (non-blocking on, the poller's refusal,
// non-blocking off) than an open and os.NewFile. A FIFO or a device opened here is
// read and written blocking, as the poller-less *os.File of os.NewFile always is.
func Open(path string, flag int, perm os.FileMode) (*os.File, error) {
	for {
		fd, err := unix.Open(path, flag|unix.O_CLOEXEC, uint32(perm.Perm()))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "open", Path: path, Err: err}
		}
		return os.NewFile(uintptr(fd), path), nil
	}
}

// Overwrite replaces the content of the regular file open for writing at fd with
// data: it writes data from offset 0, all of it, then cuts the file to its length.
// Written over in place, the blocks the old content had are the new content's: a
// truncation to nothing first would free them all and allocate them again (and on
// ext4 it marks the file for an allocation at close, as a truncate-and-rewrite save).
func Overwrite(fd int, data []byte) error {
	for off := 0; off < len(data); {
		n, err := unix.Pwrite(fd, data[off:], int64(off))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return err
		}
		off += n
	}
	return unix.Ftruncate(fd, int64(len(data)))
}

// ErrInTheWay is OpenForOverwrite's report that the entry at the name is not a file it
// may write through and could not be removed (a directory, say).
var ErrInTheWay = errors.New("not a file of ours, and cannot be removed")

// OpenForOverwrite opens the file name in the directory dfd (unix.AT_FDCWD: name is a
// path) for Overwrite, never writing through what someone else put there. The regular
// file there is opened when it has a single link and, with uid >= 0, belongs to uid;
// its stat is returned. Anything else (a symbolic link, which is not followed, a hard
// link, a FIFO, a file of another user) is removed and a new file made with perm; st
// is then nil. An entry that cannot be removed is ErrInTheWay, wrapping the reason.
func OpenForOverwrite(dfd int, name string, perm uint32, uid int) (fd int, st *unix.Stat_t, err error) {
	fd, err = unix.Openat(dfd, name, unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err == nil {
		var s unix.Stat_t
		if ferr := unix.Fstat(fd, &s); ferr == nil && s.Mode&unix.S_IFMT == unix.S_IFREG && s.Nlink == 1 && (uid < 0 || int(s.Uid) == uid) {
			return fd, &s, nil
		}
		unix.Close(fd)
		err = unix.EEXIST
	}
	if !errors.Is(err, unix.ENOENT) {
		if rerr := unix.Unlinkat(dfd, name, 0); rerr != nil && !errors.Is(rerr, unix.ENOENT) {
			return -1, nil, fmt.Errorf("%w: %w", ErrInTheWay, rerr)
		}
	}
	fd, err = unix.Openat(dfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
	return fd, nil, err
}
