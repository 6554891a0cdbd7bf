//go:build !linux

package file

import (
	"io/fs"
	"os"
)

// writeNext writes data to a new temporary file beside path: where names cannot be
// swapped in one step there is no next file to keep.
func writeNext(path string, data []byte, perm fs.FileMode) (string, error) {
	return writeTemp(path, data, perm)
}

// replaceFile renames tmp over path.
func replaceFile(tmp, path string) error { return os.Rename(tmp, path) }
