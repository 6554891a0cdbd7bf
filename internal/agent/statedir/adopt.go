package statedir

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"golang.org/x/sys/unix"

	"sortie/internal/agent"
	"sortie/internal/runas"
)

// Adopt moves legacy, where an earlier version of Sortie kept the state, to
// dir, where Dir says it is now, so that the sessions still resume after an
// upgrade. It does so once: when dir does not exist and legacy does. legacy is reached
// as Prepare reaches dir (no link the agent's user could have planted is followed,
// legacy itself is no link) and must be private to the agent's user; it is renamed by
// descriptor. Nothing to adopt ("" for legacy, no legacy, dir already there) is not an
// error; a legacy directory that is not safe to adopt, or cannot be moved, is, naming
// it and what to do.
func Adopt(dir, legacy string, owner *runas.User) error {
	if legacy == "" || filepath.Clean(legacy) == filepath.Clean(dir) {
		return nil
	}
	to, err := agent.OpenDir(filepath.Dir(filepath.Clean(dir)), owner, true)
	if err != nil {
		return err
	}
	defer to.Close()
	name := filepath.Base(dir)
	var st unix.Stat_t
	if err := unix.Fstatat(int(to.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW); !errors.Is(err, unix.ENOENT) {
		return nil // there already (or Prepare will say what is wrong with it)
	}
	from, err := open(legacy, owner, false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("not moving %s, where an earlier Sortie kept the issue's state, to %s: %w", legacy, dir, err)
	}
	defer from.Close()
	if err := unix.Renameat(int(from.parent.Fd()), from.name, int(to.Fd()), name); err != nil {
		return fmt.Errorf("moving %s, where an earlier Sortie kept the issue's state, to %s: %w; move it there yourself for the issue's sessions to resume, or remove it",
			legacy, dir, err)
	}
	return nil
}
