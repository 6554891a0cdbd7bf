package proc

import (
	"context"
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
