// Package pgtest starts a throwaway PostgreSQL server for tests: Debian's postgresql
// binaries (initdb, pg_ctl) make a cluster in a temporary directory, listening on a
// free port of 127.0.0.1 with trust authentication and fsync off, and it is stopped and
// removed when the test (Start) or the test binary (Main and Shared) ends. Without
// PostgreSQL a test is skipped with the reason, except under CI (CI set), where that is
// a failure: .ci/run installs it.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"
)

// Server is a running throwaway cluster.
type Server struct {
	Port int
	Dir  string // the cluster's data directory
	// User is the superuser to connect as, without a password.
	User string

	databases atomic.Int64 // databases made by NewDatabase, for their names
	// createOptions ends NewDatabase's CREATE DATABASE; see createDatabaseOptions.
	createOptions func() (string, error)
}

// URL is a connection URL for database db (e.g. "postgres").
func (s *Server) URL(db string) string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", s.User, s.Port, db)
}

// Start starts a cluster for t and stops it when t ends.
func Start(t testing.TB) *Server {
	t.Helper()
	s, stop, err := start()
	if err != nil {
		fail(t, err)
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Log(err)
		}
	})
	return s
}

// shared is the cluster of a test binary whose TestMain calls Main.
var shared struct {
	main bool // Main is running the tests
	once sync.Once
	srv  *Server
	stop func() error
	err  error
}

// Main runs a package's tests, m.Run, and then stops the cluster Shared started, if
// any, returning m.Run's exit code: call os.Exit(pgtest.Main(m)) from TestMain. One
// cluster then serves every test of the binary, each in databases of its own
// (NewDatabase), which is much faster than a cluster per test.
func Main(m *testing.M) int {
	shared.main = true
	code := m.Run()
	if shared.stop != nil {
		if err := shared.stop(); err != nil {
			fmt.Fprintln(os.Stderr, "pgtest:", err)
		}
	}
	return code
}

// Shared returns the test binary's cluster, starting it on the first call, so that a
// run of tests that need none starts none. It skips t without PostgreSQL (fails it
// under CI), and fails it when the package's TestMain does not call Main, which alone
// stops the cluster.
func Shared(t testing.TB) *Server {
	t.Helper()
	if !shared.main {
		t.Fatal("pgtest.Shared needs the package's TestMain to run the tests with pgtest.Main, which stops the cluster")
	}
	shared.once.Do(func() { shared.srv, shared.stop, shared.err = start() })
	if shared.err != nil {
		fail(t, shared.err)
	}
	return shared.srv
}

// NewDatabase creates an empty database for t, named t_<n>, and returns its URL. The
// database is dropped when t ends, after the cleanups t registered later (a store
// opened on it is closed first), forcing off any connection left open.
func (s *Server) NewDatabase(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("t_%d", s.databases.Add(1))
	options, err := s.createOptions()
	if err == nil {
		err = s.exec(`CREATE DATABASE ` + name + options)
	}
	if err != nil {
		t.Fatalf("pgtest: create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := s.exec(`DROP DATABASE IF EXISTS ` + name + ` WITH (FORCE)`); err != nil {
			t.Errorf("pgtest: drop database %s: %v", name, err)
		}
	})
	return s.URL(name)
}

// createDatabaseOptions returns the options of CREATE DATABASE for the server:
// PostgreSQL 15 and later copy the template as WAL by default, which takes about twice
// as long as copying its files for the tiny template of a test cluster.
func (s *Server) createDatabaseOptions() (string, error) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, s.URL("postgres"))
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	var version int
	if err := conn.QueryRow(ctx, `SELECT current_setting('server_version_num')::int`).Scan(&version); err != nil {
		return "", err
	}
	if version >= 150000 {
		return " STRATEGY FILE_COPY", nil
	}
	return "", nil
}

// exec runs one statement as the superuser in the postgres database.
func (s *Server) exec(sql string) error {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, s.URL("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

// missingError says why there is no cluster to start: a skip, or under CI a failure.
type missingError struct{ reason string }

func (e *missingError) Error() string { return e.reason }

func fail(t testing.TB, err error) {
	t.Helper()
	var missing *missingError
	switch {
	case !errors.As(err, &missing):
		t.Fatal(err)
	case os.Getenv("CI") != "":
		t.Fatalf("CI must run the PostgreSQL tests, but: %v", err)
	default:
		t.Skip(err)
	}
}

// start makes and starts a cluster; stop stops it and removes its directory.
func start() (s *Server, stop func() error, err error) {
	bin, err := binDir()
	if err != nil {
		return nil, nil, &missingError{fmt.Sprintf("skipped: PostgreSQL is not installed here (apt-get install postgresql): %v", err)}
	}
	// initdb refuses to run as root: the cluster is then the postgres user's.
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, nil, &missingError{fmt.Sprintf("skipped: running as root, and there is no postgres user to own the cluster: %v", err)}
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	base, err := os.MkdirTemp("", "sortie-pgtest-")
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(base)
		}
	}()
	if cred != nil {
		if err := os.Chown(base, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, nil, err
		}
	}
	port, err := freePort()
	if err != nil {
		return nil, nil, err
	}
	s = &Server{Dir: filepath.Join(base, "data"), User: "sortie", Port: port}
	s.createOptions = sync.OnceValues(s.createDatabaseOptions)
	run := func(name string, args ...string) error {
		cmd := exec.Command(filepath.Join(bin, name), args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		cmd.Dir = base
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("pgtest: %s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return nil
	}
	if err := run("initdb", "-D", s.Dir, "-U", s.User, "-A", "trust", "-E", "UTF8", "--no-sync", "--no-instructions"); err != nil {
		return nil, nil, err
	}
	if err := run("pg_ctl", "-D", s.Dir, "-l", filepath.Join(base, "log"), "-w", "-t", "60",
		"-o", fmt.Sprintf("-p %d -c listen_addresses=127.0.0.1 -k %s -c fsync=off -c synchronous_commit=off -c full_page_writes=off", s.Port, base),
		"start"); err != nil {
		return nil, nil, err
	}
	stop = func() error {
		err := run("pg_ctl", "-D", s.Dir, "-m", "immediate", "-w", "stop")
		if err != nil {
			err = fmt.Errorf("stopping the throwaway PostgreSQL: %w", err)
		}
		return errors.Join(err, os.RemoveAll(base))
	}
	return s, stop, nil
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

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
