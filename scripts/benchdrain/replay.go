package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"syscall"
	"time"
)

// replayMain is the fake agent: `benchdrain replay --transcript F [--pace D] [CLI ARGS…]`.
// It answers --version as the claude CLI does, reads its prompt from stdin and prints
// the transcript. With --pace it spreads the lines over D, as a model that thinks
// between tool calls would. With --burn it first uses D of CPU time, as a heavier CLI's
// start would. With --log it first appends "<unix ns> <issue>" to that
// file (one write, O_APPEND), so the harness can check the dispatch order. Every
// argument after its own flags (the adapter's -p, --output-format, …) is ignored.
func replayMain(args []string) int {
	if slices.Contains(args, "--version") {
		fmt.Println("2.1.330 (Claude Code)")
		return 0
	}
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	transcript := fs.String("transcript", "", "the stream-json lines to print")
	pace := fs.Duration("pace", 0, "spread the lines over this long")
	logPath := fs.String("log", "", "append the start time and issue to this file")
	burn := fs.Duration("burn", 0, "use this much CPU time before printing")
	fs.SetOutput(io.Discard)
	// The adapter's own flags follow ours: parse ours, stop at the first unknown.
	var own []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--transcript" || a == "--pace" || a == "--log" || a == "--burn" {
			if i+1 < len(args) {
				own = append(own, a, args[i+1])
				i++
			}
		}
	}
	if err := fs.Parse(own); err != nil || *transcript == "" {
		fmt.Fprintln(os.Stderr, "replay: usage: benchdrain replay --transcript FILE [--pace D] [--log FILE]")
		return 2
	}
	if *logPath != "" {
		issue := os.Getenv("SORTIE_ISSUE_IDENTIFIER")
		line := strconv.FormatInt(time.Now().UnixNano(), 10) + " " + issue + "\n"
		f, err := os.OpenFile(*logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err == nil {
			_, _ = f.WriteString(line)
			f.Close()
		}
	}
	burnCPU(*burn)
	if _, err := io.Copy(io.Discard, os.Stdin); err != nil {
		fmt.Fprintln(os.Stderr, "replay: reading the prompt:", err)
		return 1
	}
	f, err := os.Open(*transcript)
	if err != nil {
		fmt.Fprintln(os.Stderr, "replay:", err)
		return 1
	}
	defer f.Close()
	if *pace <= 0 {
		if _, err := io.Copy(os.Stdout, f); err != nil {
			return 1
		}
		return 0
	}
	// Paced: count the lines, then print each at its share of the time.
	data, err := io.ReadAll(f)
	if err != nil {
		return 1
	}
	n := 0
	for _, b := range data {
		if b == '\n' {
			n++
		}
	}
	step := *pace / time.Duration(max(n, 1))
	w := bufio.NewWriter(os.Stdout)
	start := time.Now()
	i := 0
	for len(data) > 0 {
		j := 0
		for j < len(data) && data[j] != '\n' {
			j++
		}
		if j < len(data) {
			j++
		}
		_, _ = w.Write(data[:j])
		data = data[j:]
		i++
		if wait := time.Until(start.Add(time.Duration(i) * step)); wait > 0 {
			if err := w.Flush(); err != nil {
				return 1
			}
			time.Sleep(wait)
		}
	}
	if err := w.Flush(); err != nil {
		return 1
	}
	return 0
}

// burnCPU computes until the process has used d more CPU time (user and system), so
// that the agent costs d more whatever else the machine is doing.
func burnCPU(d time.Duration) {
	if d <= 0 {
		return
	}
	x := uint64(1)
	for start, used := cpuUsed(), time.Duration(0); used < d; used = cpuUsed() - start {
		for range 100_000 {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	runtime.KeepAlive(x) // the arithmetic is not optimised away
}

// cpuUsed is the CPU time this process has used.
func cpuUsed() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return time.Duration(1<<63 - 1)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
