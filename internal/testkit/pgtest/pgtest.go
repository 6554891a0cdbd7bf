// Package pgtest starts a throwaway PostgreSQL server for a test: Debian's postgresql
// binaries (initdb, pg_ctl) make a cluster in a temporary directory, listening on a
// free port of 127.0.0.1 with trust authentication and fsync off, and it is stopped and
// removed when the test ends. Without PostgreSQL a test is skipped with the reason,
// except under CI (CI set), where that is a failure: .ci/run installs it.
package pgtest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// Server is a running throwaway cluster.
type Server struct {
	Port int
	Dir  string // the cluster's data directory
	// User is the superuser to connect as, without a password.
	User string
}

// URL is a connection URL for database db (e.g. "postgres").
func (s *Server) URL(db string) string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", s.User, s.Port, db)
}

// Start starts a cluster for t and stops it when t ends.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := binDir()
	if err != nil {
		skip(t, "skipped: PostgreSQL is not installed here (apt-get install postgresql): %v", err)
	}
	// initdb refuses to run as root: the cluster is then the postgres user's.
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			skip(t, "skipped: running as root, and there is no postgres user to own the cluster: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	base, err := os.MkdirTemp("", "sortie-pgtest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if cred != nil {
		if err := os.Chown(base, int(cred.Uid), int(cred.Gid)); err != nil {
			t.Fatal(err)
		}
	}
	s := &Server{Dir: filepath.Join(base, "data"), User: "sortie", Port: freePort(t)}
	run := func(name string, args ...string) {
		t.Helper()
		cmd := exec.Command(filepath.Join(bin, name), args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		cmd.Dir = base
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
	}
	run("initdb", "-D", s.Dir, "-U", s.User, "-A", "trust", "-E", "UTF8", "--no-sync", "--no-instructions")
	run("pg_ctl", "-D", s.Dir, "-l", filepath.Join(base, "log"), "-w", "-t", "60",
		"-o", fmt.Sprintf("-p %d -c listen_addresses=127.0.0.1 -k %s -c fsync=off -c synchronous_commit=off -c full_page_writes=off", s.Port, base),
		"start")
	t.Cleanup(func() {
		cmd := exec.Command(filepath.Join(bin, "pg_ctl"), "-D", s.Dir, "-m", "immediate", "-w", "stop")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Logf("stopping the throwaway PostgreSQL: %v\n%s", err, out)
		}
	})
	return s
}

func skip(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("CI must run the PostgreSQL tests, but: "+format, args...)
	}
	t.Skipf(format, args...)
}

// binDir is where initdb and pg_ctl are: the newest /usr/lib/postgresql/<version>/bin
// (Debian keeps them off PATH), else the directory of initdb on PATH.
func binDir() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	p, err := exec.LookPath("initdb")
	if err != nil {
		return "", err
	}
	return filepath.Dir(p), nil
}

func version(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
