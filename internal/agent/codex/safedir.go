package codex

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"sortie/internal/agent"
	"sortie/internal/runas"
)

// CODEX_HOME and the user's login are opened by agent.OpenDir and agent.ReadOwnedFile
// (internal/agent/credfile.go), which never follow a link the agent's user planted.

// checkPrivate refuses a CODEX_HOME that is not the agent user's alone: another user
// (who could have made it in a shared directory beforehand) or group or others could
// read its threads and the login, or plant what codex loads.
func checkPrivate(d *os.File, owner *runas.User) error {
	fi, err := d.Stat()
	if err != nil {
		return err
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(d.Fd()), &st); err != nil {
		return err
	}
	uid := agent.AgentUID(owner)
	if int(st.Uid) != uid || fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("CODEX_HOME %s belongs to uid %d with mode %s; it must belong to the agent's user (uid %d) with no access for group or others: remove it (Sortie creates it), or chown %d and chmod 700 it if it is yours",
			d.Name(), st.Uid, fi.Mode().Perm(), uid, uid)
	}
	return nil
}

// openRoot is d as an os.Root, for the operations below it (which never leave it),
// checked to be the very directory d is, whatever happened to its path since.
func openRoot(d *os.File) (*os.Root, error) {
	r, err := os.OpenRoot(d.Name())
	if err != nil {
		return nil, err
	}
	a, err1 := d.Stat()
	b, err2 := r.Stat(".")
	if err := errors.Join(err1, err2); err != nil {
		r.Close()
		return nil, err
	}
	if !os.SameFile(a, b) {
		r.Close()
		return nil, fmt.Errorf("%s changed while Sortie opened it", d.Name())
	}
	return r, nil
}
