package codex

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"sync"
	"time"

	"sortie/internal/agent/proc"
)

// conn is one running app-server and the JSON-RPC framing over its stdio. Only the
// goroutine running the session's current turn reads and writes; stop may come from
// any goroutine.
type conn struct {
	p      *proc.Process
	stdin  *os.File
	nextID int64
	record func([]byte) // test hook: every line read, before it is handled

	lines    chan []byte   // unbuffered: a line is handed over only when a turn reads
	closed   chan struct{} // closed by stop, releasing the reader
	readDone chan struct{} // closed when the reader has ended; readErr is set first
	readErr  error

	stopOnce sync.Once
	exit     proc.Exit
	stopped  bool // stop ran before the process ended by itself
}

// Reasons next returns instead of a line.
var (
	errExited    = errors.New("the app-server closed its output")
	errCancelled = errors.New("cancelled")
	errTimeout   = errors.New("timed out")
)

// startConn starts c with a pipe for its stdin and reads its stdout. ctx is only for the
// start (and its proc.Trace): the process lives until stop.
func startConn(ctx context.Context, c proc.Command, record func([]byte)) (*conn, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	c.Stdin = r
	p, err := proc.Start(context.WithoutCancel(ctx), c)
	r.Close() // the child has its copy
	if err != nil {
		w.Close()
		return nil, err
	}
	cn := &conn{p: p, stdin: w, record: record, lines: make(chan []byte),
		closed: make(chan struct{}), readDone: make(chan struct{})}
	go cn.read()
	return cn, nil
}

func (c *conn) read() {
	defer close(c.readDone)
	lr := proc.NewLineReader(c.p.Stdout(), proc.DefaultMaxLine)
	defer lr.Release()
	for lr.Next() {
		select {
		case c.lines <- bytes.Clone(lr.Line()):
		case <-c.closed:
			return
		}
	}
	c.readErr = lr.Err()
}

// next returns the next line, or errExited once the output has ended (every line read
// before it is returned first: the reader ends only after its last line was taken),
// errCancelled when ctx is done, errTimeout when timeout fires.
func (c *conn) next(ctx context.Context, timeout <-chan time.Time) ([]byte, error) {
	select {
	case l := <-c.lines:
		if c.record != nil {
			c.record(l)
		}
		return l, nil
	case <-c.readDone:
		return nil, errExited
	case <-ctx.Done():
		return nil, errCancelled
	case <-timeout:
		return nil, errTimeout
	}
}

// send writes one message. A write that cannot finish within d (an app-server that no
// longer reads) fails rather than blocking the turn.
func (c *conn) send(m any, d time.Duration) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	c.stdin.SetWriteDeadline(time.Now().Add(d))
	_, err = c.stdin.Write(append(b, '\n'))
	return err
}

// request is a request of ours.
type request struct {
	ID     int64  `json:"id"`
	Method string `json:"method"`
	Params any    `json:"params,omitempty"`
}

// notification is a notification of ours.
type notification struct {
	Method string `json:"method"`
	Params any    `json:"params,omitempty"`
}

// eofGrace is how long stop waits for the app-server to exit after the end of its
// input before it signals the process group.
const eofGrace = 2 * time.Second

// stop ends the app-server and its whole process group (SIGTERM, then SIGKILL after the
// grace period) and returns how it ended. Safe to call more than once, from any
// goroutine, and after the process ended by itself.
func (c *conn) stop() proc.Exit {
	c.stopOnce.Do(func() {
		select {
		case <-c.p.Done():
		default:
			c.stopped = true
		}
		// End of input first: the app-server then shuts down by itself, releasing its
		// threads in order. Killed instead, the CLI's native process may still be
		// dying when the next app-server resumes the thread, which codex 0.169.0
		// refuses ("thread ... already has an active writer").
		c.stdin.Close()
		if c.stopped {
			t := time.NewTimer(eofGrace)
			select {
			case <-c.p.Done():
			case <-t.C:
			}
			t.Stop()
		}
		c.p.Stop()
		close(c.closed)
		c.exit = c.p.Wait()
		<-c.readDone
	})
	return c.exit
}

// ended reports whether the process has exited.
func (c *conn) ended() bool {
	select {
	case <-c.p.Done():
		return true
	case <-c.readDone:
		return true
	default:
		return false
	}
}
