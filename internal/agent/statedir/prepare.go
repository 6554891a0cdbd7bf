package statedir

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"

	"sortie/internal/agent"
	"sortie/internal/runas"
)

// Spec is what one CLI's state directory holds after Prepare. Names in it are
// slash-separated paths below the directory.
type Spec struct {
	// Keep are the entries a reset leaves, as path.Match patterns: one that ends in "/"
	// names a directory, kept with everything below it; any other a regular file.
	// Everything else goes: what the agent could have planted, and every link, FIFO or
	// device (a kept directory's own entries are the CLI's to judge).
	Keep []string
	// Dirs are directories made after the reset (0700, the agent user's), parents
	// first, replacing whatever else is at their names.
	Dirs []string
	// Files are written after the reset, replacing whatever is at their names.
	Files []File
	// Links are symbolic links made after the reset, name to target, replacing
	// whatever is at their names, for the CLI to follow; Sortie never does.
	Links map[string]string
	// Login, when not nil, is the user's login the CLI is given a copy of.
	Login *Login
}

// File is a file Prepare writes (0600, the agent user's) through a temporary file
// and a rename, so that a CLI starting meanwhile never reads half of it.
type File struct {
	Name string
	// Content is what the file holds, given what it held before the reset: nil when it
	// was missing, larger than maxOld, or not a regular file of the agent user's own.
	// A nil result writes nothing: a kept file stays as it is.
	Content func(old []byte) []byte
}

// Login is the copy of the user's login (or other credentials) that a CLI is given.
type Login struct {
	// From is the user's file, an absolute path; "" when the CLI is not to have it (the
	// operator did not say use_login): then a copy left at To goes.
	From string
	// To is where the copy goes, below the directory. A copy newer than From is kept:
	// the CLI refreshes its tokens in it.
	To string
}

// LoginError is Prepare's refusal to copy a login that is not a regular file of the
// agent user's own (a link, a hard link, a FIFO, another user's file). Nothing was
// copied; the rest of the directory was prepared.
type LoginError struct {
	Err error // agent.ReadOwnedFile's, which names the login and what to fix
}

func (e *LoginError) Error() string { return "not copying the login: " + e.Err.Error() }
func (e *LoginError) Unwrap() error { return e.Err }

// maxOld bounds the earlier content of a File that Prepare reads.
const maxOld = 64 << 20

// maxLogin bounds the size of a login Prepare copies.
const maxLogin = 1 << 20

// Prepare makes dir ready for a run of its CLI, before every run: it opens dir (made
// when missing, 0700 and the agent user's; see open for what is refused), removes
// everything spec does not keep, then makes spec's directories, files and links and
// copies its login. So nothing the agent left there, in the issue's own earlier runs
// too, is there for the CLI to load, but what spec keeps. No link is followed: one in
// dir is removed, and nothing outside dir is touched even if a link replaced part of
// it. owner is the agent's user (agent.run_as; nil for the daemon's). A login that is
// not copied because it is not the agent user's own file is a *LoginError.
func Prepare(dir string, owner *runas.User, spec Spec) error {
	o, err := open(dir, owner, true)
	if err != nil {
		return err
	}
	defer o.Close()
	old := make([][]byte, len(spec.Files))
	if !o.made { // a directory just made holds nothing to read or remove
		for i, f := range spec.Files {
			old[i] = readOld(o.root, f.Name, owner)
		}
		keep := spec.Keep
		if spec.Login != nil && spec.Login.From != "" {
			keep = append(slices.Clip(keep), spec.Login.To)
		}
		if err := reset(o.root, ".", keep); err != nil {
			return fmt.Errorf("resetting %s: %w", dir, err)
		}
	}
	for _, d := range spec.Dirs {
		if err := makeDir(o.root, d, owner); err != nil {
			return fmt.Errorf("making %s in %s: %w", d, dir, err)
		}
	}
	for i, f := range spec.Files {
		content := f.Content(old[i])
		if content == nil {
			continue // left as it is (a kept file), or absent
		}
		if err := writeFile(o.root, f.Name, content, owner, o.made); err != nil {
			return fmt.Errorf("writing %s in %s: %w", f.Name, dir, err)
		}
	}
	for name, target := range spec.Links {
		err := o.root.RemoveAll(name) // one left below a kept directory
		if err == nil {
			err = o.root.Symlink(target, name)
		}
		if err == nil && owner != nil {
			err = o.root.Lchown(name, int(owner.UID), int(owner.GID))
		}
		if err != nil {
			return fmt.Errorf("linking %s in %s to %s: %w", name, dir, target, err)
		}
	}
	if spec.Login != nil && (spec.Login.From != "" || !o.made) {
		return copyLogin(o.root, dir, *spec.Login, owner)
	}
	return nil
}

// reset removes from the directory name of root every entry keep neither keeps nor
// leads to, and from a directory keep leads to, the same.
func reset(root *os.Root, name string, keep []string) error {
	entries, err := fs.ReadDir(root.FS(), name)
	if err != nil {
		return err
	}
	for _, e := range entries {
		p := path.Join(name, e.Name())
		switch kept, below := judge(p, e.Type(), keep); {
		case kept:
		case below:
			err = reset(root, p, keep)
		default:
			err = root.RemoveAll(p)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// judge says whether a pattern of keep keeps the entry at p of type t, or leads below
// it (t is a directory that a longer pattern goes through).
func judge(p string, t fs.FileMode, keep []string) (kept, below bool) {
	n := strings.Count(p, "/") + 1
	for _, k := range keep {
		dir := strings.HasSuffix(k, "/")
		parts := strings.Split(strings.TrimSuffix(k, "/"), "/")
		switch {
		case len(parts) == n && (dir && t.IsDir() || !dir && t.IsRegular()):
			if ok, _ := path.Match(strings.Join(parts, "/"), p); ok {
				return true, false
			}
		case len(parts) > n && t.IsDir():
			if ok, _ := path.Match(strings.Join(parts[:n], "/"), p); ok {
				below = true
			}
		}
	}
	return false, below
}

// makeDir makes the directory name of root and its parents (0700, owner's) where
// missing, replacing a file or link at any of their names.
func makeDir(root *os.Root, name string, owner *runas.User) error {
	parts := strings.Split(name, "/")
	for i := range parts {
		p := path.Join(parts[:i+1]...)
		fi, err := root.Lstat(p)
		switch {
		case err == nil && fi.IsDir():
			continue
		case err == nil:
			err = root.Remove(p)
		case errors.Is(err, fs.ErrNotExist):
			err = nil
		}
		if err == nil {
			err = root.Mkdir(p, 0o700)
		}
		if err == nil && owner != nil {
			err = root.Lchown(p, int(owner.UID), int(owner.GID))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// writeFile writes data to name in root (0600, owner's) through a temporary file and
// a rename. Whatever was at name, a link included, is replaced, never written through.
// In a directory just made (fresh), nothing is at name and no CLI runs yet: the file is
// written in place, O_EXCL keeping it from writing through anything that appeared
// meanwhile (then it takes the usual way).
func writeFile(root *os.Root, name string, data []byte, owner *runas.User, fresh bool) error {
	if fresh {
		err := writeNew(root, name, data, owner)
		if !errors.Is(err, fs.ErrExist) {
			return err
		}
	}
	tmp := path.Join(path.Dir(name), ".sortie-"+rand.Text())
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	defer root.Remove(tmp)
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(0o600)
	}
	if err == nil && owner != nil {
		err = f.Chown(int(owner.UID), int(owner.GID))
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := root.Rename(tmp, name); err != nil {
		// A directory at name; a file or a link the rename replaces itself.
		if root.RemoveAll(name) != nil {
			return err
		}
		return root.Rename(tmp, name)
	}
	return nil
}

// copyLogin copies l.From to l.To in root when it is newer than the copy there, or
// removes the copy when there is no l.From. l.From is read by agent.ReadOwnedFile:
// never through a link, and only when it is a regular file of the agent user's with
// one name, for with agent.run_as the daemon is root and the agent's user could point
// it at any file. A missing login is not an error: the CLI says it is not logged in.
func copyLogin(root *os.Root, dir string, l Login, owner *runas.User) error {
	if l.From == "" {
		if err := root.RemoveAll(l.To); err != nil {
			return fmt.Errorf("removing the login's copy %s from %s: %w", l.To, dir, err)
		}
		return nil
	}
	data, mtime, err := agent.ReadOwnedFile(l.From, owner, maxLogin)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return &LoginError{Err: err}
	}
	if fi, err := root.Lstat(l.To); err == nil && fi.Mode().IsRegular() && !mtime.After(fi.ModTime()) {
		return nil
	}
	if err := writeFile(root, l.To, data, owner, false); err != nil {
		return fmt.Errorf("copying %s into %s: %w", l.From, dir, err)
	}
	return nil
}

// writeNew creates name in root (0600, owner's) with data; it fails with fs.ErrExist
// when anything is at name. A file it could not finish is removed.
func writeNew(root *os.Root, name string, data []byte, owner *runas.User) error {
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil && owner != nil {
		err = f.Chown(int(owner.UID), int(owner.GID))
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = root.Remove(name)
	}
	return err
}

// readOld is what the file name below root (the state directory Prepare holds) held
// before the reset, for File.Content: only a regular file of the agent user's with one
// name, at most maxOld bytes, never reached through a link (the checked entry is the
// one read); nil for anything else. The agent may have planted what is there.
func readOld(root *os.Root, name string, owner *runas.User) []byte {
	lfi, err := root.Lstat(name)
	if err != nil || !lfi.Mode().IsRegular() || lfi.Size() > maxOld {
		return nil
	}
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !os.SameFile(lfi, fi) {
		return nil
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || st.Nlink != 1 || int(st.Uid) != agent.AgentUID(owner) {
		return nil
	}
	b, err := io.ReadAll(io.LimitReader(f, maxOld))
	if err != nil {
		return nil
	}
	return b
}
