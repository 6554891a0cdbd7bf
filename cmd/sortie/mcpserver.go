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
	"syscall"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"sortie/internal/config"
	"sortie/internal/daemon"
	"sortie/internal/mcp"
	"sortie/internal/workflow"
	"sortie/internal/workflow/engine"
	"sortie/internal/workflow/session"
)

// Files of a standalone workflow server's state directory.
const (
	workflowKeyFile   = "workflow.key"  // the HMAC key of its session and trace tokens
	workflowStateFile = "sessions.json" // the newest token of each session
)

// cmdMCPServer runs `sortie mcp-server`: with --workflow PATH, the sortie-tools MCP
// server an agent CLI starts from .sortie/mcp.json; with --workflows DIR, a standalone
// server of the workflow tools for any MCP client, with its own state; with both, both
// sets. --db PATH is for an operator running it by hand: the run history from that
// database instead of the daemon's agent socket. MCP flows over stdin and stdout; logs
// go to stderr. It exits 0 when the client closes stdin.
func cmdMCPServer(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcp-server", flag.ContinueOnError)
	fs.SetOutput(stderr)
	workflowPath := fs.String("workflow", "", "absolute path of the WORKFLOW.md the session runs under (required unless --workflows is given)")
	libraryDir := fs.String("workflows", "", "serve the workflow tools standalone, from the workflow library in this directory")
	stateDir := fs.String("state-dir", "", "with --workflows: where the session key and sessions are kept\n(default $XDG_STATE_HOME/sortie/workflows, else ~/.local/state/sortie/workflows)")
	dbPath := fs.String("db", "", "with --workflow, run by hand: read workspace_history and cost_budget of SORTIE_ISSUE_ID from this\ndatabase, read-only (a daemon's agents get them from its agent socket instead)")
	if err := fs.Parse(args); err != nil {
		return parseErrorCode(err)
	}
	switch {
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "sortie mcp-server: unexpected argument %q; the workflow is given with --workflow\n", fs.Arg(0))
		return exitUsage
	case *stateDir != "" && *libraryDir == "":
		fmt.Fprintln(stderr, "sortie mcp-server: --state-dir is only used with --workflows DIR")
		return exitUsage
	case *workflowPath == "" && *libraryDir == "":
		fmt.Fprintln(stderr, "sortie mcp-server: --workflow is required (the absolute WORKFLOW.md path; the daemon writes it into .sortie/mcp.json), "+
			"unless --workflows DIR serves the workflow tools standalone")
		return exitUsage
	case *workflowPath != "" && !filepath.IsAbs(*workflowPath):
		fmt.Fprintf(stderr, "sortie mcp-server: --workflow must be an absolute path (got %q): the agent starts the sidecar in its workspace\n", *workflowPath)
		return exitUsage
	case *dbPath != "" && *workflowPath == "":
		fmt.Fprintln(stderr, "sortie mcp-server: --db needs --workflow (the budget and rates cost_budget reports against are in WORKFLOW.md)")
		return exitUsage
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "sortie mcp-server: "+format+"\n", a...)
		return exitFailure
	}
	// Its session's capability token is in its environment: not dumpable, its /proc
	// files are no other process's to read without CAP_SYS_PTRACE, which no confined
	// agent holds. The socket refuses a stolen token anyway (docs/security.md); this
	// keeps it from being read at all. Best effort: nothing depends on it.
	_ = hideEnviron()

	var (
		env     mcp.Env
		cfg     *config.Config
		loadErr error
		err     error
	)
	level, format := config.DefaultLogLevel, config.DefaultLogFormat
	if *workflowPath != "" {
		if env, err = mcp.ParseEnv(os.Getenv); err != nil {
			return fail("%v", err)
		}
		cfg, loadErr = config.Load(*workflowPath, config.Options{Env: mcp.ConfigEnv(os.LookupEnv)})
		switch {
		case loadErr == nil:
			level, format = cfg.Logging.Level, cfg.Logging.Format
		case *dbPath != "" || !inSession(env):
			return fail("%v", loadErr)
		}
	}
	log, err := newLogger(stderr, level, format)
	if err != nil {
		return fail("%v", err)
	}
	log = log.With("component", "mcp-server", "pid", os.Getpid())
	if loadErr != nil {
		// The daemon validated this file with its own environment; an agent's lacks
		// the daemon's SORTIE_* overrides (tracker.kind, say), on purpose. The session's
		// state file and the daemon's socket carry what the tools need.
		log.Warn("WORKFLOW.md does not load without the daemon's environment; going on with the session's settings from the daemon",
			"workflow", *workflowPath, "error", loadErr)
	}
	if os.Getenv("SORTIE_DB_PATH") != "" {
		log.Warn("SORTIE_DB_PATH is ignored: the run history comes from the daemon's agent socket; to read a database by hand, pass --db PATH")
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	opts := mcp.Options{Env: env, Config: cfg, Version: version, Log: log}
	if *dbPath != "" {
		if opts.DBPath, err = filepath.Abs(*dbPath); err != nil {
			return fail("--db: %v", err)
		}
	}
	if *libraryDir != "" {
		eng, err := standaloneEngine(ctx, *libraryDir, *stateDir, log)
		if err != nil {
			return fail("%v", err)
		}
		opts.Workflows = eng
	}
	sidecar, err := mcp.Start(ctx, opts)
	if err != nil {
		return fail("%v", err)
	}
	defer sidecar.Close()

	t := &sdk.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{stdout}}
	if err := sidecar.Serve(ctx, t); err != nil && !errors.Is(err, io.EOF) && ctx.Err() == nil {
		return fail("%v", err)
	}
	return exitOK
}

// inSession reports whether env is a session's, as the daemon writes it into
// .sortie/mcp.json: a workspace, or the daemon's agent socket and token.
func inSession(env mcp.Env) bool {
	return env.Workspace != "" || (env.AgentSocket != "" && env.AgentToken != "")
}

// standaloneEngine loads the workflow library in dir and starts an engine over the
// state in stateDir ("" for the default): the key file, created on first use, and the
// sessions file, so a restarted server still accepts each session's newest token.
// There are no humans to answer checkpoints: an option_id response only has to wait
// the minimum response time.
func standaloneEngine(ctx context.Context, dir, stateDir string, log *slog.Logger) (*engine.Engine, error) {
	lib, err := workflow.LoadLibrary(dir)
	if err != nil {
		var le *workflow.LoadError
		if errors.As(err, &le) {
			return nil, fmt.Errorf("--workflows %s: %d problem(s) in the workflow library:\n%s", dir, len(le.Problems), daemon.ProblemList(le.Problems))
		}
		return nil, fmt.Errorf("--workflows: %w", err)
	}
	for _, w := range lib.Warnings() {
		log.Warn("workflow library", "problem", w.String())
	}
	if stateDir == "" {
		if stateDir, err = defaultWorkflowStateDir(); err != nil {
			return nil, err
		}
	}
	key, err := session.LoadOrCreateKey(filepath.Join(stateDir, workflowKeyFile))
	if err != nil {
		return nil, fmt.Errorf("--state-dir: %w", err)
	}
	state, err := engine.NewMemoryState(filepath.Join(stateDir, workflowStateFile))
	if err != nil {
		return nil, fmt.Errorf("--state-dir: %w", err)
	}
	eng, err := engine.New(engine.Options{
		Library: func() *workflow.Library { return lib },
		Key:     key,
		State:   state,
		Humans:  false,
		Now:     time.Now,
		Log:     log.With("component", "workflows"),
		Version: version,
	})
	if err != nil {
		return nil, err
	}
	if err := eng.Restore(ctx); err != nil {
		return nil, err
	}
	log.Info("workflow library loaded", "dir", lib.Dir(), "workflows", len(lib.Workflows()), "state_dir", stateDir)
	return eng, nil
}

// defaultWorkflowStateDir is $XDG_STATE_HOME/sortie/workflows, else
// ~/.local/state/sortie/workflows (the XDG base directory default).
func defaultWorkflowStateDir() (string, error) {
	if x := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "sortie", "workflows"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("finding the workflow state directory: %w; pass --state-dir", err)
	}
	return filepath.Join(home, ".local", "state", "sortie", "workflows"), nil
}

// nopWriteCloser keeps the transport from closing stdout, which the process owns.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
