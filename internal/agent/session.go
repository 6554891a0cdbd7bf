package agent

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"

	"sortie/internal/runas"
)

// CheckWorkspace is StartSession's check of the workspace: a non-empty absolute path
// of an existing directory, else an invalid_workspace_cwd error.
func CheckWorkspace(ws string) error {
	if ws == "" || !filepath.IsAbs(ws) {
		return Errorf(ErrInvalidWorkspace, "workspace %q: must be an absolute path", ws)
	}
	fi, err := os.Stat(ws)
	if err != nil {
		return &Error{Kind: ErrInvalidWorkspace, Message: "workspace", Err: err}
	}
	if !fi.IsDir() {
		return Errorf(ErrInvalidWorkspace, "workspace %s: not a directory", ws)
	}
	return nil
}

// NewSessionID returns a random version 4 UUID, the form CLIs take for a session id.
func NewSessionID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// Versioner is implemented by adapters that can name the version of the CLI they run.
// The daemon calls it once at startup, as a preflight check that the CLI runs at all,
// and records the answer with every run.
type Versioner interface {
	Version(ctx context.Context) (string, error)
}

// Warner is implemented by adapters whose configuration block had something worth an
// operator's attention that is not an error (an unknown key, say).
type Warner interface {
	Warnings() []string
}

// IssueStateRemover is implemented by adapters that keep an issue's CLI state on the
// daemon's machine between its sessions (a configuration or home directory of the
// issue's own, with the transcripts a session resumes from). The daemon calls
// RemoveIssueState once the issue has ended (it reached a terminal state and its
// workspace was removed): nothing resumes it after that, and a daemon that runs for
// months would otherwise keep a directory for every issue it ever ran. env is the
// environment the issue's sessions had (SORTIE_ISSUE_ID, HOME, XDG_CACHE_HOME),
// workspace their workspace, owner the agent's user (agent.run_as; nil for the
// daemon's). State that is not there is not an error.
type IssueStateRemover interface {
	RemoveIssueState(env []string, workspace string, owner *runas.User) error
}
