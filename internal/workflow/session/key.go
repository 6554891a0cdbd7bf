package session

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// KeySize is the length in bytes of a key file's key.
const KeySize = 32

// LoadOrCreateKey returns the HMAC key stored at path, creating it if the file
// does not exist.
//
// An existing file must be a regular file (not a symlink) holding exactly
// KeySize bytes, with no group or other permission bits (0600 or 0400);
// anything else is refused with an error naming the file and the fix, because
// whoever can read the key can forge tokens.
//
// A new key is KeySize bytes from crypto/rand, written to a temporary file in
// the same directory, created with O_CREATE|O_EXCL and mode 0600, synced, then
// hard-linked to path. The link fails if path already exists, so of two
// concurrent creators exactly one wins; the other reads the winner's key, and
// no reader can see a partly written file. The directory is created with mode
// 0700 if missing.
func LoadOrCreateKey(path string) ([]byte, error) {
	key, err := readKey(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return key, err
	}
	if err := createKey(path); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, err
	}
	return readKey(path)
}

// LoadKey reads the key at path under LoadOrCreateKey's rules, and never creates one:
// a missing file is an error wrapping fs.ErrNotExist.
func LoadKey(path string) ([]byte, error) { return readKey(path) }

func readKey(path string) ([]byte, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("session key %s: %w", path, err)
	}
	if err := checkKeyFile(path, fi); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("session key %s: %w", path, err)
	}
	defer f.Close()
	// The path may have been swapped between Lstat and Open; check that we
	// opened the file we inspected.
	ofi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("session key %s: %w", path, err)
	}
	if !os.SameFile(fi, ofi) {
		return nil, fmt.Errorf("session key %s: the file changed while it was being opened; check who else writes to its directory and retry", path)
	}
	if err := checkKeyFile(path, ofi); err != nil {
		return nil, err
	}
	key, err := io.ReadAll(io.LimitReader(f, KeySize+1))
	if err != nil {
		return nil, fmt.Errorf("session key %s: %w", path, err)
	}
	if len(key) != KeySize {
		return nil, fmt.Errorf("session key %s: holds %s bytes, want exactly %d; delete the file to generate a new key (tokens signed with the old key stop verifying)",
			path, sizeText(len(key)), KeySize)
	}
	return key, nil
}

func sizeText(n int) string {
	if n > KeySize {
		return fmt.Sprintf("more than %d", KeySize)
	}
	return fmt.Sprint(n)
}

func checkKeyFile(path string, fi fs.FileInfo) error {
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("session key %s: is a symbolic link; refusing to follow it (replace it with the key file itself, mode 0600)", path)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("session key %s: is not a regular file (mode %s); point the key path at a file", path, fi.Mode())
	case fi.Mode().Perm()&0o077 != 0:
		return fmt.Errorf("session key %s: mode %04o lets other users read it; run `chmod 600 %s` (and consider the key leaked: delete it to make a new one)",
			path, fi.Mode().Perm(), path)
	}
	return nil
}

// createKey writes a fresh key to path; fs.ErrExist means another creator
// won and its key should be read.
func createKey(path string) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("session key %s: create directory: %w", path, err)
	}
	key := make([]byte, KeySize)
	if _, err := rand.Read(key); err != nil {
		return fmt.Errorf("session key %s: %w", path, err)
	}
	// os.CreateTemp opens with O_RDWR|O_CREATE|O_EXCL and mode 0600.
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("session key %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.Write(key)
	if werr == nil {
		werr = tmp.Sync()
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("session key %s: write: %w", path, werr)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fs.ErrExist
		}
		return fmt.Errorf("session key %s: %w", path, err)
	}
	return nil
}
