//go:build linux

package supervise

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestHasAll_MatchesWholeVariablesOnly(t *testing.T) {
	env := []byte("A=1\x00SORTIE_RUN_ID=42\x00SORTIE_WORKSPACE=/ws/P-1\x00Z=9")
	for _, c := range []struct {
		vars []string
		want bool
	}{
		{[]string{"SORTIE_RUN_ID=42"}, true},
		{[]string{"SORTIE_RUN_ID=42", "SORTIE_WORKSPACE=/ws/P-1"}, true},
		{[]string{"A=1"}, true},
		{[]string{"Z=9"}, true},
		{[]string{"SORTIE_RUN_ID=4"}, false}, // a prefix of 42
		{[]string{"RUN_ID=42"}, false},       // a suffix of a name
		{[]string{"SORTIE_RUN_ID=42", "SORTIE_WORKSPACE=/ws/P-10"}, false},
	} {
		if got := hasAll(env, c.vars); got != c.want {
			t.Errorf("hasAll(%q) = %v, want %v", c.vars, got, c.want)
		}
	}
}

func TestProcStat_ReadsThisProcess(t *testing.T) {
	ppid, pgid, state, err := ProcStat(os.Getpid())
	if err != nil || ppid != os.Getppid() || pgid != syscall.Getpgrp() || state == "" {
		t.Fatalf("ProcStat(self) = %d, %d, %q, %v; want ppid %d, pgid %d", ppid, pgid, state, err, os.Getppid(), syscall.Getpgrp())
	}
}

// TestSweep_StopsDetachedDescendants: a child's setsid'd grandchild is a descendant
// like any other; Sweep stops both and reaps the child.
func TestSweep_StopsDetachedDescendants(t *testing.T) {
	cmd := exec.Command("/bin/sh", "-c", "setsid sleep 31 & exec sleep 32")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait until both sleeps run: the detached one has gone through setsid's exec, so
	// the sweep meets the process as it will stay, not a fork that is still the shell.
	running := func(found []int) bool {
		seen := 0
		for _, p := range found {
			if b, err := os.ReadFile("/proc/" + itoa(p) + "/cmdline"); err == nil &&
				(strings.HasPrefix(string(b), "sleep\x0031") || strings.HasPrefix(string(b), "sleep\x0032")) {
				seen++
			}
		}
		return seen == 2
	}
	deadline := time.Now().Add(10 * time.Second)
	for !running(Descendants(os.Getpid())) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // the shell forks in its own time
	}
	found := Descendants(os.Getpid())
	if !running(found) {
		t.Fatalf("descendants = %v, want the shell's sleep and its detached sleep", found)
	}
	Sweep(time.Second)
	// A signalled process takes a moment to die, and this test process is no subreaper:
	// the detached sleep, orphaned when its parent died, is init's to reap. Alive means
	// still running a while after the sweep.
	alive := func(p int) (bool, string) {
		b, err := os.ReadFile("/proc/" + itoa(p) + "/cmdline")
		if err != nil || !strings.Contains(string(b), "sleep") {
			return false, ""
		}
		_, _, state, err := ProcStat(p)
		return err == nil && state != "Z", string(b)
	}
	for _, p := range found {
		deadline := time.Now().Add(5 * time.Second)
		for {
			ok, cmdline := alive(p)
			if !ok {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("process %d (%q) survived the sweep", p, cmdline)
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestParseStat_ReadsAfterTheCommandName(t *testing.T) {
	ppid, pgid, state, err := parseStat("123 (evil) Z 1 1 (x) S 7 8 9 10") // the name is the process's choice
	if err != nil || state != "S" || ppid != 7 || pgid != 8 {
		t.Fatalf("parseStat = %d, %d, %q, %v; want S 7 8", ppid, pgid, state, err)
	}
	for _, bad := range []string{"", "123 no parens", "1 (x) S", "1 (x) S a b"} {
		if _, _, _, err := parseStat(bad); err == nil {
			t.Errorf("parseStat(%q) accepted a malformed line", bad)
		}
	}
}

func FuzzParseStat(f *testing.F) {
	f.Add("1 (init) S 0 1 1 0 -1")
	f.Add("42 (a) b) c) R 7 42 42")
	f.Fuzz(func(t *testing.T, s string) {
		ppid, pgid, state, err := parseStat(s)
		if err == nil && state == "" {
			t.Errorf("parseStat(%q) = %d, %d, empty state, no error", s, ppid, pgid)
		}
	})
}
