package main

import (
	"fmt"
	"io"
	"os"

	"sortie/internal/agent/sandbox"
	"sortie/internal/agent/supervise"
)

// cmdConfine is `sortie confine --write P --read P --hide P --private P ... -- PROGRAM ARGS`: the
// daemon starts every confined agent through it (sandbox.Main). It never runs PROGRAM
// unconfined.
//
// When PROGRAM is `sortie supervise` (this executable), which is how every local agent
// starts, the supervisor runs here, confined, rather than in a process of its own: one
// program start fewer per turn, the same confinement (Landlock's domain and the dropped
// capabilities are those an exec would have carried over).
func cmdConfine(args []string, stderr io.Writer) int {
	p, argv, err := sandbox.ParseArgs(args)
	if err != nil || !isSelf(argv, "supervise") {
		return sandbox.Main(args, stderr)
	}
	if p.Hidden(argv[0]) {
		fmt.Fprintf(stderr, "sortie confine: %s is hidden from agents and cannot be run confined\n", argv[0])
		return 126
	}
	if code, ran := sandbox.ConfineInUserNS(p, os.Args); ran {
		return code // not root: it ran in a user namespace, for the private /tmp
	}
	if err := sandbox.ConfineThread(p); err != nil {
		fmt.Fprintf(stderr, "sortie confine: %v\n", err)
		return 126
	}
	return supervise.Main(argv[2:], stderr)
}

// isSelf reports whether argv runs this executable's subcommand sub.
func isSelf(argv []string, sub string) bool {
	if len(argv) < 2 || argv[1] != sub {
		return false
	}
	self, err := os.Executable()
	if err != nil {
		return false
	}
	a, errA := os.Stat(argv[0])
	b, errB := os.Stat(self)
	return errA == nil && errB == nil && os.SameFile(a, b)
}
