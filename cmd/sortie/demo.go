package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"sortie/internal/store/sqlite"
	"sortie/internal/tracker"
	_ "sortie/internal/tracker/file"
)

func cmdDemo(args []string, stdout, stderr io.Writer) int {
	fset := flag.NewFlagSet("demo", flag.ContinueOnError)
	fset.SetOutput(stderr)
	var f runFlags
	f.register(fset)
	dir := fset.String("dir", "", "write the demo here (default: a new temporary directory)")
	keep := fset.Bool("keep-running", false, "keep running after the work is done (Ctrl-C stops)")
	if err := fset.Parse(args); err != nil {
		return parseErrorCode(err)
	}
	if fset.NArg() > 0 {
		fmt.Fprintln(stderr, "sortie demo: unexpected arguments; use --dir DIR")
		return exitUsage
	}
	f.exitWhenIdle = f.exitWhenIdle || !*keep
	if *dir == "" {
		d, err := os.MkdirTemp("", "sortie-demo-")
		if err != nil {
			fmt.Fprintf(stderr, "sortie demo: %v\n", err)
			return exitFailure
		}
		*dir = d
	}
	abs, err := filepath.Abs(*dir)
	if err != nil {
		fmt.Fprintf(stderr, "sortie demo: %v\n", err)
		return exitFailure
	}
	if _, err := writeAssets("assets/demo", abs); err != nil {
		fmt.Fprintf(stderr, "sortie demo: %v\n", err)
		return exitFailure
	}
	fmt.Fprintf(stdout, "Sortie demo in %s\n", abs)
	fmt.Fprintln(stdout, "  WORKFLOW.md  configuration + prompt (file tracker, mock agent)")
	fmt.Fprintln(stdout, "  issues.json  the tracker: watch the states change")
	fmt.Fprintln(stdout, "")

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	wf := filepath.Join(abs, "WORKFLOW.md")
	code := runDaemon(ctx, wf, f, stdout, stderr)
	if code == exitOK {
		printDemoSummary(context.Background(), abs, stdout)
	}
	return code
}

// printDemoSummary shows where each demo issue ended up and its run history.
func printDemoSummary(ctx context.Context, dir string, w io.Writer) {
	trk, err := tracker.New(tracker.Config{Kind: "file", WorkflowDir: dir,
		Options:      map[string]any{"path": filepath.Join(dir, "issues.json")},
		ActiveStates: []string{"Todo", "In Progress"}, TerminalStates: []string{"Done", "Cancelled"}})
	if err != nil {
		return
	}
	st, err := sqlite.OpenReadOnly(ctx, filepath.Join(dir, "sortie.db"))
	if err != nil {
		return
	}
	defer st.Close()
	fmt.Fprintln(w, "\nWhere the issues ended up:")
	for i := 1; i <= 7; i++ {
		id := fmt.Sprint(i)
		is, err := trk.FetchIssueByID(ctx, id)
		if err != nil {
			continue
		}
		runs, _ := st.RunsForIssue(ctx, id, 10)
		line := fmt.Sprintf("  %-7s %-13s", is.Identifier, is.State)
		for j := len(runs) - 1; j >= 0; j-- {
			line += fmt.Sprintf(" run%d:%s", runs[j].Attempt, runs[j].Status)
		}
		switch is.Identifier {
		case "DEMO-2":
			line += "  (waits: blocked by DEMO-1 until it is Done)"
		case "DEMO-4":
			line += "  (held: the agent asked for a human)"
		case "DEMO-7":
			line += "  (already done: never dispatched)"
		}
		fmt.Fprintln(w, line)
	}
	fmt.Fprintf(w, "\nTry: move DEMO-1 to \"Done\" in %s and run `%s --exit-when-idle %s`: DEMO-2 starts at once.\n",
		filepath.Join(dir, "issues.json"), os.Args[0], filepath.Join(dir, "WORKFLOW.md"))
}
