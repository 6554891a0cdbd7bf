//go:build !linux

package workspace

import (
	"errors"
	"io/fs"
)

// writeBySwap writes nothing where names cannot be swapped in one step: the caller
// writes the usual way.
func writeBySwap(int, string, []byte, int, int, bool) (bool, error) { return false, nil }

// checkTarget refuses a `.sortie/<name>` at path that is a link or not a regular
// file; a missing one is fine.
func (f *SortieFiles) checkTarget(_, path string) error {
	if _, err := lstatRegular(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
