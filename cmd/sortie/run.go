package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"sortie/internal/agent/supervise"
	"sortie/internal/config"
	"sortie/internal/daemon"
	"sortie/internal/orchestrator"
	"sortie/internal/tracker"
)

// runFlags are the daemon's command-line flags.
type runFlags struct {
	dryRun       bool
	exitWhenIdle bool
	envFile      string
	logLevel     string
	logFormat    string
	port         int    // -1: server.port
	host         string // "": server.host
	cpuProfile   string // --cpuprofile: a CPU profile of the daemon's whole life
	memProfile   string // --memprofile: a heap profile at exit
	trace        string // --trace: an execution trace of the daemon's whole life
}

func (f *runFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&f.dryRun, "dry-run", false, "poll once and print what would be dispatched")
	fs.BoolVar(&f.exitWhenIdle, "exit-when-idle", false, "exit once nothing is running, retrying or eligible")
	fs.StringVar(&f.envFile, "env-file", "", "read SORTIE_* overrides from this .env file")
	fs.StringVar(&f.logLevel, "log-level", "", "debug, info, warn or error")
	fs.StringVar(&f.logFormat, "log-format", "", "text or json")
	fs.IntVar(&f.port, "port", -1, "serve the dashboard, API and metrics on this port (0: off)")
	fs.StringVar(&f.host, "host", "", "listen on this IP address")
	fs.StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile of the daemon to this file (go tool pprof)")
	fs.StringVar(&f.memProfile, "memprofile", "", "write a heap profile to this file when the daemon exits (go tool pprof)")
	fs.StringVar(&f.trace, "trace", "", "write an execution trace of the daemon to this file (go tool trace)")
}

func cmdRun(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sortie", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usageText) }
	var f runFlags
	f.register(fs)
	if err := fs.Parse(args); err != nil {
		return parseErrorCode(err)
	}
	if fs.NArg() > 1 {
		fmt.Fprintf(stderr, "sortie: too many arguments: %s\n", strings.Join(fs.Args(), " "))
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	stopProfiles, err := startProfiles(f)
	if err != nil {
		fmt.Fprintf(stderr, "sortie: %v\n", err)
		return exitFailure
	}
	code := runDaemon(ctx, workflowPath(fs.Args()), f, stdout, stderr)
	if err := stopProfiles(); err != nil {
		fmt.Fprintf(stderr, "sortie: %v\n", err)
	}
	return code
}

// workflowPath returns the absolute WORKFLOW.md path from the positional arguments.
func workflowPath(args []string) string {
	p := "WORKFLOW.md"
	if len(args) > 0 {
		p = args[0]
	}
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

// runDaemon builds the daemon from the workflow file (internal/daemon) and runs it
// until ctx ends (or, with --exit-when-idle, until there is nothing to do).
func runDaemon(ctx context.Context, path string, f runFlags, stdout, stderr io.Writer) int {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(stderr, "sortie: "+format+"\n", args...)
		return exitFailure
	}
	if err := hideEnviron(); err != nil {
		logStartupWarning(stderr, "cannot hide the daemon's environment from other processes of this user: %v", err)
	}
	first, err := config.Load(path, config.Options{EnvFile: f.envFile})
	if err != nil {
		return fail("%v", err)
	}
	if err := daemon.CheckTemplate(first); err != nil {
		return fail("%v", err)
	}
	view := newProgressView(stderr, f.dryRun)
	logger, err := newLogger(view, pick(f.logLevel, first.Logging.Level), pick(f.logFormat, first.Logging.Format))
	if err != nil {
		return fail("%v", err)
	}
	// Orphans of agents whose supervisor was killed come back to the daemon, which
	// stops them at the run's end (by SORTIE_RUN_ID) and reaps them.
	if err := supervise.Adopt(ctx.Done(), 30*time.Second); err != nil {
		logger.Warn("processes an agent leaves behind may outlive the daemon's watch: it cannot be their subreaper", "error", err)
	}
	if f.dryRun {
		trk, err := tracker.New(daemon.TrackerConfig(first, version))
		if err != nil {
			return fail("tracker: %v", err)
		}
		return dryRun(ctx, first, trk, stdout, stderr)
	}
	d, err := daemon.New(ctx, daemon.Options{WorkflowPath: path, EnvFile: f.envFile, ExitWhenIdle: f.exitWhenIdle,
		Host: f.host, Port: f.port, Version: version, Logger: logger, Stderr: stderr})
	if err != nil {
		return fail("%v", err)
	}
	stopView := view.start(ctx, d.Snapshot)
	err = d.Run(ctx)
	stopView()
	if err != nil {
		return fail("%v", err)
	}
	logResources(logger)
	return exitOK
}

func pick(flagValue, configValue string) string {
	if flagValue != "" {
		return flagValue
	}
	return configValue
}

func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	// The names logging.level accepts (docs/configuration.md), "warning" included, and
	// no others: slog's own parser would also take "info+2".
	var lv slog.Level
	switch strings.ToLower(level) {
	case "", "info":
		lv = slog.LevelInfo
	case "debug":
		lv = slog.LevelDebug
	case "warn", "warning":
		lv = slog.LevelWarn
	case "error":
		lv = slog.LevelError
	default:
		return nil, fmt.Errorf("log level %q: want debug, info, warn or error", level)
	}
	hopts := &slog.HandlerOptions{Level: lv}
	switch strings.ToLower(format) {
	case "", "text":
		return slog.New(slog.NewTextHandler(w, hopts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, hopts)), nil
	}
	return nil, fmt.Errorf("log format %q: want text or json", format)
}

// dryRun polls once and prints, for every candidate, whether it would be dispatched.
func dryRun(ctx context.Context, cfg *config.Config, trk tracker.Tracker, stdout, stderr io.Writer) int {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	plan, err := orchestrator.Plan(ctx, cfg, trk)
	if err != nil {
		fmt.Fprintf(stderr, "sortie: dry run: %v\n", err)
		return exitFailure
	}
	fmt.Fprintf(stdout, "%d candidate issues, %d agent slots\n", len(plan), cfg.Agent.MaxConcurrentAgents)
	for _, d := range plan {
		verdict := "dispatch"
		if d.Reason != "" {
			verdict = "skip: " + d.Reason
		}
		fmt.Fprintf(stdout, "  %-14s %-14s %s\n", d.Issue.Identifier, d.Issue.State, verdict)
	}
	return exitOK
}

// parseErrorCode is the exit code for a flag parsing error: -h and --help asked for the
// usage, which the flag package has printed, so they succeed; anything else is a bad
// command line.
func parseErrorCode(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	return exitUsage
}

// logStartupWarning reports a problem found before the logger exists.
func logStartupWarning(stderr io.Writer, format string, args ...any) {
	fmt.Fprintf(stderr, "sortie: warning: "+format+"\n", args...)
}
