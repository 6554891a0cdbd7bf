//go:build linux

package proc

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"sortie/internal/agent/cgroup"
	"sortie/internal/agent/proc/proctest"
)

// A child started without a supervisor (SweepCgroup) leaves nothing behind: what left
// its process group (setsid) is stopped through its cgroup once it exits, before
// Wait returns, and the escaped process holding stdout does not keep the turn open.
func TestSweepCgroup_StopsWhatLeftTheGroupWhenTheChildExits(t *testing.T) {
	tree, err := cgroup.Setup("sortie-proc-test-" + strconv.Itoa(os.Getpid()))
	if err != nil {
		if os.Getenv("CI") != "" && os.Geteuid() == 0 {
			t.Fatalf("CI runs as root with cgroup v2: %v", err)
		}
		t.Skipf("skipped: cgroup v2 is not writable here: %v", err)
	}
	defer tree.Close()
	g, err := tree.Run(1)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Kill(5 * time.Second)
	c := shell(`setsid sh -c 'echo $$; exec sleep 300' & sleep 0.2; echo done`)
	c.Grace = 2 * time.Second
	c.CgroupFD, c.SweepCgroup = g.FD(), true
	p := mustStart(t, t.Context(), c)
	lr := NewLineReader(p.Stdout(), 0)
	escaped := nextPID(t, lr)
	t.Cleanup(func() { syscall.Kill(escaped, syscall.SIGKILL) })
	rest := restOfOutput(lr)
	exit := p.Wait()
	if exit.Code != 0 || lr.Err() != nil || strings.Join(rest, ",") != "done" {
		t.Fatalf("exit %+v, output %q, err %v; want the script's own end", exit, rest, lr.Err())
	}
	proctest.WaitExited(t, escaped, 10*time.Second)
	if left := cgroup.Members(g.Dir()); len(left) != 0 {
		t.Errorf("left in the cgroup after Wait: %v", left)
	}
}

// A Confine that fails starts nothing: the child never runs unconfined.
func TestStart_ConfineFailureStartsNothing(t *testing.T) {
	marker := t.TempDir() + "/ran"
	c := shell(`touch ` + marker)
	c.Confine = func() error { return errors.New("no Landlock here") }
	if p, err := Start(t.Context(), c); err == nil {
		p.Wait()
		t.Fatal("Start succeeded although Confine failed")
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the child ran although Confine failed")
	}
}
