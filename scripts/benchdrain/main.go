// Command benchdrain measures Sortie against the physical limit of a drain: the same
// fake agent run by xargs at the same concurrency. It builds nothing itself: `make
// bench-drain` builds bin/sortie and runs it with `go run ./scripts/benchdrain`.
//
// Each workload writes a WORKFLOW.md (file tracker, claude-code adapter), an issues
// file and a transcript into a temporary directory, and runs the real daemon binary
// with --exit-when-idle. Its agent is this program (`benchdrain replay`), which reads
// the prompt and prints the transcript, as the claude CLI prints stream-json. The
// daemon's own CPU time and peak RSS come from the "resources used" line it logs at
// exit (getrusage of the daemon alone, its agents excluded).
//
// The figures and what was done about them are in docs/performance.md.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "replay" {
		os.Exit(replayMain(os.Args[2:]))
	}
	os.Exit(benchMain(os.Args[1:]))
}

// options are the harness's flags.
type options struct {
	sortie    string        // the daemon binary
	capture   string        // the captured claude transcript the workloads are built from
	workloads []string      // which to run, in order
	count     int           // runs of each drain workload; the median is reported
	profile   string        // a directory for the daemon's CPU and heap profiles
	keep      bool          // keep the temporary directories
	trace     bool          // with profile: an execution trace of the daemon too
	soak      time.Duration // the agents workload's simulated work
	agentCPU  time.Duration // W1 and W2: CPU the fake agent burns at each start
	verbose   bool
}

func benchMain(args []string) int {
	fs := flag.NewFlagSet("benchdrain", flag.ContinueOnError)
	var o options
	var workloads string
	fs.StringVar(&o.sortie, "sortie", "bin/sortie", "the sortie binary to measure")
	fs.StringVar(&o.capture, "capture", "internal/agent/claude/testdata/two_blocks_tool_call.jsonl",
		"a stream-json transcript captured from the real claude CLI, which the workloads' transcripts repeat")
	fs.StringVar(&workloads, "workloads", "w1,w1cpu,w2,w2long,backlog,agents,latency", "comma-separated: w1, w1cpu, w2, w2long, backlog, agents, latency")
	fs.IntVar(&o.count, "count", 3, "runs of W1 and W2 each (and of their xargs baselines); medians are reported")
	fs.StringVar(&o.profile, "profile", "", "write the daemon's CPU and heap profiles of each workload into this directory")
	fs.BoolVar(&o.trace, "trace", false, "with -profile: also write the daemon's execution trace (go tool trace)")
	fs.BoolVar(&o.keep, "keep", false, "keep each workload's directory (WORKFLOW.md, issues, logs)")
	fs.DurationVar(&o.soak, "soak", 30*time.Minute, "the agents workload: how long 100 agents work (simulated work, real time)")
	fs.DurationVar(&o.agentCPU, "agent-cpu", 0, "W1, W2 and W2-long: CPU time the fake agent burns at each start before its transcript, under xargs and under Sortie alike (W1-cpu burns at least 10ms)")
	fs.BoolVar(&o.verbose, "v", false, "print each run's figures")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	o.workloads = strings.Split(workloads, ",")
	var err error
	if o.sortie, err = filepath.Abs(o.sortie); err != nil {
		fmt.Fprintln(os.Stderr, "benchdrain:", err)
		return 1
	}
	if _, err := os.Stat(o.sortie); err != nil {
		fmt.Fprintf(os.Stderr, "benchdrain: %v (run `make build` first, or use `make bench-drain`)\n", err)
		return 1
	}
	if o.profile != "" {
		if err := os.MkdirAll(o.profile, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "benchdrain:", err)
			return 1
		}
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchdrain:", err)
		return 1
	}
	h := &harness{opts: o, self: self}
	defer h.removeAll()
	failed := false
	var reports []*report
	for _, w := range o.workloads {
		fn, ok := workloadFuncs[strings.TrimSpace(w)]
		if !ok {
			fmt.Fprintf(os.Stderr, "benchdrain: unknown workload %q (want w1, w1cpu, w2, w2long, backlog, agents, latency)\n", w)
			return 2
		}
		r, err := fn(h)
		if err != nil {
			fmt.Fprintf(os.Stderr, "benchdrain: %s: %v\n", w, err)
			failed = true
			continue
		}
		r.print(os.Stdout)
		reports = append(reports, r)
	}
	if cross := crossChecks(reports); cross != nil {
		cross.print(os.Stdout)
	}
	if failed {
		return 1
	}
	return 0
}

var workloadFuncs = map[string]func(*harness) (*report, error){
	"w1":      (*harness).w1,
	"w1cpu":   (*harness).w1cpu,
	"w2":      (*harness).w2,
	"w2long":  (*harness).w2long,
	"backlog": (*harness).backlog,
	"agents":  (*harness).agents,
	"latency": (*harness).latency,
}
