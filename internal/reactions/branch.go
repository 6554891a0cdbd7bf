package reactions

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"sortie/internal/workspace"
)

// Files the agent may write to name its change.
const (
	scmFile     = "scm.json" // .sortie/scm.json: {"branch": ..., "pr_number": ...}
	maxSCMBytes = 4 << 10
	maxHEAD     = 4 << 10
)

// scmInfo is .sortie/scm.json as the reference daemon reads it. Every field is the
// agent's word: the branch is only a query parameter (the code host client checks its
// shape); owner and repo are ignored (the repository is always the configured one),
// and so is the pull request number (the pull request is the one of the branch: an
// agent must not point Sortie at a human's pull request).
type scmInfo struct {
	Branch   string `json:"branch"`
	PRNumber int64  `json:"pr_number"`
}

// readBranch finds the branch of the change in the workspace at ws: .sortie/scm.json's
// branch when the agent wrote one, else the branch .git/HEAD names. Both are read
// without following links, at most a few KiB, and git is never run: the workspace is
// the agent's. "" with no error when neither names a branch.
func readBranch(ws string) (branch string, pr int64, err error) {
	data, err := workspace.ReadSortieFile(ws, scmFile, maxSCMBytes)
	switch {
	case err == nil:
		var s scmInfo
		if jerr := json.Unmarshal(data, &s); jerr != nil {
			return "", 0, fmt.Errorf(".sortie/scm.json is not the JSON object expected: %v", jerr)
		}
		if b := strings.TrimSpace(s.Branch); b != "" {
			if err := checkBranch(b, ".sortie/scm.json"); err != nil {
				return "", 0, err
			}
			return b, max(s.PRNumber, 0), nil
		}
	case !errors.Is(err, fs.ErrNotExist):
		return "", 0, err
	}
	return headBranch(ws)
}

// headBranch reads the branch named by the workspace's .git/HEAD ("ref: refs/heads/X").
func headBranch(ws string) (string, int64, error) {
	root, err := os.OpenRoot(ws)
	if err != nil {
		return "", 0, err
	}
	defer root.Close()
	// Each component without following a link: .git and HEAD are the agent's to
	// replace, and a link out of the workspace must not be read.
	if fi, err := root.Lstat(".git"); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", 0, nil
		}
		return "", 0, err
	} else if !fi.IsDir() {
		return "", 0, nil // a worktree's .git file: no branch read from it
	}
	f, err := root.OpenFile(".git/HEAD", os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", 0, nil
		}
		return "", 0, fmt.Errorf("reading .git/HEAD: %w", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return "", 0, errors.New(".git/HEAD is not a regular file")
	}
	data, err := io.ReadAll(io.LimitReader(f, maxHEAD+1))
	if err != nil {
		return "", 0, err
	}
	if len(data) > maxHEAD {
		return "", 0, errors.New(".git/HEAD is too large")
	}
	line, _, _ := strings.Cut(string(data), "\n")
	ref, ok := strings.CutPrefix(strings.TrimSpace(line), "ref: refs/heads/")
	if !ok {
		return "", 0, nil // a detached HEAD names no branch
	}
	ref = strings.TrimSpace(ref)
	if err := checkBranch(ref, ".git/HEAD"); err != nil {
		return "", 0, err
	}
	return ref, 0, nil
}

// checkBranch refuses what the agent's files may not name: a control character, or
// owner:branch, a fork's branch (the pull request must come from the configured
// repository).
func checkBranch(b, from string) error {
	if controlChar(b) {
		return errors.New(from + " names a branch with a control character")
	}
	if strings.Contains(b, ":") {
		return errors.New(from + " names another repository's branch (owner:branch); only the configured repository's branches are watched")
	}
	return nil
}

func controlChar(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f })
}
