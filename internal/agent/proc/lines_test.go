package proc

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestLineReader_SplitsLines(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  []string
	}{
		{"lf", "a\nb\n", []string{"a", "b"}},
		{"crlf", "a\r\nb\r\n", []string{"a", "b"}},
		{"last line without newline", "a\nb", []string{"a", "b"}},
		{"blank lines skipped", "\n\na\n\n\nb\n\n", []string{"a", "b"}},
		{"empty input", "", nil},
		{"line at the limit", strings.Repeat("x", 16) + "\n", []string{strings.Repeat("x", 16)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lr := NewLineReader(strings.NewReader(tt.input), 16)
			var got []string
			for lr.Next() {
				got = append(got, string(lr.Line()))
			}
			if lr.Err() != nil {
				t.Fatalf("Err: want nil, got %v", lr.Err())
			}
			if strings.Join(got, "|") != strings.Join(tt.want, "|") || len(got) != len(tt.want) {
				t.Errorf("lines: want %q, got %q", tt.want, got)
			}
		})
	}
}

func TestLineReader_OverlongLineIsErrorNotPanic(t *testing.T) {
	input := "ok\n" + strings.Repeat("x", 17) + "\nnever\n"
	lr := NewLineReader(strings.NewReader(input), 16)
	var got []string
	for lr.Next() {
		got = append(got, string(lr.Line()))
	}
	if len(got) != 1 || got[0] != "ok" {
		t.Errorf("lines: want [ok] before the over-long line, got %q", got)
	}
	if err := lr.Err(); !errors.Is(err, ErrLineTooLong) || !strings.Contains(err.Error(), "16 bytes") {
		t.Errorf("Err: want ErrLineTooLong naming the 16-byte limit, got %v", err)
	}
}

func TestLineReader_GrowsPastInitialBuffer(t *testing.T) {
	long := strings.Repeat("y", 3*initialLineBuffer)
	lr := NewLineReader(strings.NewReader(long+"\nz\n"), 0)
	if !lr.Next() || len(lr.Line()) != len(long) {
		t.Fatalf("want a %d-byte line, got %d bytes (err %v)", len(long), len(lr.Line()), lr.Err())
	}
	if !lr.Next() || string(lr.Line()) != "z" || lr.Next() {
		t.Errorf("want one more line z then the end")
	}
}

func TestLineReader_ReadErrorIsWrapped(t *testing.T) {
	boom := errors.New("boom")
	lr := NewLineReader(io.MultiReader(strings.NewReader("a\n"), errReader{boom}), 0)
	for lr.Next() {
	}
	if !errors.Is(lr.Err(), boom) {
		t.Errorf("Err: want the reader's error wrapped, got %v", lr.Err())
	}
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// cycleReader serves data over and over, like a CLI that never stops talking.
type cycleReader struct {
	data []byte
	off  int
}

func (r *cycleReader) Read(b []byte) (int, error) {
	n := copy(b, r.data[r.off:])
	r.off = (r.off + n) % len(r.data)
	return n, nil
}

// BenchmarkLineReader measures the per-line cost of the stdout hot path with
// stream-json-sized lines. One op is one line; expect 0 allocs/op.
func BenchmarkLineReader(b *testing.B) {
	line := `{"type":"assistant","message":{"id":"msg_01","model":"claude-sonnet-4-20250514","content":[{"type":"text","text":"` +
		strings.Repeat("lorem ipsum ", 20) + `"}],"usage":{"input_tokens":1200,"output_tokens":300,"cache_read_input_tokens":5000}},"session_id":"0b7e1b8e-4a51-4f8e-9d1e-2a7a3f0c9b11"}` + "\n"
	data := bytes.Repeat([]byte(line), 1000)
	lr := NewLineReader(&cycleReader{data: data}, 0)
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for b.Loop() {
		if !lr.Next() {
			b.Fatal(lr.Err())
		}
	}
}

// A released reader reports no more lines, and its buffer serves the next reader
// without mixing what each read: the second reader's lines are its own, whole.
func TestLineReader_ReleaseEndsTheReaderAndItsBufferServesTheNext(t *testing.T) {
	first := NewLineReader(strings.NewReader("one\ntwo\n"), 0)
	if !first.Next() || string(first.Line()) != "one" {
		t.Fatalf("first line: want one, got %q", first.Line())
	}
	first.Release()
	if first.Next() || first.Line() != nil {
		t.Errorf("after Release: want no line, got Next true or %q", first.Line())
	}
	first.Release() // twice is harmless

	for i := range 3 {
		long := strings.Repeat(string(rune('a'+i)), 2*initialLineBuffer)
		lr := NewLineReader(strings.NewReader("x\n"+long+"\ny\n"), 0)
		var got []string
		for lr.Next() {
			got = append(got, string(lr.Line()))
		}
		lr.Release()
		if len(got) != 3 || got[0] != "x" || got[1] != long || got[2] != "y" {
			t.Fatalf("reader %d: want x, a %d-byte line, y; got %d lines", i, len(long), len(got))
		}
	}
}

// Release on a reader whose limit is below the pooled size is harmless too.
func TestLineReader_ReleaseOfASmallReader(t *testing.T) {
	lr := NewLineReader(strings.NewReader("a\nb\n"), 16)
	lr.Next()
	lr.Release()
	if lr.Next() {
		t.Error("after Release: want no more lines")
	}
}
