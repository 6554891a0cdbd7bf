package workspace

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"sortie/internal/fdio"
)

// SortieDir is the directory inside a workspace that holds the agent protocol files
// (spec/agent-extensions.md).
const SortieDir = ".sortie"

// Files in SortieDir that this package writes or reads itself.
const (
	StatusFile    = "status"
	GitignoreFile = ".gitignore"
)

// MaxStatusSize is the largest `.sortie/status` ReadStatus accepts, in bytes.
const MaxStatusSize = 1 << 10

// gitignoreContent keeps everything in `.sortie/` (including mcp.json and the
// .gitignore itself) out of the workspace's repository.
const gitignoreContent = "*\n"

// StatusKind is what an agent signalled through `.sortie/status`.
type StatusKind int

// Status kinds. Only the first line of the file counts, trimmed, case-sensitive.
const (
	StatusNone             StatusKind = iota // no file: carry on as configured
	StatusBlocked                            // "blocked": stop, release the claim, no handoff
	StatusNeedsHumanReview                   // "needs-human-review": stop, hand off when configured
	StatusUnknown                            // anything else: ignore it, with a warning
)

func (k StatusKind) String() string {
	switch k {
	case StatusNone:
		return "none"
	case StatusBlocked:
		return "blocked"
	case StatusNeedsHumanReview:
		return "needs-human-review"
	case StatusUnknown:
		return "unknown"
	}
	return fmt.Sprintf("StatusKind(%d)", int(k))
}

// Status is the parsed `.sortie/status`. Value is the trimmed first line as the agent
// wrote it (at most MaxStatusSize bytes, possibly unrecognised); it is "" for
// StatusNone.
type Status struct {
	Kind  StatusKind
	Value string
}

// ReadStatus reads the agent's signal from `.sortie/status` in the workspace wsPath. A
// missing file (or missing `.sortie/`) is StatusNone with no error. A symlinked
// `.sortie/` or status file, a non-regular file, a file over MaxStatusSize or a read
// error returns StatusNone with an error: the spec treats all of those as "absent,
// with a warning", which is the caller's to log.
func ReadStatus(wsPath string) (Status, error) {
	data, err := ReadSortieFile(wsPath, StatusFile, MaxStatusSize)
	if errors.Is(err, fs.ErrNotExist) {
		return Status{}, nil
	}
	if err != nil {
		return Status{}, err
	}
	line, _, _ := strings.Cut(string(data), "\n")
	raw := strings.TrimSpace(line)
	switch raw {
	case "blocked":
		return Status{Kind: StatusBlocked, Value: raw}, nil
	case "needs-human-review":
		return Status{Kind: StatusNeedsHumanReview, Value: raw}, nil
	}
	return Status{Kind: StatusUnknown, Value: raw}, nil
}

// ClearStatus deletes `.sortie/status` in the workspace wsPath so a signal from an
// earlier run cannot stop the next one. Nothing to delete is not an error. A symlinked
// `.sortie/` or status, or a status that is not a regular file, is refused with an
// error and left in place.
func ClearStatus(wsPath string) error {
	dir, err := existingSortieDir(wsPath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	path := filepath.Join(dir, StatusFile)
	if _, err := lstatRegular(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	// Through an os.Root of the workspace: a .sortie/ swapped for a link since the
	// check cannot point the removal outside it.
	r, err := os.OpenRoot(wsPath)
	if err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	defer r.Close()
	if err := r.Remove(filepath.Join(SortieDir, StatusFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("workspace: delete %s: %w", path, err)
	}
	return nil
}

// WriteFileAtomic writes data to `.sortie/<name>` in the workspace wsPath with mode
// 0600: it writes a temporary file in `.sortie/` and renames it over the target, so
// readers see the old or the new content, never a mix. It creates `.sortie/` and its
// `.gitignore` first if needed. name must be a plain file name; a symlinked `.sortie/`
// or target is refused. A caller that writes there all run long opens SortieFiles
// once instead.
func WriteFileAtomic(wsPath, name string, data []byte) error {
	if err := checkSortieName(name); err != nil {
		return err
	}
	f, err := OpenSortieFiles(wsPath)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.WriteFile(name, data)
}

// SortieFiles writes the daemon's files into one workspace's `.sortie/` for the length
// of a run (mcp.json, state.json): the directory is checked, and created with its
// .gitignore, once, and then held open, so that a write is the write itself and not
// a walk of the workspace's path with checks at each step.
//
// Every step goes through the directory opened once, without following a link (see
// openSortieDir), so a `.sortie/` swapped for a link since (by an agent that owns the
// workspace under agent.run_as) cannot send the daemon's writes outside it: they go
// on into the directory that was opened, wherever the agent moved it.
type SortieFiles struct {
	wsPath   string
	dir      *os.File
	dfd      int
	uid, gid int
	chown    bool // give the files to uid and gid (the workspace is another user's)
}

// OpenSortieFiles makes sure `.sortie/` and its .gitignore exist in the workspace
// wsPath, refusing a `.sortie/` that is a link or not a directory, and opens it.
func OpenSortieFiles(wsPath string) (*SortieFiles, error) {
	dir, d, err := openSortieDir(wsPath) // d stays open: one descriptor per running session
	if err != nil {
		return nil, err
	}
	if fi, err := d.Stat(); err != nil || !fi.IsDir() {
		d.Close()
		return nil, fmt.Errorf("workspace: %s %w; refusing to use it", dir, ErrConflict)
	}
	f := &SortieFiles{wsPath: wsPath, dir: d, dfd: int(d.Fd())}
	f.uid, f.gid, f.chown = otherOwner(wsPath)
	return f, nil
}

// Close releases the directory.
func (f *SortieFiles) Close() error {
	return f.dir.Close()
}

// WriteFile writes data to `.sortie/<name>` with mode 0600, atomically (see
// WriteFileAtomic). name must be a plain file name; a target that is a link or not a
// regular file is refused.
//
// Where the system can swap two names at once (Linux), the temporary file is
// `.sortie/.<name>.next` and the swap keeps the version it replaces there, to be
// overwritten by the next write: a file rewritten all run long (state.json) creates
// and deletes no inode after its second write. On file systems that scan recently
// deleted inodes whenever they create one (ext4 without a journal), every delete
// made each later file creation dearer.
func (f *SortieFiles) WriteFile(name string, data []byte) error {
	if err := checkSortieName(name); err != nil {
		return err
	}
	target := filepath.Join(f.wsPath, SortieDir, name)
	if err := f.checkTarget(name, target); err != nil {
		return err
	}
	if done, err := writeBySwap(f.dfd, name, data, f.uid, f.gid, f.chown); done || err != nil {
		if err != nil {
			return fmt.Errorf("workspace: write %s: %w", target, err)
		}
		return nil
	}
	// A file system that cannot swap names: a temporary file renamed over the target,
	// through an os.Root of the workspace (this path is rare, so it opens one).
	root, err := os.OpenRoot(f.wsPath)
	if err != nil {
		return fmt.Errorf("workspace: write %s: %w", target, err)
	}
	defer root.Close()
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	tmpName := filepath.Join(SortieDir, "."+name+".tmp-"+hex.EncodeToString(rnd[:]))
	// O_EXCL never follows a link planted at the temp name.
	tmp, err := root.OpenFile(tmpName, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("workspace: write %s: %w", target, err)
	}
	_, werr := tmp.Write(data)
	var oerr error
	if f.chown {
		oerr = tmp.Chown(f.uid, f.gid)
	}
	cerr := tmp.Close()
	if err := errors.Join(werr, oerr, cerr); err != nil {
		root.Remove(tmpName)
		return fmt.Errorf("workspace: write %s: %w", target, err)
	}
	// rename replaces a directory entry and never follows a link at target.
	if err := root.Rename(tmpName, filepath.Join(SortieDir, name)); err != nil {
		root.Remove(tmpName)
		return fmt.Errorf("workspace: write %s: %w", target, err)
	}
	return nil
}

// otherOwner is the owner of the workspace directory wsPath when the daemon runs as
// root and the workspace is another user's (agent.run_as): the files the daemon makes
// in `.sortie/` are given to that user, since the agent must be able to read mcp.json
// and replace its status.
func otherOwner(wsPath string) (uid, gid int, ok bool) {
	if os.Geteuid() != 0 {
		return 0, 0, false
	}
	fi, err := os.Lstat(wsPath)
	if err != nil {
		return 0, 0, false
	}
	st, isStat := fi.Sys().(*syscall.Stat_t)
	if !isStat || st.Uid == 0 {
		return 0, 0, false
	}
	return int(st.Uid), int(st.Gid), true
}

// ReadSortieFile reads `.sortie/<name>` in the workspace wsPath, refusing a symlinked
// `.sortie/` or file (ErrSymlink), a `.sortie` that is not a directory (ErrConflict),
// anything but a regular file (ErrNotRegular) and a file larger than max bytes
// (ErrTooLarge). A missing file or directory returns an error wrapping fs.ErrNotExist.
//
// No link is followed at any step, checked or not: `.sortie/` is opened with
// O_NOFOLLOW and the file through it with O_NOFOLLOW, so a `.sortie/` or file swapped
// for a link after a check cannot make the daemon read what the link points at.
func ReadSortieFile(wsPath, name string, max int64) ([]byte, error) {
	if err := checkSortieName(name); err != nil {
		return nil, err
	}
	dir, d, err := openExistingSortieDir(wsPath)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	path := filepath.Join(dir, name)
	// O_NONBLOCK keeps a FIFO from blocking the open; it is refused below, unread.
	fd, err := unix.Openat(int(d.Fd()), name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	switch {
	case errors.Is(err, unix.ELOOP):
		return nil, fmt.Errorf("workspace: %s %w; refusing to use it", path, ErrSymlink)
	case err != nil:
		return nil, fmt.Errorf("workspace: read %w", &fs.PathError{Op: "open", Path: path, Err: err})
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	fi, err := f.Stat()
	switch {
	case err != nil:
		return nil, fmt.Errorf("workspace: read %s: %w", path, err)
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("workspace: %s %w; refusing to use it", path, ErrNotRegular)
	case fi.Size() > max:
		return nil, fmt.Errorf("workspace: %s (%d bytes) %w of %d bytes", path, fi.Size(), ErrTooLarge, max)
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("workspace: read %s: %w", path, err)
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("workspace: %s %w of %d bytes", path, ErrTooLarge, max)
	}
	return data, nil
}

// RemoveSortieFile deletes `.sortie/<name>` in the workspace wsPath when it is a
// regular file or a symbolic link (the link itself: unlinking never follows it), so a
// file an agent may write next cannot be mistaken for an earlier one. Nothing to
// delete (no file, no `.sortie/`) is not an error. A `.sortie` that is a link or not
// a directory is refused (ErrSymlink, ErrConflict), as is a name that is anything
// else (ErrNotRegular); nothing is deleted then.
//
// The file is looked at and unlinked through `.sortie/` opened with O_NOFOLLOW, so a
// `.sortie/` swapped for a link meanwhile cannot point the deletion elsewhere.
func RemoveSortieFile(wsPath, name string) error {
	if err := checkSortieName(name); err != nil {
		return err
	}
	dir, d, err := openExistingSortieDir(wsPath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer d.Close()
	path := filepath.Join(dir, name)
	dfd := int(d.Fd())
	var st unix.Stat_t
	err = unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	switch {
	case errors.Is(err, unix.ENOENT):
		return nil
	case err != nil:
		return fmt.Errorf("workspace: %s: %w", path, err)
	case st.Mode&unix.S_IFMT != unix.S_IFREG && st.Mode&unix.S_IFMT != unix.S_IFLNK:
		return fmt.Errorf("workspace: %s %w; refusing to delete it", path, ErrNotRegular)
	}
	if err := unix.Unlinkat(dfd, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("workspace: delete %s: %w", path, err)
	}
	return nil
}

// openExistingSortieDir opens `.sortie/` in wsPath without following a link: a link is
// ErrSymlink, anything but a directory ErrConflict, a missing one wraps
// fs.ErrNotExist. It returns the directory's path with it.
func openExistingSortieDir(wsPath string) (string, *os.File, error) {
	dir := filepath.Join(wsPath, SortieDir)
	d, err := fdio.Open(dir, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW, 0)
	switch {
	case errors.Is(err, syscall.ELOOP):
		return "", nil, fmt.Errorf("workspace: %s %w; refusing to use it", dir, ErrSymlink)
	case errors.Is(err, syscall.ENOTDIR):
		// Linux says ENOTDIR for a link opened with O_DIRECTORY|O_NOFOLLOW too.
		if fi, lerr := os.Lstat(dir); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return "", nil, fmt.Errorf("workspace: %s %w; refusing to use it", dir, ErrSymlink)
		}
		return "", nil, fmt.Errorf("workspace: %s %w; refusing to use it", dir, ErrConflict)
	case err != nil:
		return "", nil, fmt.Errorf("workspace: %w", err)
	}
	return dir, d, nil
}

// existingSortieDir returns the path of `.sortie/` in wsPath after checking it is a
// real directory. A missing one wraps fs.ErrNotExist.
func existingSortieDir(wsPath string) (string, error) {
	dir := filepath.Join(wsPath, SortieDir)
	fi, err := os.Lstat(dir)
	if err != nil {
		return "", fmt.Errorf("workspace: %w", err)
	}
	return dir, checkSortieDirInfo(dir, fi)
}

func checkSortieDirInfo(dir string, fi fs.FileInfo) error {
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("workspace: %s %w; refusing to use it", dir, ErrSymlink)
	case !fi.IsDir():
		return fmt.Errorf("workspace: %s %w; refusing to use it", dir, ErrConflict)
	}
	return nil
}

// ensureSortieDir creates `.sortie/` in wsPath if needed and makes sure its .gitignore
// exists before anything else is written there, so session files such as mcp.json are
// never committed by the agent.
func ensureSortieDir(wsPath string) (string, error) {
	dir, d, err := openSortieDir(wsPath)
	if err != nil {
		return "", err
	}
	return dir, d.Close()
}

// openSortieDir is ensureSortieDir, and returns `.sortie/` open. It is opened without
// following a link (only its own entry can have changed since the check: the
// workspace's entry is in the root, which the agent's user cannot write), and its
// .gitignore is checked and written through that descriptor, so a `.sortie/` moved
// aside for a link meanwhile cannot send the daemon's reads or writes elsewhere.
func openSortieDir(wsPath string) (string, *os.File, error) {
	dir := filepath.Join(wsPath, SortieDir)
	fi, err := os.Lstat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.Mkdir(dir, dirMode); err != nil && !errors.Is(err, fs.ErrExist) {
			return "", nil, fmt.Errorf("workspace: create %s: %w", dir, err)
		}
		if uid, gid, ok := otherOwner(wsPath); ok {
			if err := os.Lchown(dir, uid, gid); err != nil {
				return "", nil, fmt.Errorf("workspace: give %s to the workspace's owner: %w", dir, err)
			}
		}
		if fi, err = os.Lstat(dir); err != nil {
			return "", nil, fmt.Errorf("workspace: %w", err)
		}
	case err != nil:
		return "", nil, fmt.Errorf("workspace: %w", err)
	}
	if err := checkSortieDirInfo(dir, fi); err != nil {
		return "", nil, err
	}
	d, err := fdio.Open(dir, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.ENOTDIR) {
		return "", nil, fmt.Errorf("workspace: %s %w; refusing to use it", dir, ErrSymlink)
	}
	if err != nil {
		return "", nil, fmt.Errorf("workspace: %w", err)
	}
	if err := ensureGitignore(wsPath, dir, int(d.Fd())); err != nil {
		d.Close()
		return "", nil, err
	}
	return dir, d, nil
}

// ensureGitignore makes sure `.sortie/.gitignore` (dir, open at dfd) holds
// gitignoreContent. It is written in place rather than via a temporary file, so that
// nothing else ever appears in `.sortie/` before it. Nothing the agent put there is
// followed or waited on: a link is refused, as is anything but a regular file with
// one link, and a FIFO swapped in after the check neither blocks the open nor is read.
func ensureGitignore(wsPath, dir string, dfd int) error {
	path := filepath.Join(dir, GitignoreFile)
	st, err := regularAt(dfd, GitignoreFile, path)
	if err != nil {
		return err
	}
	if st != nil && st.Size == int64(len(gitignoreContent)) && gitignoreHolds(dfd) {
		return nil
	}
	fd, err := unix.Openat(dfd, GitignoreFile, unix.O_WRONLY|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o600)
	if errors.Is(err, unix.ELOOP) {
		return fmt.Errorf("workspace: %s %w; refusing to use it", path, ErrSymlink)
	}
	if err != nil {
		return fmt.Errorf("workspace: write %s: %w", path, err)
	}
	defer unix.Close(fd)
	var fst unix.Stat_t
	if err := unix.Fstat(fd, &fst); err != nil || fst.Mode&unix.S_IFMT != unix.S_IFREG || fst.Nlink != 1 {
		return fmt.Errorf("workspace: %s %w; refusing to use it", path, ErrNotRegular)
	}
	werr := fdio.Overwrite(fd, []byte(gitignoreContent))
	var oerr error
	if uid, gid, ok := otherOwner(wsPath); ok {
		oerr = unix.Fchown(fd, uid, gid)
	}
	if err := errors.Join(werr, oerr); err != nil {
		return fmt.Errorf("workspace: write %s: %w", path, err)
	}
	return nil
}

// regularAt is the stat of name in the directory open at dfd (path names it in
// messages) when that is a regular file, nil when nothing is there; a link (never
// followed) is ErrSymlink, anything else ErrNotRegular.
func regularAt(dfd int, name, path string) (*unix.Stat_t, error) {
	var st unix.Stat_t
	err := unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	switch {
	case errors.Is(err, unix.ENOENT):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("workspace: %s: %w", path, err)
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		return nil, fmt.Errorf("workspace: %s %w; refusing to use it", path, ErrSymlink)
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return nil, fmt.Errorf("workspace: %s %w; refusing to use it", path, ErrNotRegular)
	}
	return &st, nil
}

// gitignoreHolds reports whether `.gitignore` in the directory open at dfd is a
// regular file holding gitignoreContent, reading no more than that.
func gitignoreHolds(dfd int) bool {
	fd, err := unix.Openat(dfd, GitignoreFile, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return false
	}
	buf := make([]byte, len(gitignoreContent)+1)
	n, err := unix.Pread(fd, buf, 0)
	return err == nil && string(buf[:n]) == gitignoreContent
}

// lstatRegular returns path's FileInfo if it is a regular file, without following a
// symlink. A missing file wraps fs.ErrNotExist.
func lstatRegular(path string) (fs.FileInfo, error) {
	fi, err := os.Lstat(path)
	switch {
	case err != nil:
		return nil, fmt.Errorf("workspace: %w", err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return nil, fmt.Errorf("workspace: %s %w; refusing to use it", path, ErrSymlink)
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("workspace: %s %w; refusing to use it", path, ErrNotRegular)
	}
	return fi, nil
}

// maxSortieName bounds file names under `.sortie/`, leaving room for temp suffixes.
const maxSortieName = 64

func checkSortieName(name string) error {
	if name == "" || name == "." || name == ".." || len(name) > maxSortieName ||
		strings.ContainsAny(name, "/\x00") {
		return fmt.Errorf("workspace: %q is not a valid file name in %s/", name, SortieDir)
	}
	return nil
}
