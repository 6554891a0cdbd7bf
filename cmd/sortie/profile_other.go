//go:build !linux

package main

// maxRSSKiB is getrusage's ru_maxrss in KiB: macOS reports bytes.
func maxRSSKiB(v int64) int64 { return v / 1024 }
