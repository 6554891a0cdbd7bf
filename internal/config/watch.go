package config

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
)

// DefaultDebounce is how long the Watcher waits after the last file event before it
// re-reads WORKFLOW.md, so an editor's burst of writes becomes one reload.
const DefaultDebounce = 50 * time.Millisecond

// Watcher keeps the current configuration of one WORKFLOW.md. It re-reads the file when
// it changes on disk (Start) or when asked (Reload), applies a new version only when it
// loads and passes the caller's validation, and otherwise keeps the last good one and
// records the error. It is safe for concurrent use.
type Watcher struct {
	path      string // absolute
	dir, base string
	// targetBase is the base name of the symlink target when WORKFLOW.md links to a file
	// in another directory (set by Start, read only by its goroutine).
	targetBase string
	// linkHead is the first element of WORKFLOW.md's relative symlink target, "" when
	// it is no such link (kept by the Start goroutine, renewed on each event on
	// WORKFLOW.md itself, so the database's writes beside it cost no system call).
	linkHead string
	opts     Options
	validate func(*Config) error
	log      *slog.Logger
	debounce time.Duration
	// onReload, when set before Start, is called after each reload the file watch
	// triggers. Tests use it to wait for a rejected edit, which produces no Change.
	onReload func(error)

	reloadMu    sync.Mutex // serialises reloads; guards the two fields below
	appliedHash [sha256.Size]byte
	failKey     string // the last failure logged, so a bad file is logged once, not every tick

	mu      sync.RWMutex // guards cur and lastErr
	cur     *Config
	lastErr error

	changes chan *Config
	started atomic.Bool
	done    chan struct{}
}

// NewWatcher loads path and runs validate on it (typically a prompt-template parse);
// both must succeed. validate may be nil. log may be nil to discard logs. Call Start to
// follow changes on disk.
func NewWatcher(path string, opts Options, validate func(*Config) error, log *slog.Logger) (*Watcher, error) {
	if validate == nil {
		validate = func(*Config) error { return nil }
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := load(path, opts)
	if r.cfg == nil {
		return nil, &ValidationError{Path: r.path, Problems: r.problems}
	}
	if err := validate(r.cfg); err != nil {
		return nil, fmt.Errorf("config: %s: %w", r.path, err)
	}
	return &Watcher{
		path:        r.path,
		dir:         filepath.Dir(r.path),
		base:        filepath.Base(r.path),
		opts:        opts,
		validate:    validate,
		log:         log,
		debounce:    DefaultDebounce,
		appliedHash: r.hash,
		cur:         r.cfg,
		changes:     make(chan *Config, 1),
		done:        make(chan struct{}),
	}, nil
}

// Current returns the configuration in force: the last one that loaded and validated.
func (w *Watcher) Current() *Config {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.cur
}

// LastError returns why the most recent reload was rejected, or nil when it succeeded
// (or found nothing new). While it is non-nil, Current is the last good configuration.
func (w *Watcher) LastError() error {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.lastErr
}

// Changes delivers each newly applied configuration. It holds at most one: a reader
// that falls behind gets the latest, never a backlog.
func (w *Watcher) Changes() <-chan *Config { return w.changes }

// Reload re-reads WORKFLOW.md (and its .env file) now. Unchanged content is a no-op that
// returns nil. A new version is applied if it loads and validates; otherwise the current
// configuration stays, LastError is set and the error is returned and logged (once per
// distinct failure). The orchestrator calls it every tick, which also catches changes the
// file watch missed.
func (w *Watcher) Reload() error {
	w.reloadMu.Lock()
	defer w.reloadMu.Unlock()

	r := loadUnlessUnchanged(w.path, w.opts, &w.appliedHash)
	if r.unchanged || (r.cfg != nil && r.hash == w.appliedHash) {
		if w.setErr(nil) != nil {
			w.log.Info("workflow restored", "path", w.path)
		}
		w.failKey = ""
		return nil
	}

	var err error
	msg := "workflow reload failed"
	if r.cfg == nil {
		err = &ValidationError{Path: r.path, Problems: r.problems}
	} else if verr := w.validate(r.cfg); verr != nil {
		err = fmt.Errorf("config: %s: %w", w.path, verr)
		msg = "workflow reload rejected by validation"
	}
	if err != nil {
		w.setErr(err)
		if key := fmt.Sprintf("%x %s", r.hash, err); key != w.failKey {
			w.failKey = key
			w.log.Error(msg+"; keeping the last good configuration", "path", w.path, "error", err)
		}
		return err
	}

	w.failKey = ""
	w.appliedHash = r.hash
	w.mu.Lock()
	w.cur, w.lastErr = r.cfg, nil
	w.mu.Unlock()
	for _, p := range r.cfg.Warnings {
		w.log.Warn("workflow warning", "path", w.path, "problem", p.String())
	}
	w.log.Info("workflow reloaded", "path", w.path)

	// Replace an unread older config so a slow reader only ever sees the latest.
	select {
	case <-w.changes:
	default:
	}
	select {
	case w.changes <- r.cfg:
	default:
	}
	return nil
}

// setErr records err as LastError and returns the previous value.
func (w *Watcher) setErr(err error) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	prev := w.lastErr
	w.lastErr = err
	return prev
}

// Start watches the directory holding WORKFLOW.md until ctx is done; Wait waits for it
// to stop. Watching the directory rather than the file survives editors that save by
// renaming a new file over the old one, and Kubernetes ConfigMap mounts that swap a
// `..data` symlink. Every relevant event schedules a debounced Reload, which compares
// content, so spurious events cost one read.
func (w *Watcher) Start(ctx context.Context) error {
	if !w.started.CompareAndSwap(false, true) {
		return errors.New("config: watcher already started")
	}
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		close(w.done)
		return fmt.Errorf("config: watch %s: %w", w.dir, err)
	}
	if err := fw.Add(w.dir); err != nil {
		fw.Close()
		close(w.done)
		return fmt.Errorf("config: watch %s: %w", w.dir, err)
	}
	// When WORKFLOW.md is a symlink to a file elsewhere, edits happen in the target's
	// directory; watch it too. A later retarget is caught by the event on the link itself.
	if target, err := filepath.EvalSymlinks(w.path); err == nil && filepath.Dir(target) != w.dir {
		if err := fw.Add(filepath.Dir(target)); err == nil {
			w.targetBase = filepath.Base(target)
		}
	}
	w.linkHead = linkHead(w.path)
	go w.run(ctx, fw)
	return nil
}

// Wait blocks until the goroutine Start launched has stopped. It returns at once if
// Start was never called.
func (w *Watcher) Wait() {
	if w.started.Load() {
		<-w.done
	}
}

func (w *Watcher) run(ctx context.Context, fw *fsnotify.Watcher) {
	defer close(w.done)
	defer fw.Close()
	timer := time.NewTimer(w.debounce)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-fw.Events:
			if !ok {
				return
			}
			if w.relevant(ev.Name) {
				timer.Reset(w.debounce)
			}
		case err, ok := <-fw.Errors:
			if !ok {
				return
			}
			w.log.Warn("workflow watch error; changes are still picked up on the next tick", "path", w.path, "error", err)
		case <-timer.C:
			err := w.Reload()
			if w.onReload != nil {
				w.onReload(err)
			}
		}
	}
}

// relevant reports whether an event on name in the watched directory may have changed
// WORKFLOW.md: the file itself, the first element of its symlink target (so a swapped
// link directory is noticed), or a `..`-prefixed entry, which is how Kubernetes names the
// directories and links of a ConfigMap mount. Other files in the directory, such as the
// SQLite database, are ignored.
func (w *Watcher) relevant(name string) bool {
	base := filepath.Base(name)
	if base == w.base {
		w.linkHead = linkHead(w.path) // it may have become a link, or another one
		return true
	}
	return base == w.targetBase || strings.HasPrefix(base, "..") || w.linkHead != "" && base == w.linkHead
}

// linkHead is the first element of path's symlink target when that is relative, ""
// otherwise.
func linkHead(path string) string {
	target, err := os.Readlink(path)
	if err != nil || filepath.IsAbs(target) {
		return ""
	}
	head, _, _ := strings.Cut(filepath.ToSlash(filepath.Clean(target)), "/")
	return head
}
