//go:build !linux

package workspace

import "os"

// writeBySwap writes nothing where names cannot be swapped in one step: the caller
// writes the usual way.
func writeBySwap(*os.Root, string, string, []byte) (bool, error) { return false, nil }
