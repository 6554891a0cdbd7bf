// Package fdio writes files through raw descriptors, for the daemon's hot paths that
// keep a file open by descriptor rather than as an *os.File (whose every open and
// close asks the runtime's poller about the descriptor first).
package fdio

import (
	"errors"

	"golang.org/x/sys/unix"
)

// Overwrite replaces the content of the regular file open for writing at fd with
// data: it truncates the file, then writes data from offset 0, all of it.
func Overwrite(fd int, data []byte) error {
	if err := unix.Ftruncate(fd, 0); err != nil {
		return err
	}
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
	return nil
}
