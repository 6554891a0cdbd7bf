package statedir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"

	"sortie/internal/runas"
)

// Remove removes dir, an issue's state directory, with everything in it, reached as
// Prepare reaches it (no link the agent's user could have planted is followed); owner
// is the agent's user (nil for the daemon's). A missing dir is not an error, nor is
// dir "" (no directory: a layout without a cache directory to put it in). Nothing
// outside dir is removed: a dir that is a link, or not private to the agent's user, is
// an error and nothing is removed.
func Remove(dir string, owner *runas.User) error {
	if dir == "" {
		return nil
	}
	o, err := open(dir, owner, false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer o.Close()
	if err := reset(o.root, ".", nil); err != nil {
		return fmt.Errorf("removing %s: %w", dir, err)
	}
	if err := unix.Unlinkat(int(o.parent.Fd()), o.name, unix.AT_REMOVEDIR); err != nil && !errors.Is(err, unix.ENOENT) {
		return &os.PathError{Op: "remove", Path: dir, Err: err}
	}
	return nil
}
