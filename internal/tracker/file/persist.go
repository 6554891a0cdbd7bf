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
	"syscall"
	"time"

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
	return t.modify(ctx, op, id, func(data []byte, doc *document, i int) ([]byte, error) {
		if doc.issues[i].State == target {
			return nil, nil
		}
		return setState(data, doc, i, target, t.now().UTC().Format(time.RFC3339))
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
	return t.modify(ctx, op, id, func(data []byte, doc *document, i int) ([]byte, error) {
		c := tracker.Comment{
			ID:        t.uniqueCommentID(doc.issues[i].Comments),
			Author:    commentAuthor,
			Body:      text,
			CreatedAt: t.now().UTC().Format(time.RFC3339),
		}
		return appendComment(data, doc, i, c)
	})
}

// editFunc computes the new file content for issue i of doc, parsed from data. It
// returns nil when there is nothing to write.
type editFunc func(data []byte, doc *document, i int) ([]byte, error)

// modify is one read-modify-write of the file. It holds the file's write lock
// (lockFile) throughout, so that several daemons sharing one issues file write one at a
// time and none loses another's transition. It reads the file fresh under the lock
// (never from the cache), so an edit saved by hand or by another daemon a moment ago is
// the base of ours, and before replacing the file it checks the file still holds what
// it read; if not (an editor, which takes no lock, saved it), it starts over. The
// window left between that check and the rename is a few system calls wide; closing it
// would need every editor to honour the lock.
func (t *Tracker) modify(ctx context.Context, op, id string, edit editFunc) error {
	t.writeMu.Lock()
	defer t.writeMu.Unlock()
	unlock, err := t.lockFile(ctx, op)
	if err != nil {
		return err
	}
	defer unlock()
	for range maxWriteAttempts {
		if err := ctx.Err(); err != nil {
			return &tracker.Error{Kind: tracker.ErrTransport, Op: op, Err: err}
		}
		done, err := t.tryModify(op, id, edit)
		if done || err != nil {
			return err
		}
	}
	return tracker.Errorf(tracker.ErrTransport, op,
		"issues file %s changed while Sortie was writing to it, %d times in a row; nothing was written, the next attempt may succeed", t.path, maxWriteAttempts)
}

// tryModify makes one attempt. done is false when the file changed under it and the
// attempt should be repeated.
func (t *Tracker) tryModify(op, id string, edit editFunc) (done bool, err error) {
	// Write where the file really is: renaming over a symlink would replace the link.
	real, err := filepath.EvalSymlinks(t.path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, missingFile(op, t.path)
		}
		return false, &tracker.Error{Kind: tracker.ErrTransport, Op: op, Message: "resolving issues file path", Err: err}
	}
	data, info, err := readIssuesFile(op, real)
	if err != nil {
		return false, err
	}
	doc, err := t.parsed(data)
	if err != nil {
		return false, &tracker.Error{Kind: tracker.ErrPayload, Op: op,
			Message: fmt.Sprintf("issues file %s is not valid, so Sortie did not change it and this %s was not made; fix the file", t.path, op), Err: err}
	}
	i, ok := doc.byID[id]
	if !ok {
		return false, t.notFound(op, id)
	}
	out, err := edit(data, doc, i)
	var after *document
	if err == nil && out != nil {
		after, err = checkEdit(doc, out)
	}
	if err != nil {
		// A file shape this code cannot edit, which is a bug here; retrying will not help.
		return false, &tracker.Error{Kind: tracker.ErrPayload, Op: op, Message: "editing issues file " + t.path + " failed (please report this as a Sortie bug; the file was not changed)", Err: err}
	}
	if out == nil {
		return true, nil
	}
	if len(out) > MaxFileBytes {
		return false, tooLarge(op, t.path, int64(len(out)))
	}

	tmp, err := writeTemp(real, out, info.Mode().Perm())
	if err != nil {
		return false, &tracker.Error{Kind: tracker.ErrTransport, Op: op, Message: "writing issues file " + t.path, Err: err}
	}
	if t.beforeRename != nil {
		t.beforeRename()
	}
	if current, _, err := readIssuesFile(op, real); err != nil || !bytes.Equal(current, data) {
		os.Remove(tmp)
		return false, nil
	}
	if err := t.replace(tmp, real, out, after); err != nil {
		os.Remove(tmp)
		return false, &tracker.Error{Kind: tracker.ErrTransport, Op: op, Message: "replacing issues file " + t.path, Err: err}
	}
	syncDir(filepath.Dir(real))
	return true, nil
}

// lockFile takes the exclusive advisory lock (flock) that writers of the issues file
// share: on .<name>.lock beside the file (the file itself is replaced by each write, so
// it cannot carry the lock). It waits while another process holds it, until ctx ends.
func (t *Tracker) lockFile(ctx context.Context, op string) (unlock func(), err error) {
	real, err := filepath.EvalSymlinks(t.path)
	if err != nil {
		real = t.path // the write reports the missing file
	}
	path := filepath.Join(filepath.Dir(real), "."+filepath.Base(real)+".lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o644)
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

// checkEdit re-parses the edited content and confirms it still holds the same issues in
// the same order, so a bug in the edit can never replace a good file with a broken or
// shorter one.
func checkEdit(before *document, out []byte) (*document, error) {
	after, err := parse(out)
	if err != nil {
		return nil, fmt.Errorf("edited content does not parse: %w", err)
	}
	if len(after.issues) != len(before.issues) {
		return nil, fmt.Errorf("edited content has %d issues, want %d", len(after.issues), len(before.issues))
	}
	for i := range after.issues {
		a, b := &after.issues[i], &before.issues[i]
		if a.ID != b.ID || a.Identifier != b.Identifier {
			return nil, fmt.Errorf("edited content has issue %q at position %d, want %q", a.ID, i+1, b.ID)
		}
	}
	return after, nil
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

// syncDir makes a rename in dir durable. It is best effort: the rename has already
// happened and is visible, and reporting a failure here would make the caller retry a
// change that was made (and, for a comment, make it twice).
func syncDir(dir string) {
	d, err := os.Open(dir)
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
