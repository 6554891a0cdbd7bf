package cgroup

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Setup makes the daemon's tree of run groups, name, inside its own cgroup v2 group. It
// fails when there is no cgroup v2 hierarchy, or it is not writable (a container
// without a delegated cgroup, a user without one), or cgroup.kill is missing (Linux
// before 5.14): the daemon then relies on the supervisor alone.
func Setup(name string) (*Tree, error) {
	mount, err := cgroup2Mount()
	if err != nil {
		return nil, err
	}
	own, err := ownGroup()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(mount, own, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cgroup v2 at %s is not writable here: %w", filepath.Join(mount, own), err)
	}
	if _, err := os.Stat(filepath.Join(dir, "cgroup.kill")); err != nil {
		return nil, fmt.Errorf("cgroup v2 has no cgroup.kill here (Linux 5.14 or later has): %w", err)
	}
	return &Tree{dir: dir}, nil
}

// cgroup2Mount finds where the cgroup v2 hierarchy is mounted (/sys/fs/cgroup, or
// /sys/fs/cgroup/unified on a hybrid system) in /proc/self/mountinfo.
func cgroup2Mount() (string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent major:minor root mountpoint options... - fstype source superoptions
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		fields, rest := strings.Fields(pre), strings.Fields(post)
		if ok && len(fields) >= 5 && len(rest) >= 1 && rest[0] == "cgroup2" {
			return fields[4], nil
		}
	}
	return "", errors.New("no cgroup v2 hierarchy is mounted")
}

// ownGroup is this process's cgroup v2 path, from /proc/self/cgroup's "0::" line.
func ownGroup() (string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			return p, nil
		}
	}
	return "", errors.New("this process is in no cgroup v2 group")
}
