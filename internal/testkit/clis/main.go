package clis

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Main is the TestMain of a package that runs agent CLIs. The test binary acts as
// `sortie confine` when it was started as one (ConfineMain); otherwise Main runs the
// tests and exits with their status. When cache is not nil, *cache is set first to a
// new directory every CLI run of the binary may share as its XDG_CACHE_HOME (a CLI
// unpacks its runtime or downloads its models there once, not once per test), removed
// when the tests end.
func Main(m *testing.M, cache *string) {
	if code, ok := ConfineMain(); ok {
		os.Exit(code)
	}
	if cache == nil {
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "sortie-"+strings.TrimSuffix(filepath.Base(os.Args[0]), ".test")+"-cache-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "clis: the CLIs' shared cache:", err)
		os.Exit(1)
	}
	*cache = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
