package main

import (
	"fmt"
	"io"
	"os"

	"sortie/internal/agent/sandbox"
)

// cmdConfine is `sortie confine --write P --read P --hide P ... -- PROGRAM ARGS`: the
// daemon starts every confined agent through it. It confines itself with Landlock
// and then executes PROGRAM in its place, so the agent and everything it starts stay
// confined. It never runs PROGRAM unconfined: on any failure it exits 126 without
// running it, as a shell does for a command it cannot execute.
func cmdConfine(args []string, stderr io.Writer) int {
	p, argv, err := sandbox.ParseArgs(args)
	if err == nil {
		err = sandbox.Exec(p, argv, os.Environ())
	}
	fmt.Fprintf(stderr, "sortie confine: %v\n", err)
	return 126
}
