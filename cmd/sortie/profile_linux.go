package main

// maxRSSKiB is getrusage's ru_maxrss in KiB: Linux reports KiB.
func maxRSSKiB(v int64) int64 { return v }
