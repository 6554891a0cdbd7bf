package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// IssueStateDir is where the CLI named cli keeps one issue's state when Sortie runs it
// locally: <cache>/sortie/<cli>/<workflow>/<issue>, below the agent user's cache
// directory (CacheHome, else a directory of the daemon's user below the temporary
// one). The keys are the start of the SHA-256 of the workflow's directory and of the
// issue (SORTIE_ISSUE_ID, which the daemon sets; the workspace, unique per issue, when
// it is unset), so it is the same for every turn of the issue, after a restart too.
func IssueStateDir(env []string, cli, workflowDir, workspace string) string {
	base := CacheHome(env)
	if base == "" {
		base = filepath.Join(os.TempDir(), fmt.Sprintf("sortie-%d", os.Getuid()))
	}
	wf := sha256.Sum256([]byte(filepath.Clean(workflowDir)))
	issue := "issue:" + EnvValue(env, "SORTIE_ISSUE_ID")
	if issue == "issue:" {
		issue = "workspace:" + filepath.Clean(workspace)
	}
	is := sha256.Sum256([]byte(issue))
	return filepath.Join(base, "sortie", cli, hex.EncodeToString(wf[:6]), hex.EncodeToString(is[:8]))
}

// CacheHome is the agent user's cache directory in env: XDG_CACHE_HOME, else
// ~/.cache; "" without either (or with relative ones).
func CacheHome(env []string) string {
	if v := EnvValue(env, "XDG_CACHE_HOME"); filepath.IsAbs(v) {
		return v
	}
	if home := EnvValue(env, "HOME"); filepath.IsAbs(home) {
		return filepath.Join(home, ".cache")
	}
	return ""
}

// stateDirLevels is how many directories OpenStateDir checks: <issue> and its three
// parents, up to sortie.
const stateDirLevels = 4

// OpenStateDir opens dir, a per-issue state directory Sortie made at
// <cache>/sortie/<cli>/<workflow>/<issue>, as a root nothing below it can lead out of.
//
// It guarantees that dir (<issue>) and its three nearest parents (<workflow>, <cli> and
// sortie; <cache> and above are not checked) are directories and not links, and that
// the root opened is the directory it checked: one that changed while it was opened is
// refused. With agent.run_as and no confinement, the agent's user could otherwise
// point one of them elsewhere and have the daemon remove what is there.
func OpenStateDir(dir string) (*os.Root, error) {
	p := filepath.Clean(dir)
	var fi os.FileInfo
	for i := range stateDirLevels {
		st, err := os.Lstat(p)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			return nil, fmt.Errorf("%s is not a directory (a link?)", p)
		}
		if i == 0 {
			fi = st
		}
		p = filepath.Dir(p)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	if st, err := root.Stat("."); err != nil || !os.SameFile(fi, st) {
		root.Close()
		return nil, fmt.Errorf("%s changed while it was opened", dir)
	}
	return root, nil
}

// RemoveStateDir removes dir, a per-issue state directory as OpenStateDir opens it, and
// everything in it. A missing one is not an error. Nothing outside dir is removed, even
// if a link replaced part of it: one of its levels that is not a directory, or that
// changes while it is opened, is an error and nothing is removed.
func RemoveStateDir(dir string) error {
	root, err := OpenStateDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return RemoveOpened(root, dir)
}

// RemoveOpened empties root, the directory dir opened safely, closes it, and removes
// dir. Had dir been swapped for a link meanwhile, the link is what goes.
func RemoveOpened(root *os.Root, dir string) error {
	err := EmptyRoot(root)
	root.Close()
	if err != nil {
		return fmt.Errorf("removing %s: %w", dir, err)
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// EmptyRoot removes everything in root, never following a link out of it.
func EmptyRoot(root *os.Root) error {
	entries, err := fs.ReadDir(root.FS(), ".")
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := root.RemoveAll(e.Name()); err != nil {
			return err
		}
	}
	return nil
}
