package agent

import (
	"fmt"
	"os"
	"path/filepath"
)

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
