package file

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"sortie/internal/fdio"
	"sortie/internal/tracker"
)

// maxWriteAttempts bounds how often a write starts over because the file changed under
// it. A human saving three times within one write is not something to wait out.
const maxWriteAttempts = 3

// commentAuthor is the author of comments Sortie writes.
const commentAuthor = "sortie"

// TransitionIssue sets the issue's state to targetState and its updated_at to the
// current time (RFC 3339, UTC), in the file. targetState must be a configured state
// (active, terminal or handoff, matched case-insensitively) and is written in its
// configured casing; any other target is tracker_payload_error and nothing is written,
// as the Jira and GitHub adapters refuse a state their tracker does not have. If the
// state is already exactly the target the file is not touched. An unknown id is
// tracker_not_found; a malformed file is tracker_payload_error and is left as it was.
func (t *Tracker) TransitionIssue(ctx context.Context, id, targetState string) error {
	const op = "transition"
	if strings.TrimSpace(targetState) == "" {
		return tracker.Errorf(tracker.ErrPayload, op, "cannot move issue %q to an empty state", id)
	}
	// A typo here would park the issue in a state nothing dispatches or closes.
	target, ok := t.knownState(targetState)
	if !ok {
		return tracker.Errorf(tracker.ErrPayload, op,
			"cannot move issue %q to %q: not a configured state (active: %s; terminal: %s; handoff: %s); check its spelling in WORKFLOW.md or the agent's transition_issue call",
			id, targetState, listOrNone(t.activeStates), listOrNone(t.terminalStates), listOrNone([]string{t.handoffState}))
	}
	return t.modify(ctx, op, id, func(obj []byte, iss *tracker.Issue, _ string) ([]byte, error) {
		if iss.State == target {
			return nil, nil
		}
		return setState(obj, target, t.now().UTC().Format(time.RFC3339))
	})
}

// listOrNone joins states for an error message.
func listOrNone(states []string) string {
	states = slices.DeleteFunc(slices.Clone(states), func(s string) bool { return strings.TrimSpace(s) == "" })
	if len(states) == 0 {
		return "none"
	}
	return strings.Join(states, ", ")
}

// CommentIssue appends a comment by "sortie" with a generated id and the current time to
// the issue's comments, in the file. The issue's updated_at is not changed. An unknown id
// is tracker_not_found; a malformed file is tracker_payload_error and is left as it was.
func (t *Tracker) CommentIssue(ctx context.Context, id, text string) error {
	const op = "comment"
	if strings.TrimSpace(text) == "" {
		return tracker.Errorf(tracker.ErrPayload, op, "refusing to add an empty comment to issue %q", id)
	}
	return t.modify(ctx, op, id, func(obj []byte, iss *tracker.Issue, indent string) ([]byte, error) {
		c := tracker.Comment{
			ID:        t.uniqueCommentID(iss.Comments),
			Author:    commentAuthor,
			Body:      text,
			CreatedAt: t.now().UTC().Format(time.RFC3339),
		}
		return appendComment(obj, indent, c)
	})
}

// AddLabel appends label to the issue's labels and sets its updated_at to the current
// time (RFC 3339, UTC), in the file, with the same lock and atomic swap as a
// transition. The label is written as given; if the issue has it already (labels are
// compared lowercased, as they are read) the file is not touched. An empty label is
// tracker_payload_error, an unknown id tracker_not_found; a malformed file is
// tracker_payload_error and is left as it was.
func (t *Tracker) AddLabel(ctx context.Context, id, label string) error {
	const op = "add_label"
	label = strings.TrimSpace(label)
	if label == "" {
		return tracker.Errorf(tracker.ErrPayload, op, "refusing to add an empty label to issue %q", id)
	}
	return t.modify(ctx, op, id, func(obj []byte, iss *tracker.Issue, _ string) ([]byte, error) {
		if slices.Contains(iss.Labels, strings.ToLower(label)) {
			return nil, nil
		}
		return addLabel(obj, label, t.now().UTC().Format(time.RFC3339))
	})
}

// editFunc computes the new bytes of one issue's object: obj as it stands (after the
// edits before it in the same write), iss its parse, indent the indentation of the
// line the object starts on. It returns nil when there is nothing to write.
type editFunc func(obj []byte, iss *tracker.Issue, indent string) ([]byte, error)

// request is one transition, comment or label waiting to be written.
type request struct {
	ctx  context.Context
	op   string
	id   string
	edit editFunc
	err  error
	done chan struct{} // closed once err is final
}

func (r *request) finish(err error) {
	r.err = err
	close(r.done)
}

// modify makes one edit of the file, durably, and returns when it is on disk.
//
// Edits are group-committed: the first caller to find no write in progress writes its
// own edit together with every edit queued by then, in one read-modify-write (one
// temporary file, one fsync, one rename, one directory sync), while later callers
// queue theirs for the next. Ten workers handing off at once cost one write, not
// ten in a row. Each edit still succeeds or fails on its own: an unknown id or a
// cancelled caller fails only that edit.
//
// A write holds the file's write lock (lockFile) throughout, so that several daemons
// sharing one issues file write one at a time and none loses another's transition. It
// reads the file fresh under the lock (never from the cache), so an edit saved by hand
// or by another daemon a moment ago is the base of ours, and before replacing the file
// it checks the file still holds what it read; if not (an editor, which takes no
// lock, saved it), it starts over. The window left between that check and the rename
// is a few system calls wide; closing it would need every editor to honour the lock.
func (t *Tracker) modify(ctx context.Context, op, id string, edit editFunc) error {
	r := &request{ctx: ctx, op: op, id: id, edit: edit, done: make(chan struct{})}
	t.queueMu.Lock()
	t.queue = append(t.queue, r)
	t.queueMu.Unlock()

	t.writeMu.Lock()
	defer t.writeMu.Unlock()
	select {
	case <-r.done: // the write before took it along
		return r.err
	default:
	}
	t.queueMu.Lock()
	batch := t.queue // r among them: only a writer, holding writeMu, empties the queue
	t.queue = nil
	t.queueMu.Unlock()
	t.write(batch)
	<-r.done
	return r.err
}

// write makes the edits of batch in as few read-modify-writes as the file allows, and
// finishes every request in it.
func (t *Tracker) write(batch []*request) {
	ctx, release := allDone(batch)
	defer release()
	unlock, err := t.lockFile(ctx, batch[0].op)
	if err != nil {
		for _, r := range batch {
			if cerr := r.ctx.Err(); cerr != nil {
				err = &tracker.Error{Kind: tracker.ErrTransport, Op: r.op, Err: cerr}
			}
			r.finish(withOp(err, r.op))
		}
		return
	}
	defer unlock()
	pending := batch
	for range maxWriteAttempts {
		if pending = t.tryWrite(pending); len(pending) == 0 {
			return
		}
	}
	for _, r := range pending {
		r.finish(tracker.Errorf(tracker.ErrTransport, r.op,
			"issues file %s changed while Sortie was writing to it, %d times in a row; nothing was written, the next attempt may succeed", t.path, maxWriteAttempts))
	}
}

// allDone is a context that ends when every request's context has ended: what waiting
// for another daemon's lock may give up on.
func allDone(batch []*request) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	left := len(batch)
	var mu sync.Mutex
	stops := make([]func() bool, 0, len(batch))
	for _, r := range batch {
		stops = append(stops, context.AfterFunc(r.ctx, func() {
			mu.Lock()
			defer mu.Unlock()
			if left--; left == 0 {
				cancel()
			}
		}))
	}
	return ctx, func() {
		for _, stop := range stops {
			stop()
		}
		cancel()
	}
}

// withOp is err as seen by the request op: a tracker error names its operation.
func withOp(err error, op string) error {
	var te *tracker.Error
	if errors.As(err, &te) && te.Op != op {
		c := *te
		c.Op = op
		return &c
	}
	return err
}

// tryWrite makes one attempt at writing pending's edits. It finishes the requests
// that are settled (written, refused or failed) and returns those to try again
// because the file changed under the attempt.
func (t *Tracker) tryWrite(pending []*request) (again []*request) {
	failAll := func(err error) []*request {
		for _, r := range pending {
			r.finish(withOp(err, r.op))
		}
		return nil
	}
	op := pending[0].op
	// Write where the file really is: renaming over a symlink would replace the link.
	real, err := fileBehindLink(t.path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return failAll(missingFile(op, t.path))
		}
		return failAll(&tracker.Error{Kind: tracker.ErrTransport, Op: op, Message: "resolving issues file path", Err: err})
	}
	data, info, cached, err := t.base(op, real)
	if err != nil {
		return failAll(err)
	}
	if !cached {
		// The new content is a copy: data goes back to the pool once the attempt is
		// over (the cache keeps its own bytes, never these).
		defer recycle(data)
	}
	doc, err := t.parsed(data)
	if err != nil {
		for _, r := range pending {
			r.finish(&tracker.Error{Kind: tracker.ErrPayload, Op: r.op,
				Message: fmt.Sprintf("issues file %s is not valid, so Sortie did not change it and this %s was not made; fix the file", t.path, r.op), Err: err})
		}
		return nil
	}
	out, after, applied := t.apply(data, doc, pending)
	if len(applied) == 0 {
		return nil
	}
	settle := func(err error) []*request {
		for _, r := range applied {
			r.finish(withOp(err, r.op))
		}
		return nil
	}
	if len(out) > MaxFileBytes {
		return settle(tooLarge(op, t.path, int64(len(out))))
	}
	tmp, stamp, err := writeNext(real, out, info.Mode().Perm())
	if err != nil {
		return settle(&tracker.Error{Kind: tracker.ErrTransport, Op: op, Message: "writing issues file " + t.path, Err: err})
	}
	if t.beforeRename != nil {
		t.beforeRename()
	}
	current, _, err := readIssuesFileInto(op, real, scratch())
	changed := err != nil || !bytes.Equal(current, data)
	recycle(current)
	if changed {
		// Changed since it was read, or since the cache was: start from the file
		// itself next time.
		t.mu.Lock()
		t.cache = nil
		t.mu.Unlock()
		removeTemp(tmp, real)
		return applied
	}
	if err := t.replace(tmp, real, out, after, stamp); err != nil {
		removeTemp(tmp, real)
		return settle(&tracker.Error{Kind: tracker.ErrTransport, Op: op, Message: "replacing issues file " + t.path, Err: err})
	}
	syncDir(filepath.Dir(real))
	return settle(nil)
}

// base is the content a write starts from: the cached bytes when the file's stat is
// the one they were read or written with, else the file read afresh (cached false:
// the caller recycles the buffer). A file changed within one modification-time tick
// of the cache, which a stat cannot tell, is caught by the check before the rename,
// which always reads the file, and which empties the cache when it fails. Writes in a
// row (a backlog's transitions) thus read the file once each, not twice.
func (t *Tracker) base(op, path string) (data []byte, info fs.FileInfo, cached bool, err error) {
	t.mu.Lock()
	c := t.cache
	t.mu.Unlock()
	if c != nil && c.err == nil {
		if info, err := os.Stat(path); err == nil && os.SameFile(c.info, info) &&
			c.info.Size() == info.Size() && c.info.ModTime().Equal(info.ModTime()) {
			return c.data, info, true, nil
		}
	}
	data, info, err = readIssuesFileInto(op, path, scratch())
	return data, info, false, err
}

// apply runs the edits of pending, in order, on data (parsed as doc). Requests that
// settle without a write (cancelled, unknown id, nothing to change, an edit that
// failed) are finished here. It returns the new content, its document, and the
// requests whose edits it holds; none when there is nothing to write.
func (t *Tracker) apply(data []byte, doc *document, pending []*request) ([]byte, *document, []*request) {
	objs := map[int][]byte{}
	issues := map[int]tracker.Issue{}
	var applied []*request
	for _, r := range pending {
		if err := r.ctx.Err(); err != nil {
			r.finish(&tracker.Error{Kind: tracker.ErrTransport, Op: r.op, Err: err})
			continue
		}
		i, ok := doc.byID[r.id]
		if !ok {
			r.finish(t.notFound(r.op, r.id))
			continue
		}
		obj, iss := data[doc.spans[i].start:doc.spans[i].end], *doc.issues[i]
		if o, ok := objs[i]; ok {
			obj, iss = o, issues[i]
		}
		out, err := r.edit(obj, &iss, lineIndent(data, doc.spans[i].start))
		var edited tracker.Issue
		if err == nil && out != nil {
			edited, err = checkObject(&iss, out)
		}
		if err != nil {
			// A file shape this code cannot edit, which is a bug here; retrying will not help.
			r.finish(&tracker.Error{Kind: tracker.ErrPayload, Op: r.op, Message: "editing issues file " + t.path + " failed (please report this as a Sortie bug; the file was not changed)", Err: err})
			continue
		}
		if out == nil {
			r.finish(nil)
			continue
		}
		objs[i], issues[i] = out, edited
		applied = append(applied, r)
	}
	if len(applied) == 0 {
		return nil, nil, nil
	}
	out, after := patch(data, doc, objs, issues)
	return out, after, applied
}

// checkObject parses an edited issue object on its own and confirms it is still the
// same issue, so a bug in an edit can never replace a good file with a broken one.
func checkObject(before *tracker.Issue, obj []byte) (tracker.Issue, error) {
	after, err := parseObject(obj)
	if err != nil {
		return tracker.Issue{}, fmt.Errorf("the edited issue does not parse: %w", err)
	}
	if after.ID != before.ID || after.Identifier != before.Identifier {
		return tracker.Issue{}, fmt.Errorf("the edited issue is %q (%s), want %q (%s)", after.ID, after.Identifier, before.ID, before.Identifier)
	}
	return after, nil
}

// fileBehindLink is path, or, when path names a symbolic link, what the link resolves
// to: the name a swap must replace and put its lock beside. Links among path's
// directories need no resolving, since the swap happens within the file's own
// directory however it is reached; so this is one lstat where EvalSymlinks takes one
// per element of the path, twice in every write.
func fileBehindLink(path string) (string, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return "", err
	}
	if fi.Mode()&fs.ModeSymlink == 0 {
		return path, nil
	}
	return filepath.EvalSymlinks(path)
}

// lockFile takes the exclusive advisory lock (flock) that writers of the issues file
// share: on .<name>.lock beside the file (the file itself is replaced by each write, so
// it cannot carry the lock). It waits while another process holds it, until ctx ends.
func (t *Tracker) lockFile(ctx context.Context, op string) (unlock func(), err error) {
	real, err := fileBehindLink(t.path)
	if err != nil {
		real = t.path // the write reports the missing file
	}
	path := filepath.Join(filepath.Dir(real), "."+filepath.Base(real)+".lock")
	f, err := fdio.Open(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return nil, &tracker.Error{Kind: tracker.ErrTransport, Op: op, Message: "opening the issues file's lock " + path, Err: err}
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil // closing releases the lock
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, &tracker.Error{Kind: tracker.ErrTransport, Op: op, Message: "locking the issues file " + t.path, Err: err}
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, &tracker.Error{Kind: tracker.ErrTransport, Op: op, Message: "waiting for another writer of the issues file " + t.path, Err: ctx.Err()}
		case <-time.After(5 * time.Millisecond): // another daemon writes for a few milliseconds
		}
	}
}

// writeTemp writes data to a new hidden file beside path with the given permissions and
// flushes it to disk, ready to be renamed over path.
func writeTemp(path string, data []byte, perm fs.FileMode) (name string, err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".sortie-*.tmp")
	if err != nil {
		return "", err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err := f.Chmod(perm); err != nil {
		return "", err
	}
	if _, err := f.Write(data); err != nil {
		return "", err
	}
	if err := f.Sync(); err != nil {
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	return f.Name(), nil
}

// nextPath is the issues file's next version (writeNext): .<name>.next beside it.
func nextPath(path string) string {
	return filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".next")
}

// removeTemp removes a written version that was not used, unless it is the next file,
// which stays for the next write.
func removeTemp(tmp, path string) {
	if tmp != nextPath(path) {
		os.Remove(tmp)
	}
}

// syncDir makes a rename in dir durable. It is best effort: the rename has already
// happened and is visible, and reporting a failure here would make the caller retry a
// change that was made (and, for a comment, make it twice).
func syncDir(dir string) {
	d, err := fdio.Open(dir, os.O_RDONLY, 0)
	if err != nil {
		return
	}
	_ = d.Sync()
	_ = d.Close()
}

// uniqueCommentID returns an id no existing comment of the issue has.
func (t *Tracker) uniqueCommentID(existing []tracker.Comment) string {
	for {
		id := t.newCommentID()
		taken := false
		for _, c := range existing {
			taken = taken || c.ID == id
		}
		if !taken {
			return id
		}
	}
}

func randomCommentID() string {
	var b [6]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand, Go 1.24+)
	return "sortie-" + hex.EncodeToString(b[:])
}
