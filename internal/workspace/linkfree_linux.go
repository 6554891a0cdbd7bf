package workspace

import (
	"errors"

	"golang.org/x/sys/unix"
)

// linkFreeDir reports whether the absolute, clean path is a directory reached through
// no symbolic link, which is what filepath.EvalSymlinks(path) == path proves with a
// stat of every element: here one openat2 that refuses to follow any link. False means
// "not shown", not "no": the caller then asks EvalSymlinks, which also says why.
func linkFreeDir(path string) bool {
	for {
		fd, err := unix.Openat2(unix.AT_FDCWD, path, &unix.OpenHow{
			Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
		})
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return false // a link on the way (ELOOP), not a directory, or no openat2 here
		}
		unix.Close(fd)
		return true
	}
}
