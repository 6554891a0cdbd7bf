//go:build !linux

package file

import (
	"io/fs"
	"os"
	"time"
)

// writeNext writes data to a new temporary file beside path: where names cannot be
// swapped in one step there is no next file to keep. It is not stamped.
func writeNext(path string, data []byte, perm fs.FileMode) (string, time.Time, error) {
	name, err := writeTemp(path, data, perm)
	return name, time.Time{}, err
}

// sameChange is true: the status change time is compared only on Linux.
func sameChange(a, b fs.FileInfo) bool { return true }

// replaceFile renames tmp over path.
func replaceFile(tmp, path string) error { return os.Rename(tmp, path) }
