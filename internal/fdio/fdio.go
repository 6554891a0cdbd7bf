// Package fdio writes files through raw descriptors, for the daemon's hot paths that
// keep a file open by descriptor rather than as an *os.File (whose every open and
// close asks the runtime's poller about the descriptor first).
package fdio

import (
	"errors"

	"golang.org/x/sys/unix"
)

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
