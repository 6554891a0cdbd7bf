package daemon

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"sortie/internal/config"
	"sortie/internal/orchestrator"
	"sortie/internal/store"
	"sortie/internal/workflow"
	"sortie/internal/workflow/checkpoint"
	"sortie/internal/workflow/engine"
	"sortie/internal/workflow/session"
)

// workflowKeySuffix names the daemon's workflow-token key file, next to the database.
const workflowKeySuffix = ".workflow-key"

// daemonWorkflows is the daemon's workflow engine (workflows.dir) and its checkpoint
// component: the store holds its sessions, trace and checkpoints, humans answer its
// checkpoints at the desk, and the library is re-read when its files or workflows.dir
// change.
type daemonWorkflows struct {
	eng  *engine.Engine
	desk *checkpoint.Desk // the engine's hooks keep it current
	lib  *libraryCache
}

// startWorkflows loads the library and builds the checkpoint desk and, through it, the
// engine (checkpoint.New builds the engine with the desk's hooks: no hook is patched in
// later), or returns nil when workflows.dir is not set. A library with problems stops
// the daemon, naming each. dashboardURL is linked from checkpoint comments; activity
// receives the checkpoints' activity (armed, answered, resolved, abandoned); version is the
// build's, which the engine reports. Close the
// desk when the daemon stops.
func startWorkflows(ctx context.Context, cfg *config.Config, current func() *config.Config, st store.WorkflowStore,
	dashboardURL string, activity func(orchestrator.Activity), version string, log *slog.Logger) (*daemonWorkflows, error) {
	if cfg.Workflows.Dir == "" {
		return nil, nil
	}
	lib, err := loadLibrary(cfg.Workflows.Dir)
	if err != nil {
		return nil, err
	}
	for _, w := range lib.Warnings() {
		log.Warn("workflow library", "warning", w.String())
	}
	key, err := session.LoadOrCreateKey(cfg.DBPath + workflowKeySuffix)
	if err != nil {
		return nil, fmt.Errorf("workflows: the session key: %w", err)
	}
	d := &daemonWorkflows{lib: newLibraryCache(lib, current, log)}
	d.desk, err = checkpoint.New(checkpoint.Options{
		Store: st, Config: current, Logger: log.With("component", "checkpoints"), DashboardURL: dashboardURL,
		Report: func(e checkpoint.Event) { activity(checkpointActivity(e)) },
	}, func(hooks engine.Hooks) (checkpoint.Engine, error) {
		eng, err := engine.New(engine.Options{
			Library: d.lib.get, Key: key, State: st, Humans: true,
			Log: log.With("component", "workflows"), Server: "sortie", Version: version,
			Hooks: hooks,
		})
		if err != nil {
			return nil, err
		}
		d.eng = eng
		return eng, nil
	})
	if err != nil {
		return nil, fmt.Errorf("workflows: %w", err)
	}
	if err := d.eng.Restore(ctx); err != nil {
		d.desk.Close()
		return nil, fmt.Errorf("workflows: %w", err)
	}
	log.Info("workflow library loaded", "dir", lib.Dir(), "workflows", len(lib.Workflows()))
	return d, nil
}

// checkpointActivity is the orchestrator's Activity of a checkpoint event, for the
// metrics and the live feed.
func checkpointActivity(e checkpoint.Event) orchestrator.Activity {
	return orchestrator.Activity{Kind: orchestrator.ActivityCheckpoint, Time: e.Time, IssueID: e.IssueID,
		Identifier: e.Identifier, RunID: e.RunID, Result: e.Result, Message: e.Message}
}

// checkpoints is the orchestrator's checkpoint component: nil (not a nil *Desk) when
// structured workflows are off.
func (d *daemonWorkflows) checkpoints() orchestrator.Checkpoints {
	if d == nil {
		return nil
	}
	return d.desk
}

// answerer is the server's checkpoint answerer: a nil *checkpoint.Desk when structured
// workflows are off, which answers checkpoint.ErrCheckpointsOff.
func (d *daemonWorkflows) answerer() *checkpoint.Desk {
	if d == nil {
		return nil
	}
	return d.desk
}

// configError is the snapshot's workflow_error: a rejected WORKFLOW.md edit, else a
// rejected workflow library edit.
func configError(last func() error, wf *daemonWorkflows) func() error {
	return func() error {
		if err := last(); err != nil || wf == nil {
			return err
		}
		return wf.lib.err()
	}
}

// err says why the last library reload was rejected, nil when the library in use
// is the one on disk.
func (c *libraryCache) err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lastErr == "" {
		return nil
	}
	return errors.New("workflow library edit rejected; the previous library is in use: " + c.lastErr)
}

// loadLibrary loads a library, listing every problem in the error.
func loadLibrary(dir string) (*workflow.Library, error) {
	lib, err := workflow.LoadLibrary(dir)
	var le *workflow.LoadError
	if errors.As(err, &le) {
		return nil, fmt.Errorf("workflows.dir %s: %d problem(s) in the workflow library:\n%s", dir, len(le.Problems), ProblemList(le.Problems))
	}
	if err != nil {
		return nil, fmt.Errorf("workflows.dir: %w", err)
	}
	return lib, nil
}

// libraryCheckInterval bounds how often the library's files are looked at for changes.
const libraryCheckInterval = 2 * time.Second

// libraryCache serves the current library. At most every libraryCheckInterval it
// fingerprints workflows.dir (names, sizes, modification times); on a change it
// reloads, and a library that no longer loads is logged and the previous one kept, as
// WORKFLOW.md reloads are.
type libraryCache struct {
	current func() *config.Config
	log     *slog.Logger

	mu        sync.Mutex
	lib       *workflow.Library
	print     [32]byte
	checkedAt time.Time
	lastErr   string
}

func newLibraryCache(lib *workflow.Library, current func() *config.Config, log *slog.Logger) *libraryCache {
	c := &libraryCache{current: current, log: log, lib: lib, checkedAt: time.Now()}
	c.print, _ = fingerprint(lib.Dir())
	return c
}

func (c *libraryCache) get() *workflow.Library {
	c.mu.Lock()
	defer c.mu.Unlock()
	if time.Since(c.checkedAt) < libraryCheckInterval {
		return c.lib
	}
	c.checkedAt = time.Now()
	dir := c.lib.Dir()
	if cfg := c.current(); cfg != nil && cfg.Workflows.Dir != "" {
		dir = cfg.Workflows.Dir
	}
	print, err := fingerprint(dir)
	if err == nil && dir == c.lib.Dir() && print == c.print {
		return c.lib
	}
	lib, err := loadLibrary(dir)
	if err != nil {
		if msg := err.Error(); msg != c.lastErr {
			c.lastErr = msg
			c.log.Error("workflow library reload rejected; keeping the last good library", "error", err)
		}
		return c.lib
	}
	c.lib, c.print, c.lastErr = lib, print, ""
	c.log.Info("workflow library reloaded", "dir", dir, "workflows", len(lib.Workflows()))
	return c.lib
}

// fingerprint hashes the names, sizes and modification times of every file under dir.
func fingerprint(dir string) ([32]byte, error) {
	h := sha256.New()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%d\x00%d\x00", path, info.Size(), info.ModTime().UnixNano())
		return nil
	})
	var sum [32]byte
	copy(sum[:], h.Sum(nil))
	return sum, err
}

// ProblemList formats library problems one to a line.
func ProblemList(ps []workflow.Problem) string {
	var out string
	for i, p := range ps {
		if i > 0 {
			out += "\n"
		}
		out += "  " + p.String()
	}
	return out
}
