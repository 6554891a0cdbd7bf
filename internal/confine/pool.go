package confine

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"sortie/internal/fdio"
	"sortie/internal/runas"
)

// maxPooled bounds the emptied run directories a daemon keeps for reuse.
const maxPooled = 64

// TmpPool keeps the temporary directories of finished runs, emptied, for the next
// runs: renaming one costs no inode, where making and removing a directory per run
// does, and on ext4 without a journal every directory removed makes each later file
// creation on the disk dearer for a minute. Only a directory whose run is known to
// have nothing left running (its cgroup was emptied and removed) is kept: nothing of
// one issue's agent can still write into a directory another issue's agent gets.
type TmpPool struct {
	mu   sync.Mutex
	free []string
}

// Get returns a directory for run id in parent, owned by owner with mode 0700: a
// pooled one renamed for the run, or a new one.
func (p *TmpPool) Get(parent string, id int64, owner *runas.User) (string, error) {
	prefix := "run-" + strconv.FormatInt(id, 10) + "-"
	for {
		old := p.pop(parent)
		if old == "" {
			break
		}
		// run-<previous id>-<random> becomes run-<id>-<random>.
		base := filepath.Base(old)
		dir := filepath.Join(parent, prefix+base[strings.LastIndexByte(base, '-')+1:])
		// The previous run's agent owned it (agent.run_as) and may have opened it
		// up: its mode and owner are set again.
		if err := os.Rename(old, dir); err == nil && os.Chmod(dir, 0o700) == nil && owner.Chown(dir) == nil {
			return dir, nil
		}
		_ = os.RemoveAll(old)
		_ = os.RemoveAll(dir)
	}
	dir, err := os.MkdirTemp(parent, prefix+"*")
	if err != nil {
		return "", err
	}
	if err := owner.Chown(dir); err != nil {
		_ = os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

func (p *TmpPool) pop(parent string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := len(p.free) - 1; i >= 0; i-- {
		if d := p.free[i]; filepath.Dir(d) == parent {
			p.free = append(p.free[:i], p.free[i+1:]...)
			return d
		}
	}
	return ""
}

// Put takes back dir once its run is over: emptied and kept when reuse is true and
// the pool has room, else removed.
func (p *TmpPool) Put(dir string, reuse bool) {
	if reuse && emptyDir(dir) == nil {
		p.mu.Lock()
		if len(p.free) < maxPooled {
			p.free = append(p.free, dir)
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
	}
	if err := syscall.Rmdir(dir); err != nil {
		_ = os.RemoveAll(dir)
	}
}

// Drain removes every pooled directory (the daemon is stopping).
func (p *TmpPool) Drain() {
	p.mu.Lock()
	free := p.free
	p.free = nil
	p.mu.Unlock()
	for _, d := range free {
		_ = os.RemoveAll(d)
	}
}

// emptyDir removes everything in dir, leaving dir.
func emptyDir(dir string) error {
	f, err := fdio.Open(dir, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return err
	}
	var errs []error
	for _, n := range names {
		errs = append(errs, os.RemoveAll(filepath.Join(dir, n)))
	}
	return errors.Join(errs...)
}
