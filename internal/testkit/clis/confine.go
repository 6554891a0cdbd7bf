package clis

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sortie/internal/agent"
	"sortie/internal/agent/sandbox"
)

// ConfineEnv makes a contract-test binary act as `sortie confine` when it is started
// with "confine" as its first argument (see ConfineMain).
const ConfineEnv = "SORTIE_CONTRACT_CONFINE"

// ConfineMain runs sandbox.Main and reports true when the test binary was started as
// the confinement helper; TestMain calls it first and exits with code when it did.
func ConfineMain() (code int, ok bool) {
	if len(os.Args) < 2 || os.Args[1] != "confine" || os.Getenv(ConfineEnv) != "1" {
		return 0, false
	}
	return sandbox.Main(os.Args[2:], os.Stderr), true
}

// Escape is a confined agent's escape attempt: Script, run by the CLI's shell tool in
// ws, writes inside ws, tries to read a hidden "database" and to write outside; Check
// then says whether confinement held. Confinement is the agent.Confinement to start
// the session with (the test binary as `sortie confine`, TestMain calling
// ConfineMain); env gains ConfineEnv and a private TMPDIR.
type Escape struct {
	Script      string
	Confinement *agent.Confinement
	ws, secret  string
	outside     string
}

// NewEscape prepares an escape attempt for a CLI at cli (its install is granted) with
// workspace ws; writable are extra paths the rig writes (an argv log).
func NewEscape(t *testing.T, cli, ws string, env *[]string, writable ...string) *Escape {
	t.Helper()
	if _, err := sandbox.Available(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI needs Landlock to test confinement: %v", err)
		}
		t.Skipf("skipped: confinement needs Landlock: %v", err)
	}
	state := t.TempDir()
	e := &Escape{ws: ws, secret: filepath.Join(state, "sortie.db"), outside: filepath.Join(t.TempDir(), "escaped")}
	if err := os.WriteFile(e.secret, []byte("daemon-secret-4711"), 0o600); err != nil {
		t.Fatal(err)
	}
	e.Script = "printf inside > out.txt; (cat " + e.secret + " > leak.txt) 2>/dev/null; (printf x > " + e.outside + ") 2>/dev/null; " +
		"echo done > status.txt"
	tmp := t.TempDir()
	*env = append(*env, ConfineEnv+"=1", "TMPDIR="+tmp)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	read := append(append([]string(nil), sandbox.SystemRead...), agent.PathRoots(*env)...)
	e.Confinement = &agent.Confinement{Self: self, Policy: sandbox.Policy{
		Write: append(append([]string{ws, tmp}, writable...), sandbox.SystemWrite...),
		// A rig's wrapper script execs the pinned CLI from .tools, which a real
		// agent.command would name itself.
		// The daemon's directory is readable, as WORKFLOW.md's is to a real agent; only
		// hiding keeps the "database" in it from the agent.
		Read: append(append(read, agent.InstallRoots(cli)...), state),
		Hide: []string{e.secret},
	}}
	return e
}

// Check fails t unless the script ran to its end, its write in the workspace landed,
// and the hidden read and the outside write failed.
func (e *Escape) Check(t *testing.T) {
	t.Helper()
	if b, err := os.ReadFile(filepath.Join(e.ws, "status.txt")); err != nil || strings.TrimSpace(string(b)) != "done" {
		t.Fatalf("status.txt = %q, %v: the confined shell tool did not run to its end", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(e.ws, "out.txt")); err != nil || string(b) != "inside" {
		t.Errorf("out.txt = %q, %v: a write in the workspace must work confined", b, err)
	}
	if b, _ := os.ReadFile(filepath.Join(e.ws, "leak.txt")); strings.Contains(string(b), "daemon-secret-4711") {
		t.Errorf("leak.txt holds the hidden file's content: confinement let the agent read the daemon's state")
	}
	if _, err := os.Stat(e.outside); err == nil {
		t.Errorf("%s exists: the confined agent wrote outside its workspace", e.outside)
	}
}
