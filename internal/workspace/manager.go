package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"sortie/internal/runas"
)

// Hook names, as in WORKFLOW.md's hooks block. They are the Hook of a HookError.
const (
	HookAfterCreate  = "after_create"
	HookBeforeRun    = "before_run"
	HookAfterRun     = "after_run"
	HookBeforeRemove = "before_remove"
)

// DefaultHookTimeout is the hook timeout when Config.HookTimeout is not positive, the
// default of hooks.timeout_ms.
const DefaultHookTimeout = 60 * time.Second

// dirMode is the mode of the root, of workspaces and of `.sortie/`, before umask.
const dirMode = 0o750

// Hooks are the shell scripts of WORKFLOW.md's hooks block. An empty or blank script
// is not run.
type Hooks struct {
	AfterCreate  string
	BeforeRun    string
	AfterRun     string
	BeforeRemove string
}

// Config is what a Manager is built from.
type Config struct {
	// Root is workspace.root, already expanded (~, $VAR). It is made absolute; it is
	// created and resolved through symlinks when a workspace is prepared.
	Root  string
	Hooks Hooks
	// HookTimeout bounds each hook run; DefaultHookTimeout when not positive.
	HookTimeout time.Duration
	// BaseEnv is the daemon's environment (os.Environ()). Hooks see only the
	// allow-listed names from it (see BaseEnvAllowed) plus PassEnv.
	BaseEnv []string
	// PassEnv names further variables of BaseEnv that hooks may see, for operators
	// whose hooks need them (for example a repository URL). DropEnv still wins.
	PassEnv []string
	// DropEnv names variables that must never reach a hook, whatever their source:
	// the tracker credentials and any other secret.
	DropEnv []string
	// Logger receives hook and cleanup diagnostics; nil discards them.
	Logger *slog.Logger
	// RunAs, when not nil, is the user agents run as (agent.run_as; the daemon is
	// root): workspaces are that user's, and hooks run as that user, with its HOME.
	RunAs *runas.User
	// ConfineHook, when not nil, confines every hook that runs after an agent may have
	// written the workspace: after_run, before_remove, and before_run except on the
	// run that created the workspace. nil runs every hook unconfined.
	ConfineHook ConfineHook
	// LegacyOwner, when not nil, says whether the workspace at oldPath, named the way an
	// older Sortie named issue's (AdoptLegacy), is really that issue's: the daemon's own
	// records of its runs say so. nil adopts none: 32 bits of hash can be matched by
	// another identifier, whose issue must not take over this one's workspace.
	LegacyOwner func(issue Issue, oldPath string) bool
}

// Manager creates, prepares and removes workspaces under one root and runs their
// hooks. It holds no mutable state and is safe for concurrent use; the orchestrator
// guarantees that one issue's workspace is prepared by one worker at a time.
type Manager struct {
	root      string // absolute and clean, not yet resolved through symlinks
	hooks     Hooks
	timeout   time.Duration
	waitDelay time.Duration // how long to wait for a hook's pipes after it exits or is killed
	baseEnv   []string
	passEnv   []string
	dropEnv   []string
	log       *slog.Logger
	runAs     *runas.User
	confine   ConfineHook
	owner     func(Issue, string) bool
}

// Issue names the issue a workspace belongs to. It is what hooks see as
// SORTIE_ISSUE_ID and SORTIE_ISSUE_IDENTIFIER; the directory name comes from Identifier.
type Issue struct {
	ID         string
	Identifier string
}

// Workspace is a workspace prepared for one run. Path is absolute, symlink-free and
// directly inside the root; the orchestrator records it and hands it back to Remove.
// CreatedNow reports that this Prepare created the directory (and ran after_create).
// Attempt is the attempt Prepare was called with; hooks run for this Workspace see it
// as SORTIE_ATTEMPT.
type Workspace struct {
	Path       string
	CreatedNow bool
	Attempt    int
}

// New checks cfg and returns a Manager. It does not touch the filesystem.
func New(cfg Config) (*Manager, error) {
	if strings.TrimSpace(cfg.Root) == "" {
		return nil, errors.New("workspace: root: must not be empty (set workspace.root in WORKFLOW.md)")
	}
	root, err := filepath.Abs(cfg.Root)
	if err != nil {
		return nil, fmt.Errorf("workspace: root %q: %w", cfg.Root, err)
	}
	timeout := cfg.HookTimeout
	if timeout <= 0 {
		timeout = DefaultHookTimeout
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Manager{
		root:      root,
		hooks:     cfg.Hooks,
		timeout:   timeout,
		waitDelay: 3 * time.Second,
		baseEnv:   slices.Clone(cfg.BaseEnv),
		passEnv:   slices.Clone(cfg.PassEnv),
		dropEnv:   slices.Clone(cfg.DropEnv),
		log:       log,
		runAs:     cfg.RunAs,
		confine:   cfg.ConfineHook,
		owner:     cfg.LegacyOwner,
	}, nil
}

// Root returns the configured root as an absolute path, before symlink resolution.
func (m *Manager) Root() string { return m.root }

// Prepare makes the workspace of issue ready for a run, in this order:
//
//  1. create root/<Key(identifier)> with an atomic mkdir (CreatedNow), refusing a
//     symlink there and never replacing a non-directory;
//  2. run after_create, only if the directory was created now; on failure the directory
//     is removed again and the error returned;
//  3. create `.sortie/` and its `.gitignore` (`*`) before anything else lands there;
//  4. delete a stale `.sortie/status` from an earlier run;
//  5. run before_run: as the operator's own script when step 1 created the directory,
//     else confined, as every hook after an agent's run is (see RunHook).
//
// attempt is exported to hooks as SORTIE_ATTEMPT. On an error after step 2 the
// returned Workspace still names the existing directory, so the caller can run
// after_run; otherwise it is the zero Workspace. Hook failures are *HookError values.
func (m *Manager) Prepare(ctx context.Context, issue Issue, attempt int) (Workspace, error) {
	key, err := Key(issue.Identifier)
	if err != nil {
		return Workspace{}, err
	}
	root, err := m.resolveRoot(true)
	if err != nil {
		return Workspace{}, err
	}
	path := filepath.Join(root, key)
	if err := checkDirectChild(root, path); err != nil {
		return Workspace{}, err
	}
	if old, err := m.adoptLegacy(root, issue, path); err != nil {
		return Workspace{}, err
	} else if old != "" {
		m.log.Info("renamed a workspace named by an older Sortie to its new name", "from", old, "to", path)
	}
	created, err := ensureWorkspaceDir(path)
	if err != nil {
		return Workspace{}, err
	}
	// root is symlink-free and path is a real directory, so path must resolve to
	// itself; anything else means the tree changed under us.
	if !linkFreeDir(path) {
		if real, err := filepath.EvalSymlinks(path); err != nil || real != path {
			return Workspace{}, fmt.Errorf("workspace: %s resolves to %q: %w", path, real, ErrOutsideRoot)
		}
	}
	ws := Workspace{Path: path, CreatedNow: created, Attempt: attempt}
	if err := m.own(path, created); err != nil {
		if created {
			_ = os.RemoveAll(path)
		}
		return Workspace{}, err
	}

	if created {
		if err := m.RunHook(ctx, HookAfterCreate, m.hooks.AfterCreate, ws, issue, nil); err != nil {
			// A half-initialised workspace would never get after_create again, so it
			// must not survive (reference §6).
			if rmErr := os.RemoveAll(path); rmErr != nil {
				err = errors.Join(err, fmt.Errorf("workspace: rolling back %s: %w", path, rmErr))
			}
			return Workspace{}, err
		}
	}
	if _, err := ensureSortieDir(path); err != nil {
		return ws, err
	}
	if err := ClearStatus(path); err != nil {
		return ws, err
	}
	if err := m.RunHook(ctx, HookBeforeRun, m.hooks.BeforeRun, ws, issue, nil); err != nil {
		return ws, err
	}
	return ws, nil
}

// AfterRun runs the after_run hook in ws, best effort: a failure is logged at warning
// level and returned only for the caller's records. It runs even when ctx is already
// cancelled (a stopped worker still gets its after_run), bounded by the hook timeout.
// extraEnv adds variables such as SORTIE_SELF_REVIEW_STATUS. A zero ws (Prepare
// failed before the directory existed) does nothing.
func (m *Manager) AfterRun(ctx context.Context, ws Workspace, issue Issue, extraEnv map[string]string) error {
	if ws.Path == "" || strings.TrimSpace(m.hooks.AfterRun) == "" {
		return nil
	}
	err := m.RunHook(context.WithoutCancel(ctx), HookAfterRun, m.hooks.AfterRun, ws, issue, extraEnv)
	if err != nil {
		m.logHookFailure(HookAfterRun, issue, err)
	}
	return err
}

// Remove deletes the workspace at path, a path Prepare returned earlier (usually read
// back from the store). It refuses, with an error, any path that is not absolute, not
// clean, "/", or not directly inside the root. It runs before_remove first, best effort
// (failures are logged and ignored, and it runs even when ctx is cancelled), then
// removes the directory tree. A path that no longer exists is not an error.
func (m *Manager) Remove(ctx context.Context, path string, issue Issue) error {
	if err := m.checkRecordedPath(path); err != nil {
		return err
	}
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("workspace: remove %s: %w", path, err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("workspace: remove %s: %w; refusing to remove it (delete it by hand)", path, ErrSymlink)
	case !fi.IsDir():
		return fmt.Errorf("workspace: remove %s: %w; refusing to remove it (delete it by hand)", path, ErrConflict)
	}
	if strings.TrimSpace(m.hooks.BeforeRemove) != "" {
		// No SORTIE_ATTEMPT: removal belongs to no run.
		if err := m.runHook(context.WithoutCancel(ctx), HookBeforeRemove, m.hooks.BeforeRemove, path, issue, -1, nil, true); err != nil {
			m.logHookFailure(HookBeforeRemove, issue, err)
		}
	}
	if err := os.RemoveAll(path); err != nil {
		return fmt.Errorf("workspace: remove %s: %w", path, err)
	}
	m.log.Debug("workspace removed", "issue", issue.Identifier, "path", path)
	return nil
}

// List returns the names of the workspace directories under the root, sorted.
// Symlinks and other non-directories are skipped. A root that does not exist yet has
// no workspaces.
func (m *Manager) List() ([]string, error) {
	root, err := m.resolveRoot(false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("workspace: list %s: %w", root, err)
	}
	var names []string
	for _, e := range entries {
		// DirEntry.Type does not follow symlinks, so a link to a directory is skipped.
		if e.Type().IsDir() {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

// resolveRoot returns the root, absolute and resolved through symlinks, creating it
// first when create is set.
func (m *Manager) resolveRoot(create bool) (string, error) {
	if create {
		if err := os.MkdirAll(m.root, dirMode); err != nil {
			return "", fmt.Errorf("workspace: create root %s: %w (check workspace.root)", m.root, err)
		}
	}
	real := m.root
	if !linkFreeDir(m.root) {
		r, err := filepath.EvalSymlinks(m.root)
		if err != nil {
			return "", fmt.Errorf("workspace: root %s: %w", m.root, err)
		}
		real = r
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", fmt.Errorf("workspace: root %s: %w", m.root, err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("workspace: root %s: %w (check workspace.root)", m.root, ErrConflict)
	}
	if create {
		if err := m.openRootTo(real, fi); err != nil {
			return "", err
		}
	}
	return real, nil
}

// openRootTo lets agent.run_as's user search the workspace root: a root of the
// daemon's own (owner and group root, as the daemon creates it) is given to the user's
// group, whose members may then search it but not write it. An operator's own root the
// user cannot reach is an error that says what to change.
func (m *Manager) openRootTo(root string, fi fs.FileInfo) error {
	if m.runAs == nil || m.runAs.CanReach(root, runas.Exec) == nil {
		return nil
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid == 0 && st.Gid == 0 && fi.Mode().Perm()&0o010 != 0 {
		if err := os.Lchown(root, -1, int(m.runAs.GID)); err != nil {
			return fmt.Errorf("workspace: root %s: %w", root, err)
		}
	}
	if err := m.runAs.CanReach(root, runas.Exec); err != nil {
		return fmt.Errorf("workspace: root %s: agent.run_as: %w", root, err)
	}
	return nil
}

// checkRecordedPath accepts only a path that could have come from Prepare: absolute,
// clean, not "/", and whose parent resolves to the root.
func (m *Manager) checkRecordedPath(path string) error {
	switch {
	case path == "":
		return errors.New("workspace: remove: empty path")
	case !filepath.IsAbs(path):
		return fmt.Errorf("workspace: remove %q: path is not absolute; refusing", path)
	case filepath.Clean(path) != path:
		return fmt.Errorf("workspace: remove %q: path is not clean (want %q); refusing", path, filepath.Clean(path))
	case filepath.Dir(path) == path:
		return fmt.Errorf("workspace: remove %q: refusing to remove a filesystem root", path)
	}
	root, err := m.resolveRoot(false)
	if errors.Is(err, fs.ErrNotExist) {
		// No root, so nothing can be inside it; a path naming it is simply gone.
		if filepath.Dir(path) == m.root {
			return nil
		}
		return fmt.Errorf("workspace: remove %q: %w %s; refusing", path, ErrOutsideRoot, m.root)
	}
	if err != nil {
		return err
	}
	parent, err := filepath.EvalSymlinks(filepath.Dir(path))
	if err != nil || parent != root {
		return fmt.Errorf("workspace: remove %q: %w %s; refusing", path, ErrOutsideRoot, root)
	}
	return nil
}

// checkDirectChild reports whether path is exactly one element below root.
func checkDirectChild(root, path string) error {
	rel, err := filepath.Rel(root, path)
	if err != nil || rel == "." || rel == ".." || strings.ContainsRune(rel, filepath.Separator) {
		return fmt.Errorf("workspace: %s: %w %s", path, ErrOutsideRoot, root)
	}
	return nil
}

// own gives the workspace at path to agent.run_as's user: a new one, or one made before
// agent.run_as was set (all of it, once), and checks that the user can reach it.
// Nothing without agent.run_as.
func (m *Manager) own(path string, created bool) error {
	if m.runAs == nil {
		return nil
	}
	owned, err := m.runAs.Owns(path)
	if err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	switch {
	case owned:
	case created:
		err = m.runAs.Chown(path)
	default:
		m.log.Info("giving a workspace made before agent.run_as to its user", "workspace", path, "user", m.runAs.String())
		err = m.runAs.ChownTree(path)
	}
	if err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	if err := m.runAs.CanReach(path, runas.Read|runas.Write|runas.Exec); err != nil {
		return fmt.Errorf("workspace: agent.run_as: %w", err)
	}
	return nil
}

// ensureWorkspaceDir creates path unless it exists, and reports whether it created it.
// An existing symlink or non-directory is an error and is left alone.
func ensureWorkspaceDir(path string) (created bool, err error) {
	fi, err := os.Lstat(path)
	if err == nil {
		return false, checkExistingDir(path, fi)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("workspace: %s: %w", path, err)
	}
	if err := os.Mkdir(path, dirMode); err != nil {
		if !errors.Is(err, fs.ErrExist) {
			return false, fmt.Errorf("workspace: create %s: %w", path, err)
		}
		// Someone created it between Lstat and Mkdir; judge what is there now.
		fi, err := os.Lstat(path)
		if err != nil {
			return false, fmt.Errorf("workspace: %s: %w", path, err)
		}
		return false, checkExistingDir(path, fi)
	}
	return true, nil
}

func checkExistingDir(path string, fi fs.FileInfo) error {
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("workspace: %s %w; refusing to use it (remove the link)", path, ErrSymlink)
	case !fi.IsDir():
		return fmt.Errorf("workspace: %s %w; refusing to replace it (move it away)", path, ErrConflict)
	}
	return nil
}

func (m *Manager) logHookFailure(hook string, issue Issue, err error) {
	// The error quotes the end of the output; the whole of it (up to MaxHookOutput)
	// goes to debug so a warning line stays readable.
	m.log.Warn("hook failed; continuing", "hook", hook, "issue", issue.Identifier, "error", err)
	if he, ok := errors.AsType[*HookError](err); ok && he.Output != "" {
		m.log.Debug("hook output", "hook", hook, "issue", issue.Identifier, "output", he.Output)
	}
}
