package fdio

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestOverwrite_ReplacesLongerAndShorterContent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_CREAT|unix.O_CLOEXEC, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	for _, want := range []string{strings.Repeat("long content ", 1000), "short", ""} {
		if err := Overwrite(fd, []byte(want)); err != nil {
			t.Fatal(err)
		}
		if got, _ := os.ReadFile(path); string(got) != want {
			t.Fatalf("after Overwrite(%d bytes) the file holds %d bytes", len(want), len(got))
		}
	}
}
