//go:build linux

package cgroup

import (
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// TestRunGroup_HoldsEveryDescendantAndKillsThemWhole: a process started in a run's
// group takes its detached descendants with it; Kill ends them all and removes the
// group, and the tree goes with the daemon.
func TestRunGroup_HoldsEveryDescendantAndKillsThemWhole(t *testing.T) {
	tree, err := Setup("sortie-test-" + strconv.Itoa(os.Getpid()))
	if err != nil {
		t.Skipf("skipped: cgroup v2 is not writable here: %v", err)
	}
	defer tree.Close()
	g, err := tree.Run(7)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/sh", "-c", "setsid sleep 41 & exec sleep 42")
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: g.FD()}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for len(Members(g.Dir())) < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // the shell forks in its own time
	}
	if got := Members(g.Dir()); len(got) < 2 {
		t.Fatalf("members = %v, want the shell's sleep and its detached one", got)
	}
	n, err := g.Kill(5 * time.Second)
	if err != nil || n < 2 {
		t.Fatalf("Kill = %d, %v", n, err)
	}
	if _, err := os.Stat(g.Dir()); !os.IsNotExist(err) {
		t.Errorf("the run's group %s is still there (%v)", g.Dir(), err)
	}
	tree.Close()
	if _, err := os.Stat(tree.Dir()); !os.IsNotExist(err) {
		t.Errorf("the tree %s outlived Close (%v)", tree.Dir(), err)
	}
}
