//go:build linux

package proctest

import (
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"
)

// TestHelpers_SeeAGroupAndItsEnd: the helpers find a live process group by its id and
// by a string in its environment, and see it gone once it is killed and reaped.
func TestHelpers_SeeAGroupAndItsEnd(t *testing.T) {
	marker := "PROCTEST_MARK=" + time.Now().Format("150405.000000000")
	// The leader stays the shell (no exec of its own after Start returned), so its
	// environment is never read in the middle of an exec.
	cmd := exec.Command("/bin/sh", "-c", "sleep 30 & wait")
	cmd.Env = append(os.Environ(), marker)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	if !Alive(pgid) {
		t.Fatal("Alive is false for a process just started")
	}
	if m := GroupMembers(t, pgid); !slices.Contains(m, pgid) {
		t.Errorf("GroupMembers(%d) = %v, want the leader in it", pgid, m)
	}
	if m := WithEnv(t, marker); !slices.Contains(m, pgid) {
		t.Errorf("WithEnv(%q) = %v, want the leader", marker, m)
	}
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	WaitExited(t, pgid, 10*time.Second)
	_ = cmd.Wait()
	if Alive(pgid) {
		t.Error("Alive is true for a killed, reaped process")
	}
	RequireGroupGone(t, pgid)
}
