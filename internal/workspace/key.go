package workspace

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// MaxKeyLen is the longest key Key returns, in bytes. It stays well under the 255-byte
// file-name limit of common filesystems so tools can still add suffixes.
const MaxKeyLen = 128

// keyHashLen is the number of hex digits of the identifier's SHA-256 appended to keys
// that had to be changed: 16, 64 bits, so that no two identifiers share a workspace
// (with 8, 32 bits, whoever can choose an identifier could compute in about a second
// another one named the same: TestKey_KeepsSixtyFourBitsOfTheHash has such a pair).
const keyHashLen = 16

// legacyKeyHashLen is what keyHashLen was before: workspaces named with it are
// renamed to their new name when their issue next runs (AdoptLegacy).
const legacyKeyHashLen = 8

// Key returns the workspace directory name for an issue identifier. Characters outside
// [A-Za-z0-9._-] become '_'. When that changed anything, or the identifier is longer
// than MaxKeyLen, the result is truncated as needed and "-" plus the first 16 hex digits
// (64 bits) of the SHA-256 of the original identifier is appended, so "A/B" and "A_B"
// never share a directory. Identifiers that are already safe, such as "PROJ-1" or
// "42", are returned unchanged. An empty identifier, "." or ".." is an error wrapping
// ErrInvalidKey.
func Key(identifier string) (string, error) {
	return key(identifier, keyHashLen)
}

// legacyKey is the name Key gave identifier before it kept 64 bits of the hash, ""
// when that is the name it gives now (an identifier that needs no hash).
func legacyKey(identifier string) string {
	k, err := key(identifier, legacyKeyHashLen)
	if now, _ := Key(identifier); err != nil || k == now {
		return ""
	}
	return k
}

func key(identifier string, hashLen int) (string, error) {
	if identifier == "" || identifier == "." || identifier == ".." {
		return "", fmt.Errorf("workspace: issue identifier %q cannot name a directory: %w", identifier, ErrInvalidKey)
	}
	var b strings.Builder
	b.Grow(len(identifier))
	changed := false
	// Ranging over a string yields one RuneError per invalid byte, so malformed UTF-8
	// is replaced byte by byte and the key is always ASCII.
	for _, r := range identifier {
		if isKeyRune(r) {
			b.WriteRune(r)
			continue
		}
		b.WriteByte('_')
		changed = true
	}
	key := b.String()
	if !changed && len(key) <= MaxKeyLen {
		return key, nil
	}
	sum := sha256.Sum256([]byte(identifier))
	suffix := "-" + hex.EncodeToString(sum[:])[:hashLen]
	if limit := MaxKeyLen - len(suffix); len(key) > limit {
		key = key[:limit] // ASCII only, so any byte offset is a rune boundary
	}
	return key + suffix, nil
}

func isKeyRune(r rune) bool {
	switch {
	case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9':
		return true
	case r == '.', r == '_', r == '-':
		return true
	}
	return false
}

// adoptLegacy is AdoptLegacy for issue, when the manager's LegacyOwner says the
// workspace of the old name is issue's; never without one.
func (m *Manager) adoptLegacy(root string, issue Issue, path string) (string, error) {
	if m.owner == nil {
		return "", nil
	}
	return AdoptLegacy(root, issue.Identifier, path, func(oldPath string) bool { return m.owner(issue, oldPath) })
}

// AdoptLegacy renames the workspace an older Sortie made for identifier under root,
// named with only 32 bits of the identifier's hash (legacyKey), to path, its name now,
// so that an upgrade neither orphans an issue's workspace nor makes it a second one.
// It does nothing when path exists already, when there is no such workspace, when
// what is there is not a directory (a link is never followed nor moved), or when owns
// does not confirm that the directory is identifier's: another identifier can share
// the old name, and must not take over this workspace. It reports the old path when it
// renamed one.
func AdoptLegacy(root, identifier, path string, owns func(oldPath string) bool) (string, error) {
	old := legacyKey(identifier)
	if old == "" {
		return "", nil
	}
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		return "", nil // there already, or not ours to judge here (Prepare reports it)
	}
	oldPath := filepath.Join(root, old)
	fi, err := os.Lstat(oldPath)
	if err != nil || !fi.IsDir() || owns == nil || !owns(oldPath) {
		return "", nil
	}
	// No other run of this issue can be preparing it: the daemon runs an issue once
	// at a time.
	if err := os.Rename(oldPath, path); err != nil {
		if _, statErr := os.Lstat(path); statErr == nil {
			return "", nil
		}
		return "", fmt.Errorf("workspace: renaming %s, named by an older Sortie, to %s: %w", oldPath, path, err)
	}
	return oldPath, nil
}
