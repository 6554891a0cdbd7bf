package file

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"

	"github.com/fsnotify/fsnotify"
)

// Watch returns a channel that receives a value soon after the issues file may have
// changed: written in place, replaced by a rename (how most editors save, and how Sortie
// itself writes), deleted or created. Notifications are coalesced: one pending value
// stands for any number of changes. The channel is closed when ctx ends, after the
// watch has been released.
//
// It watches the file's directory, not the file, because a watch on a file follows the
// inode and is lost when an editor replaces it. If the path is a symlink, the
// directory of its target is watched too. Sortie's own transitions and comments also
// notify; the reload that follows finds the state it just wrote, which is harmless.
//
// If the watch cannot be set up (no inotify instances left, directory missing), Watch
// logs a warning and returns a channel that only closes with ctx: changes are then seen
// on the next poll.
func (t *Tracker) Watch(ctx context.Context) <-chan struct{} {
	ch := make(chan struct{}, 1)
	targets := watchTargets(t.path)
	w, err := fsnotify.NewWatcher()
	if err == nil {
		added := 0
		for _, dir := range watchDirs(targets) {
			if aerr := w.Add(dir); aerr != nil {
				slog.Default().Warn("file tracker: cannot watch a directory of the issues file", "path", t.path, "dir", dir, "err", aerr)
				err = aerr
				continue
			}
			added++
		}
		if added > 0 {
			err = nil
		} else {
			_ = w.Close()
		}
	}
	if err != nil {
		slog.Default().Warn("file tracker: cannot watch the issues file; changes will be noticed on the next poll",
			"path", t.path, "err", err)
		go func() {
			<-ctx.Done()
			close(ch)
		}()
		return ch
	}

	go func() {
		defer close(ch)
		defer w.Close()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				// One write is several events (a swap of names is two moves): those
				// already queued are taken together, and the file read once for them.
				hit := slices.Contains(targets, filepath.Clean(ev.Name))
				for more := true; more; {
					select {
					case ev, ok := <-w.Events:
						if !ok {
							return
						}
						hit = hit || slices.Contains(targets, filepath.Clean(ev.Name))
					default:
						more = false
					}
				}
				if hit && !t.holdsOwnWrite() {
					notify(ch)
				}
			case err, ok := <-w.Errors:
				if !ok {
					return
				}
				// Usually an event queue overflow: a change may have been missed, so
				// say there may have been one.
				slog.Default().Debug("file tracker: watch error", "path", t.path, "err", err)
				notify(ch)
			}
		}
	}()
	return ch
}

// holdsOwnWrite reports whether the issues file holds exactly the bytes of our own last
// write. Sortie's own transitions and comments then need no poll: nothing they change
// makes another issue eligible, and the orchestrator already knows about them. Any other
// content, a hand edit racing ours included, does not match and notifies.
func (t *Tracker) holdsOwnWrite() bool {
	t.mu.Lock()
	wrote := t.written != nil
	// Our last write, stamped, is cached: a stat tells whether the file still holds it.
	own := t.cache
	if own == nil || !own.stamped || !sameArray(own.data, t.written) {
		own = nil
	}
	t.mu.Unlock()
	if !wrote {
		return false
	}
	if own != nil {
		if info, err := os.Stat(t.path); err == nil && own.fresh(info) {
			return true
		}
	}
	data, _, err := readIssuesFileInto("watch", t.path, scratch())
	defer recycle(data)
	// Compared under t.mu: the next write recycles the buffer of this one.
	t.mu.Lock()
	defer t.mu.Unlock()
	return err == nil && t.written != nil && bytes.Equal(data, t.written)
}

// notify leaves one value in ch unless one is already waiting.
func notify(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// watchTargets lists the paths whose events matter: the configured path and, when it is
// a symlink, what it points at now.
func watchTargets(path string) []string {
	targets := []string{filepath.Clean(path)}
	if real, err := filepath.EvalSymlinks(path); err == nil {
		if real, err = filepath.Abs(real); err == nil && !slices.Contains(targets, real) {
			targets = append(targets, real)
		}
	}
	return targets
}

func watchDirs(targets []string) []string {
	var dirs []string
	for _, p := range targets {
		if d := filepath.Dir(p); !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	return dirs
}
