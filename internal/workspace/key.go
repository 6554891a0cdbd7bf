package workspace

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// MaxKeyLen is the longest key Key returns, in bytes. It stays well under the 255-byte
// file-name limit of common filesystems so tools can still add suffixes.
const MaxKeyLen = 128

// keyHashLen is the number of hex digits of the identifier's SHA-256 appended to keys
// that had to be changed.
const keyHashLen = 8

// Key returns the workspace directory name for an issue identifier. Characters outside
// [A-Za-z0-9._-] become '_'. When that changed anything, or the identifier is longer
// than MaxKeyLen, the result is truncated as needed and "-" plus the first 8 hex digits
// of the SHA-256 of the original identifier is appended, so "A/B" and "A_B" never share
// a directory. Identifiers that are already safe, such as "PROJ-1" or "42", are returned
// unchanged. An empty identifier, "." or ".." is an error wrapping ErrInvalidKey.
func Key(identifier string) (string, error) {
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
	suffix := "-" + hex.EncodeToString(sum[:])[:keyHashLen]
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
