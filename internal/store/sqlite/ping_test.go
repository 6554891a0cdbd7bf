package sqlite

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

func TestPing_AnswersUntilClosed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sortie.db")
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Ping(context.Background()); err != nil {
		t.Fatalf("Ping on an open store: %v", err)
	}
	s.Close()
	if err := s.Ping(context.Background()); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("Ping on a closed store = %v, want an error naming %s", err, path)
	}
}
