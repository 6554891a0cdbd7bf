//go:build race

package main

// raceEnabled reports whether the tests run under the race detector; the binary under
// test is then built with -race too.
const raceEnabled = true
