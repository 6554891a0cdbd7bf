package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// environFD names the file descriptor through which the daemon hands its environment
// to itself across concealEnviron's exec.
const environFD = "SORTIE_ENVIRON_FD"

// visibleEnv are the variables left in the daemon's /proc/<pid>/environ: nothing
// secret, and what the Go runtime reads before main.
var visibleEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TERM", "TZ", "TMPDIR",
	"PWD", "GODEBUG", "GOTRACEBACK", "GOMAXPROCS", "GOMEMLIMIT", "GOGC", "GORACE", "GOCOVERDIR"}

// concealEnviron keeps the daemon's secrets out of /proc/<pid>/environ, which shows
// the environment a process was started with, whatever it does later. Making the
// daemon non-dumpable (hideEnviron) hides that file from other users' processes, but
// not from one that keeps CAP_SYS_PTRACE or from every kernel: measured here, a
// confined agent running as root still read it. So the daemon starts itself again with
// only visibleEnv in its initial environment, and reads the rest back from a memory
// file into its own copy (os.Environ), which /proc does not show. On the second start
// it restores the environment and returns. Any failure leaves the environment as it
// was and is returned for a warning.
func concealEnviron() error {
	if v, ok := os.LookupEnv(environFD); ok {
		return restoreEnviron(v)
	}
	env := os.Environ()
	var kept []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if slices.Contains(visibleEnv, k) || strings.HasPrefix(k, "LC_") {
			kept = append(kept, kv)
		}
	}
	if len(kept) == len(env) {
		return nil // nothing to conceal
	}
	fd, err := unix.MemfdCreate("sortie-environ", 0) // no CLOEXEC: it must survive exec
	if err != nil {
		return fmt.Errorf("memfd_create: %w", err)
	}
	f := os.NewFile(uintptr(fd), "sortie-environ")
	if _, err := f.WriteString(strings.Join(env, "\x00")); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		f.Close()
		return err
	}
	err = syscall.Exec(exe, os.Args, append(kept, environFD+"="+strconv.Itoa(fd)))
	f.Close()
	return fmt.Errorf("starting again without secrets in the initial environment: %w", err)
}

// restoreEnviron reads the environment concealEnviron handed over on descriptor v.
func restoreEnviron(v string) error {
	os.Unsetenv(environFD)
	fd, err := strconv.Atoi(v)
	if err != nil || fd < 3 {
		return fmt.Errorf("%s=%q is not a descriptor", environFD, v)
	}
	f := os.NewFile(uintptr(fd), "sortie-environ")
	data, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("reading the environment back: %w", err)
	}
	os.Clearenv()
	for _, kv := range strings.Split(string(data), "\x00") {
		if k, val, ok := strings.Cut(kv, "="); ok && k != "" {
			os.Setenv(k, val)
		}
	}
	return nil
}
