package proc

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"sync"
)

// DefaultMaxLine is the longest stdout line a LineReader accepts: 10 MB, enough for the
// largest tool result a CLI puts in one JSONL event.
const DefaultMaxLine = 10 << 20

// initialLineBuffer is the reader's starting buffer; it grows only for longer lines.
const initialLineBuffer = 64 << 10

// lineBuffers holds starting buffers given back by Release: a turn's reader would
// otherwise allocate one per turn, most of a short turn's garbage.
var lineBuffers = sync.Pool{New: func() any { b := make([]byte, initialLineBuffer); return &b }}

// ErrLineTooLong is wrapped by LineReader.Err when a line exceeds the maximum.
var ErrLineTooLong = errors.New("line too long")

// LineReader splits a child's stdout into lines without allocating per line. It is the
// JSONL reader of every fork-per-turn adapter.
type LineReader struct {
	sc  *bufio.Scanner
	max int
	err error   // a line over max
	buf *[]byte // the starting buffer, from lineBuffers; nil once released

	released bool
}

// NewLineReader reads lines of at most maxLine bytes (0 means DefaultMaxLine) from r.
func NewLineReader(r io.Reader, maxLine int) *LineReader {
	if maxLine <= 0 {
		maxLine = DefaultMaxLine
	}
	sc := bufio.NewScanner(r)
	lr := &LineReader{sc: sc, max: maxLine}
	// The scanner's limit includes the terminator; room for "\r\n" lets a line of
	// exactly maxLine bytes through, and Next enforces maxLine itself.
	if maxLine+2 >= initialLineBuffer {
		lr.buf = lineBuffers.Get().(*[]byte)
		sc.Buffer(*lr.buf, maxLine+2)
	} else {
		sc.Buffer(make([]byte, maxLine+2), maxLine+2)
	}
	return lr
}

// Release gives the reader's starting buffer back for another reader. Call it once
// the last line has been handled (no slice from Line may be kept past it); Next
// then reports no more lines. Release is optional, and calling it twice is harmless.
func (lr *LineReader) Release() {
	lr.released = true
	if lr.buf != nil {
		lineBuffers.Put(lr.buf)
		lr.buf = nil
	}
}

// Next advances to the next non-empty line and reports whether there is one. It returns
// false at the end of the input or on an error (see Err).
func (lr *LineReader) Next() bool {
	if lr.err != nil || lr.released {
		return false
	}
	for lr.sc.Scan() {
		switch n := len(lr.sc.Bytes()); {
		case n > lr.max:
			lr.err = lr.tooLong()
			return false
		case n > 0:
			return true
		}
	}
	return false
}

// Line is the current line without its "\n" or "\r\n". It is only valid until the next
// call to Next; copy it to keep it.
func (lr *LineReader) Line() []byte {
	if lr.released {
		return nil
	}
	return lr.sc.Bytes()
}

// Err is the error that ended the input, nil at a clean end. A line over the maximum
// is reported as an error wrapping ErrLineTooLong, never by panicking or truncating;
// adapters map any read error to port_exit and stop the process.
func (lr *LineReader) Err() error {
	if lr.err != nil {
		return lr.err
	}
	err := lr.sc.Err()
	switch {
	case err == nil:
		return nil
	case errors.Is(err, bufio.ErrTooLong):
		return lr.tooLong()
	}
	return fmt.Errorf("proc: reading output: %w", err)
}

func (lr *LineReader) tooLong() error {
	return fmt.Errorf("proc: output line longer than %d bytes: %w", lr.max, ErrLineTooLong)
}
