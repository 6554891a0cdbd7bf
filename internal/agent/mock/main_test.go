package mock

import (
	"os"
	"strings"
	"testing"
)

// TestMain lets the test binary act as the mock agent's child: the adapter re-executes
// os.Executable(), which here is this binary.
func TestMain(m *testing.M) {
	if IsChild() {
		os.Exit(ChildMain())
	}
	// Under -race every child would otherwise sleep a second before exiting
	// (GORACE atexit_sleep_ms defaults to 1000).
	os.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	os.Exit(m.Run())
}
