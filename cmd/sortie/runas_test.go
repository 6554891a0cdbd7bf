package main

import (
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// runAsTestUser is the unprivileged account the agent.run_as tests run agents as.
const runAsTestUser = "sortie-rt-agent"

// requireRunAsUser returns runAsTestUser's uid, creating the account when it is
// missing. It needs root: it skips without, except in CI, which must prove run_as.
func requireRunAsUser(t *testing.T) uint32 {
	t.Helper()
	skip := t.Skipf
	if os.Getenv("CI") != "" {
		skip = t.Fatalf
	}
	if os.Geteuid() != 0 {
		skip("skipped: agent.run_as needs the daemon to run as root, and the tests run as uid %d", os.Geteuid())
	}
	u, err := user.Lookup(runAsTestUser)
	if err != nil {
		if out, err := exec.Command("useradd", "--create-home", "--shell", "/bin/sh", runAsTestUser).CombinedOutput(); err != nil {
			skip("skipped: cannot create the user %s for agent.run_as: %v: %s", runAsTestUser, err, out)
		}
		if u, err = user.Lookup(runAsTestUser); err != nil {
			t.Fatal(err)
		}
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	return uint32(uid)
}

// openUp lets other users search each of dirs (the test's temporary directories are
// 0700): the agent's user must reach its workspace, the sortie executable and the
// daemon's directory, as it would in an operator's /srv/sortie.
func openUp(t *testing.T, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRedTeam_RunAsAnotherUser: a daemon running as root with agent.run_as runs its
// confined agent and its hooks as that user, in a workspace it owns; the attacks still
// fail, the ordinary work still succeeds, and the daemon's private files are not the
// user's to read even without the sandbox's help.
func TestRedTeam_RunAsAnotherUser(t *testing.T) {
	requireConfinement(t)
	uid := requireRunAsUser(t)
	t.Parallel()
	base, dir, envFile, results := redTeamMock(t, "RT-1", runAsTestUser)

	if b, err := os.ReadFile(filepath.Join(results, "whoami.out")); err != nil || !strings.Contains(string(b), runAsTestUser) {
		t.Errorf("the agent ran as %q, want %s (%v)", b, runAsTestUser, err)
	}
	if b, err := os.ReadFile(filepath.Join(base, "ws", "RT-1", "hook-user")); err != nil || strings.TrimSpace(string(b)) != runAsTestUser {
		t.Errorf("the after_create hook ran as %q, want %s (%v)", b, runAsTestUser, err)
	}
	for _, p := range []string{filepath.Join(base, "ws", "RT-1"), filepath.Join(base, "ws", "RT-1", "main.go"),
		filepath.Join(base, "ws", "RT-1", ".sortie"), filepath.Join(results, "whoami.out")} {
		fi, err := os.Lstat(p)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		if got := fi.Sys().(*syscall.Stat_t).Uid; got != uid {
			t.Errorf("%s belongs to uid %d, want %s's (%d)", p, got, runAsTestUser, uid)
		}
	}
	// The daemon's private files lost their group and other bits: the agent's user
	// could not read them even unconfined.
	for _, p := range []string{filepath.Join(dir, "sortie.db"), envFile} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s: mode %v (%v), want no group or other permissions", p, fi.Mode().Perm(), err)
		}
	}
}

// TestRunAs_RefusedWithoutRoot: only root can start processes as another user, and a
// daemon that is not root says so and how to fix it instead of running agents as
// itself. Run as root, the test starts the daemon as runAsTestUser.
func TestRunAs_RefusedWithoutRoot(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "issues.json", `[]`)
	wf := writeFile(t, dir, "WORKFLOW.md", "---\ntracker: {kind: file, path: issues.json, active_states: [Todo], terminal_states: [Done]}\nagent: {kind: mock, run_as: nobody}\nserver: {port: 0}\n---\nx\n")
	cmd := exec.Command(sortieBin, "--exit-when-idle", wf)
	cmd.Dir, cmd.Env = dir, testEnv(t.TempDir())
	if os.Geteuid() == 0 {
		uid := requireRunAsUser(t)
		u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10))
		if err != nil {
			t.Fatal(err)
		}
		gid, _ := strconv.ParseUint(u.Gid, 10, 32)
		openUp(t, filepath.Dir(dir), filepath.Dir(sortieBin))
		if err := os.Chown(dir, int(uid), int(gid)); err != nil {
			t.Fatal(err)
		}
		cmd.Env = append(cmd.Env, "HOME="+u.HomeDir, "TMPDIR="+dir)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uint32(gid)}}
	}
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "only root can start processes as another user") {
		t.Fatalf("a non-root daemon with agent.run_as: %v\n%s", err, out)
	}
}
