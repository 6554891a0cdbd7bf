package proc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
)

// HeadTailBuffer is an io.Writer that keeps the first head and the last tail bytes
// written to it and counts the rest, so a child's stderr of any size costs bounded
// memory while keeping both its start (usage errors) and its end (the final failure).
// It is safe for concurrent use.
type HeadTailBuffer struct {
	mu       sync.Mutex
	headMax  int
	head     []byte
	tail     []byte // ring buffer of capacity tailMax, allocated on first overflow
	tailMax  int
	tailNext int  // where the next tail byte goes
	tailFull bool // the ring has wrapped
	total    int64
	// changed is closed by the next Write (WaitHead); nil when nobody waits.
	changed chan struct{}
}

// NewHeadTailBuffer keeps up to head bytes from the start and tail bytes from the end.
func NewHeadTailBuffer(head, tail int) *HeadTailBuffer {
	return &HeadTailBuffer{headMax: max(head, 0), tailMax: max(tail, 0)}
}

// Write keeps what fits in the head, then in the tail; it never fails.
func (b *HeadTailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(p)
	b.total += int64(n)
	if b.changed != nil && n > 0 {
		close(b.changed)
		b.changed = nil
	}
	if room := b.headMax - len(b.head); room > 0 {
		k := min(room, len(p))
		b.head = append(b.head, p[:k]...)
		p = p[k:]
	}
	if len(p) == 0 || b.tailMax == 0 {
		return n, nil
	}
	if b.tail == nil {
		b.tail = make([]byte, b.tailMax)
	}
	if len(p) >= b.tailMax {
		copy(b.tail, p[len(p)-b.tailMax:])
		b.tailNext, b.tailFull = 0, true
		return n, nil
	}
	k := copy(b.tail[b.tailNext:], p)
	if k < len(p) {
		copy(b.tail, p[k:])
		b.tailFull = true
	}
	b.tailNext = (b.tailNext + len(p)) % b.tailMax
	if b.tailNext == 0 {
		b.tailFull = true
	}
	return n, nil
}

// copyBuffers are ReadFrom's read buffers. The standard library's io.Copy would
// allocate 32 KB for each child's stderr, which is usually empty.
var copyBuffers = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// ReadFrom writes what r has until its end, as Write would; it is what io.Copy (and
// so exec.Cmd, for a child's stderr) uses, with a pooled buffer.
func (b *HeadTailBuffer) ReadFrom(r io.Reader) (int64, error) {
	buf := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(buf)
	var n int64
	for {
		k, err := r.Read(*buf)
		if k > 0 {
			_, _ = b.Write((*buf)[:k])
			n += int64(k)
		}
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// Len is the number of bytes written, including those dropped.
func (b *HeadTailBuffer) Len() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.total
}

// String is the head, then a marker with the number of dropped bytes if any were
// dropped, then the tail.
func (b *HeadTailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	tail := b.tailBytes()
	dropped := b.total - int64(len(b.head)) - int64(len(tail))
	if dropped == 0 {
		return string(b.head) + string(tail)
	}
	return fmt.Sprintf("%s\n... [%d bytes omitted] ...\n%s", b.head, dropped, tail)
}

// Head is up to the first n bytes written (fewer while fewer have been written), for
// reading what a process said first while it still runs.
func (b *HeadTailBuffer) Head(n int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.head[:min(n, len(b.head))])
}

// WaitHead waits until ok accepts the first n bytes written, or ctx ends, and
// reports whether ok accepted them: for a line a process writes on stderr before it
// writes anything else, which its stdout reader may see first.
func (b *HeadTailBuffer) WaitHead(ctx context.Context, n int, ok func(head string) bool) bool {
	for {
		b.mu.Lock()
		head := string(b.head[:min(n, len(b.head))])
		if b.changed == nil {
			b.changed = make(chan struct{})
		}
		changed := b.changed
		b.mu.Unlock()
		if ok(head) {
			return true
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return false
		}
	}
}

func (b *HeadTailBuffer) tailBytes() []byte {
	if !b.tailFull {
		return b.tail[:b.tailNext]
	}
	out := make([]byte, 0, b.tailMax)
	out = append(out, b.tail[b.tailNext:]...)
	return append(out, b.tail[:b.tailNext]...)
}
