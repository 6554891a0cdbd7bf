package supervise

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

func becomeSubreaper() error {
	return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
}

// process is one line of the process table: /proc/<pid>/stat's fields that matter here.
type process struct {
	pid, ppid, pgid int
	state           string
}

// processes lists every process, from /proc; with live, zombies are left out.
func processes(live bool) []process {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []process
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		ppid, pgid, state, err := ProcStat(pid)
		if err != nil || (live && state == "Z") {
			continue
		}
		out = append(out, process{pid: pid, ppid: ppid, pgid: pgid, state: state})
	}
	return out
}

// Descendants lists the living (not zombie) descendants of pid, from /proc.
func Descendants(pid int) []int {
	children := map[int][]int{}
	for _, p := range processes(true) {
		children[p.ppid] = append(children[p.ppid], p.pid)
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// Group lists the living (not zombie) members of process group pgid, from /proc.
func Group(pgid int) []int {
	var out []int
	for _, p := range processes(true) {
		if p.pgid == pgid {
			out = append(out, p.pid)
		}
	}
	return out
}

// HasEnv reports whether the environment of process pid holds each of vars
// (KEY=VALUE) whole.
func HasEnv(pid int, vars ...string) bool {
	env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	return err == nil && hasAll(env, vars)
}

// ProcStat reads a process's parent, process group and state (R, S, Z, ...) from
// /proc/<pid>/stat: fields 4, 5 and 3, after the parenthesised command name, which may
// itself hold spaces and parentheses.
func ProcStat(pid int) (ppid, pgid int, state string, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, "", err
	}
	ppid, pgid, state, err = parseStat(string(b))
	if err != nil {
		return 0, 0, "", fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return ppid, pgid, state, nil
}

// parseStat reads the state, parent and group of a /proc/<pid>/stat line. The command
// name in parentheses is the process's own choice (an agent can name itself
// "x) Z 1 1"), so the fields are read after its last closing parenthesis.
func parseStat(s string) (ppid, pgid int, state string, err error) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0, "", errors.New("malformed: no command name")
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 3 {
		return 0, 0, "", errors.New("malformed: too few fields")
	}
	ppid, err1 := strconv.Atoi(f[1])
	pgid, err2 := strconv.Atoi(f[2])
	if err := errors.Join(err1, err2); err != nil {
		return 0, 0, "", fmt.Errorf("malformed: %w", err)
	}
	return ppid, pgid, f[0], nil
}

// Adopt makes this process (the daemon) a child subreaper, so that a process an agent
// left behind whose supervisor was killed comes back to it rather than to init, and
// reaps such orphans when they exit, every interval until ctx ends. A zombie child
// counts as an orphan once it has been seen at two scans in a row: a child this
// process started itself is reaped at once by whoever started it (os/exec's Wait), so
// it is never taken from them.
func Adopt(done <-chan struct{}, interval time.Duration) error {
	if err := becomeSubreaper(); err != nil {
		return err
	}
	go func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		seen := map[int]bool{}
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			now := map[int]bool{}
			for _, pid := range zombieChildren(os.Getpid()) {
				if seen[pid] {
					var ws unix.WaitStatus
					_, _ = unix.Wait4(pid, &ws, unix.WNOHANG, nil)
					continue
				}
				now[pid] = true
			}
			seen = now
		}
	}()
	return nil
}

// zombieChildren lists the children of pid that have exited and wait to be reaped.
func zombieChildren(pid int) []int {
	var out []int
	for _, p := range processes(false) {
		if p.ppid == pid && p.state == "Z" {
			out = append(out, p.pid)
		}
	}
	return out
}

// Marked lists the living processes other than this one whose environment holds every
// one of markers (such as "SORTIE_RUN_ID=42" and "SORTIE_WORKSPACE=/srv/ws/PROJ-1":
// run ids alone repeat across daemons): what a run started, wherever it went, unless
// it cleared its environment (the supervisor catches those).
func Marked(markers ...string) []int {
	if len(markers) == 0 {
		return nil
	}
	self := os.Getpid()
	var out []int
	for _, p := range processes(true) {
		if p.pid != self && HasEnv(p.pid, markers...) {
			out = append(out, p.pid)
		}
	}
	return out
}

// hasAll reports whether environ (NUL-separated KEY=VALUE) holds each of vars whole.
func hasAll(environ []byte, vars []string) bool {
	for _, v := range vars {
		want := []byte(v + "\x00")
		if !bytes.HasPrefix(environ, want) && !bytes.Contains(environ, append([]byte{0}, want...)) &&
			!bytes.Equal(environ, []byte(v)) && !bytes.HasSuffix(environ, append([]byte{0}, v...)) {
			return false
		}
	}
	return true
}

// StopMarked stops the processes Marked(markers...) finds: SIGTERM, up to grace,
// SIGKILL. Those that were this process's children (adopted orphans) are reaped. It
// returns how many it signalled.
func StopMarked(grace time.Duration, markers ...string) int {
	pids := Marked(markers...)
	if len(pids) == 0 {
		return 0
	}
	for _, p := range pids {
		_ = unix.Kill(p, unix.SIGTERM)
	}
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) && len(Marked(markers...)) > 0 {
		reapChildren(pids)
		time.Sleep(20 * time.Millisecond) // foreign processes: there is nothing to wait on
	}
	for _, p := range Marked(markers...) {
		_ = unix.Kill(p, unix.SIGKILL)
	}
	reapChildren(pids)
	return len(pids)
}

// reapChildren reaps those of pids that are this process's exited children.
func reapChildren(pids []int) {
	self := os.Getpid()
	for _, p := range pids {
		if ppid, _, state, err := ProcStat(p); err == nil && ppid == self && state == "Z" {
			var ws unix.WaitStatus
			_, _ = unix.Wait4(p, &ws, unix.WNOHANG, nil)
		}
	}
}
