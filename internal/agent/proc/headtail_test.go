package proc

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestHeadTailBuffer_KeepsHeadAndTail(t *testing.T) {
	tests := []struct {
		name       string
		head, tail int
		writes     []string
		want       string
	}{
		{"fits in head", 4, 4, []string{"ab", "c"}, "abc"},
		{"fills head then tail", 2, 4, []string{"abcdef"}, "abcdef"},
		{"drops middle", 2, 3, []string{"abcdefgh"}, "ab\n... [3 bytes omitted] ...\nfgh"},
		{"small writes wrap the ring", 1, 3, []string{"a", "b", "c", "d", "e", "f"}, "a\n... [2 bytes omitted] ...\ndef"},
		{"write straddles ring end", 0, 4, []string{"abc", "def"}, "\n... [2 bytes omitted] ...\ncdef"},
		{"write exactly fills ring", 0, 3, []string{"abc", "def"}, "\n... [3 bytes omitted] ...\ndef"},
		{"no tail", 2, 0, []string{"abcd"}, "ab\n... [2 bytes omitted] ...\n"},
		{"no head", 0, 2, []string{"abcd"}, "\n... [2 bytes omitted] ...\ncd"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := NewHeadTailBuffer(tt.head, tt.tail)
			var total int
			for _, w := range tt.writes {
				n, err := b.Write([]byte(w))
				if n != len(w) || err != nil {
					t.Fatalf("Write(%q): want (%d, nil), got (%d, %v)", w, len(w), n, err)
				}
				total += n
			}
			if got := b.String(); got != tt.want {
				t.Errorf("String: want %q, got %q", tt.want, got)
			}
			if got := b.Len(); got != int64(total) {
				t.Errorf("Len: want %d, got %d", total, got)
			}
		})
	}
}

func TestHeadTailBuffer_MemoryIsBounded(t *testing.T) {
	b := NewHeadTailBuffer(16, 16)
	chunk := []byte(strings.Repeat("0123456789", 100))
	for range 1000 {
		b.Write(chunk)
	}
	got := b.String()
	want := "0123456789012345\n... [999968 bytes omitted] ...\n4567890123456789"
	if got != want {
		t.Errorf("String: want %q, got %q", want, got)
	}
}

// WaitHead returns once a later write completes what it waits for, and gives up when
// its context ends.
func TestHeadTailBuffer_WaitHeadSeesALaterWrite(t *testing.T) {
	b := NewHeadTailBuffer(64, 64)
	done := make(chan bool)
	go func() {
		done <- b.WaitHead(context.Background(), 64, func(h string) bool { return strings.Contains(h, "ready\n") })
	}()
	b.Write([]byte("rea"))
	b.Write([]byte("dy\n"))
	if !<-done {
		t.Fatal("WaitHead did not see the line written after it started")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if b.WaitHead(ctx, 64, func(h string) bool { return strings.Contains(h, "never") }) {
		t.Fatal("WaitHead accepted a head that does not hold what it waits for")
	}
}

// io.Copy into the buffer goes through ReadFrom and keeps what Write would, read in
// pieces larger and smaller than its own buffer.
func TestHeadTailBuffer_ReadFromKeepsWhatWriteWould(t *testing.T) {
	for _, size := range []int{0, 5, 100, 32 << 10, 100 << 10} {
		input := strings.Repeat("0123456789abcdef", size/16+1)[:size]
		want := NewHeadTailBuffer(7, 9)
		want.Write([]byte(input))
		got := NewHeadTailBuffer(7, 9)
		n, err := io.Copy(got, strings.NewReader(input))
		if err != nil || n != int64(size) {
			t.Fatalf("size %d: io.Copy: want (%d, nil), got (%d, %v)", size, size, n, err)
		}
		if got.String() != want.String() || got.Len() != want.Len() {
			t.Errorf("size %d: want %q (%d), got %q (%d)", size, want.String(), want.Len(), got.String(), got.Len())
		}
	}
}

// A read error ends ReadFrom with that error, after keeping what came before it.
func TestHeadTailBuffer_ReadFromReturnsTheReadError(t *testing.T) {
	boom := errors.New("boom")
	b := NewHeadTailBuffer(16, 0)
	n, err := b.ReadFrom(io.MultiReader(strings.NewReader("abc"), errReader{boom}))
	if !errors.Is(err, boom) || n != 3 || b.String() != "abc" {
		t.Errorf("want (3, boom) and abc kept, got (%d, %v) and %q", n, err, b.String())
	}
}
