package main

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// maxRSSKiB is the daemon's own peak resident set in KiB: VmHWM of /proc/self/status,
// the high-water mark of this process image alone. Not getrusage's ru_maxrss (v, the
// fallback), which Linux carries across execve from the image the process replaced: a
// daemon started by a process holding 250 MB (a benchmark harness with its
// transcripts, say) reported 250 MB, whatever it used itself.
func maxRSSKiB(v int64) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return v
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:")
		if !ok {
			continue
		}
		kib, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
		if err != nil {
			return v
		}
		return kib
	}
	return v
}
