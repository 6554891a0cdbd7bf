//go:build unix && !linux

package proc

import "errors"

// waitExited is unavailable here; reap falls back to killing the group after reaping.
func waitExited(int) error { return errors.ErrUnsupported }
