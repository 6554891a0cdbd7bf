package file

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"sortie/internal/fdio"
	"sortie/internal/tracker"
)

// racyWindow is how long after a file's modification time we wait before trusting that
// an unchanged (inode, size, mtime) means unchanged content. Two writes within one mtime
// tick leave the same mtime; the coarsest common tick (FAT) is 2 s. Git calls this the
// "racy clean" problem.
const racyWindow = 2 * time.Second

// snapshot is the result of parsing the file as it was when stat'ed, kept so that an
// unchanged file is not read and parsed again.
type snapshot struct {
	info   fs.FileInfo // of the file that was read
	readAt time.Time   // taken before the read
	data   []byte      // the bytes doc was parsed from
	doc    *document
	err    error // parse error; an unchanged broken file stays broken
	// stamped is set for our own write, stamped (stampBehind): its stat is proof of
	// its content at once, with no racy window to wait out.
	stamped bool
}

// fresh reports whether the file now described by info is the one this snapshot read.
func (s *snapshot) fresh(info fs.FileInfo) bool {
	return os.SameFile(s.info, info) &&
		s.info.Size() == info.Size() &&
		s.info.ModTime().Equal(info.ModTime()) &&
		sameChange(s.info, info) &&
		(s.stamped || s.readAt.Sub(info.ModTime()) > racyWindow)
}

// load returns the parsed file, re-reading it only when a stat shows it may have
// changed. The document is shared: callers copy what they hand out.
func (t *Tracker) load(ctx context.Context, op string) (*document, error) {
	if err := ctx.Err(); err != nil {
		return nil, &tracker.Error{Kind: tracker.ErrTransport, Op: op, Err: err}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	readAt := t.now()
	if c := t.cache; c != nil {
		if info, err := os.Stat(t.path); err == nil && c.fresh(info) {
			return c.doc, t.payloadErr(op, c.err)
		}
	}
	prev := t.cache
	t.cache = nil
	data, info, err := readIssuesFileInto(op, t.path, scratch())
	if err != nil {
		return nil, err
	}
	if prev != nil && bytes.Equal(prev.data, data) {
		// The stat could not prove the file unchanged (it was written moments ago),
		// but its bytes are the ones already parsed.
		recycle(data)
		t.cache = &snapshot{info: info, readAt: readAt, data: prev.data, doc: prev.doc, err: prev.err}
		return prev.doc, t.payloadErr(op, prev.err)
	}
	doc, err := parse(data)
	t.cache = &snapshot{info: info, readAt: readAt, data: data, doc: doc, err: err}
	return doc, t.payloadErr(op, err)
}

// parsed returns the parse of data, reusing the cached one when data is the cached
// bytes.
func (t *Tracker) parsed(data []byte) (*document, error) {
	t.mu.Lock()
	c := t.cache
	t.mu.Unlock()
	if c != nil && c.err == nil && sameBytes(c.data, data) {
		return c.doc, nil
	}
	return parse(data)
}

// sameBytes is bytes.Equal, at once for two views of one array (the cache's own).
func sameBytes(a, b []byte) bool {
	if len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0]) {
		return true
	}
	return bytes.Equal(a, b)
}

// replace renames tmp, holding data (parsed as doc), over path and caches doc as the
// file's content. Readers wait for both, so the watch event of the rename never finds
// a cache that predates it. stamp is tmp's modification time when writeNext stamped
// it, else zero.
func (t *Tracker) replace(tmp, path string, data []byte, doc *document, stamp time.Time) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	var old *snapshot
	old, t.cache = t.cache, nil
	if err := replaceFile(tmp, path); err != nil {
		return err
	}
	// The content replaced, cached or last written, is referred to by nothing else
	// now: only the writer (this goroutine, holding writeMu) reads a cache's bytes
	// outside t.mu. Its buffer is the next write's.
	if old != nil && !sameArray(old.data, data) && !sameArray(old.data, t.written) {
		recycle(old.data)
	}
	if !sameArray(t.written, data) {
		recycle(t.written)
	}
	t.written = data
	if info, err := os.Stat(path); err == nil {
		stamped := !stamp.IsZero() && info.ModTime().Equal(stamp)
		t.cache = &snapshot{info: info, readAt: t.now(), data: data, doc: doc, stamped: stamped}
	}
	return nil
}

// sameArray reports whether a and b are views of one array's start.
func sameArray(a, b []byte) bool {
	return cap(a) > 0 && cap(b) > 0 && &a[:1][0] == &b[:1][0]
}

func (t *Tracker) payloadErr(op string, err error) error {
	if err == nil {
		return nil
	}
	return &tracker.Error{Kind: tracker.ErrPayload, Op: op, Message: "issues file " + t.path, Err: err}
}

// readBuffers recycles the buffers of reads that are only compared and dropped: a
// write reads the file twice, and every watch event and cache check once more, and a
// backlog's file is megabytes. Allocating (and zeroing) each anew was most of the
// tracker's work with ten thousand issues.
var readBuffers sync.Pool

// fileReads counts whole reads of an issues file, for tests that check a stat was
// enough.
var fileReads atomic.Int64

// scratch is a buffer from readBuffers, or nil.
func scratch() []byte {
	if b, ok := readBuffers.Get().(*[]byte); ok {
		return (*b)[:0]
	}
	return nil
}

// recycle returns a buffer that nothing refers to any more to readBuffers.
func recycle(b []byte) {
	if cap(b) > 0 && cap(b) <= MaxFileBytes+bytes.MinRead {
		readBuffers.Put(&b)
	}
}

// readIssuesFileInto reads the whole file at path, into buf's storage when it is
// large enough, refusing one over MaxFileBytes. The returned info is of the opened
// file, not of whatever is at path by the time we return. A missing file is
// tracker_payload_error (the operator must create it or fix the path; waiting will not
// help); other I/O failures are tracker_transport_error.
func readIssuesFileInto(op, path string, buf []byte) ([]byte, fs.FileInfo, error) {
	fileReads.Add(1)
	f, err := fdio.Open(path, os.O_RDONLY, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, missingFile(op, path)
		}
		return nil, nil, &tracker.Error{Kind: tracker.ErrTransport, Op: op, Message: "reading issues file", Err: err}
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, nil, &tracker.Error{Kind: tracker.ErrTransport, Op: op, Message: "reading issues file", Err: err}
	}
	if !info.Mode().IsRegular() {
		return nil, nil, tracker.Errorf(tracker.ErrPayload, op, "issues file %s is not a regular file (it is %s); point tracker.path (or file.path) in WORKFLOW.md at a JSON file", path, info.Mode().Type())
	}
	if info.Size() > MaxFileBytes {
		return nil, nil, tooLarge(op, path, info.Size())
	}
	b := bytes.NewBuffer(buf[:0])
	b.Grow(int(info.Size()) + bytes.MinRead)
	// The file may grow between Stat and the read; the limit holds regardless.
	if _, err := b.ReadFrom(io.LimitReader(f, MaxFileBytes+1)); err != nil {
		return nil, nil, &tracker.Error{Kind: tracker.ErrTransport, Op: op, Message: "reading issues file", Err: err}
	}
	if b.Len() > MaxFileBytes {
		return nil, nil, tooLarge(op, path, int64(b.Len()))
	}
	return b.Bytes(), info, nil
}

func missingFile(op, path string) error {
	return tracker.Errorf(tracker.ErrPayload, op,
		"issues file %s does not exist; create it (a JSON array of issues, [] for none) or fix tracker.path (or file.path) in WORKFLOW.md; a relative path is resolved against the directory of WORKFLOW.md", path)
}

func tooLarge(op, path string, size int64) error {
	return tracker.Errorf(tracker.ErrPayload, op,
		"issues file %s is %d bytes, over the %d-byte (64 MiB) limit; move finished issues out of it", path, size, MaxFileBytes)
}
