// Package cgroup gives each local agent run its own cgroup v2 group where the
// hierarchy is writable, a second way, beside the supervisor's subreaper, to find and
// stop every process of a run: the daemon starts the run's first process inside the
// group (clone3 with CLONE_INTO_CGROUP), every descendant stays in it, and the run's
// end kills the group whole (cgroup.kill). A confined agent cannot move itself out:
// Landlock denies it the cgroup files.
package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"sortie/internal/fdio"
)

// Tree is the daemon's directory of run groups: <cgroup2 mount><the daemon's own
// group>/<name>.
type Tree struct {
	dir string
}

// Dir is the tree's directory.
func (t *Tree) Dir() string { return t.dir }

// Close removes the tree's directory when no run group is left in it (the daemon's
// exit); a group left running on purpose keeps it.
func (t *Tree) Close() { _ = os.Remove(t.dir) }

// Group is one run's cgroup, open while the run lasts.
type Group struct {
	dir string
	f   *os.File
}

// Run creates the group of run id and opens it for starting a process in it.
func (t *Tree) Run(id int64) (*Group, error) {
	dir := filepath.Join(t.dir, "run-"+strconv.FormatInt(id, 10))
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("cgroup of run %d: %w", id, err)
	}
	f, err := fdio.Open(dir, os.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return nil, fmt.Errorf("cgroup of run %d: %w", id, err)
	}
	return &Group{dir: dir, f: f}, nil
}

// FD is the group's directory descriptor, for SysProcAttr.CgroupFD.
func (g *Group) FD() int { return int(g.f.Fd()) }

// Dir is the group's directory.
func (g *Group) Dir() string { return g.dir }

// Kill kills every process of the group (cgroup.kill), waits up to timeout for the
// group to empty, and removes it. It returns how many processes it found.
func (g *Group) Kill(timeout time.Duration) (int, error) {
	defer g.f.Close()
	return kill(g.dir, timeout)
}

// Release closes the group and removes it when it is empty; a group whose processes
// were left running on purpose (agent.keep_processes) stays until they end.
func (g *Group) Release() {
	g.f.Close()
	_ = syscall.Rmdir(g.dir)
}

// KillAll kills and removes every run group of the tree: those a previous daemon's runs
// left when it died. It returns how many processes it found.
func (t *Tree) KillAll(timeout time.Duration) (int, error) {
	dirs, err := filepath.Glob(filepath.Join(t.dir, "run-*"))
	if err != nil {
		return 0, err
	}
	total := 0
	var errs []error
	for _, d := range dirs {
		n, err := kill(d, timeout)
		total += n
		errs = append(errs, err)
	}
	return total, errors.Join(errs...)
}

// KillRun kills and removes the group of run id, if there is one: what a run of a
// daemon that died left, where other daemons' run groups share the tree. It returns
// how many processes it found.
func (t *Tree) KillRun(id int64, timeout time.Duration) (int, error) {
	dir := filepath.Join(t.dir, "run-"+strconv.FormatInt(id, 10))
	if _, err := os.Stat(dir); err != nil {
		return 0, nil
	}
	return kill(dir, timeout)
}

// RemoveEmpty removes the run groups whose processes have all ended: those left by
// runs whose processes were kept running on purpose.
func (t *Tree) RemoveEmpty() {
	dirs, _ := filepath.Glob(filepath.Join(t.dir, "run-*"))
	for _, d := range dirs {
		_ = os.Remove(d) // fails, as it should, while the group has processes
	}
}

// Members lists the processes of the group at dir.
func Members(dir string) []int {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	return pids(b)
}

// pids reads the process ids of a cgroup.procs file.
func pids(b []byte) []int {
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

func kill(dir string, timeout time.Duration) (int, error) {
	// The kernel refuses to remove a group that still has processes (EBUSY), so an
	// empty one, the common case, is removed without reading its members first.
	if err := syscall.Rmdir(dir); err == nil || errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	n := len(Members(dir))
	if n > 0 {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0); err != nil {
			return n, fmt.Errorf("killing cgroup %s: %w", dir, err)
		}
		deadline := time.Now().Add(timeout)
		for len(Members(dir)) > 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond) // the kernel empties it asynchronously
		}
	}
	if err := syscall.Rmdir(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return n, fmt.Errorf("removing cgroup %s: %w", dir, err)
	}
	return n, nil
}
