package main

import (
	"runtime"
	"testing"
)

func TestHideEnviron_MakesTheProcessNonDumpable(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Linux only")
	}
	if err := hideEnviron(); err != nil {
		t.Fatal(err)
	}
	if d, err := dumpable(); err != nil || d {
		t.Fatalf("dumpable = %v, %v; want false", d, err)
	}
}
