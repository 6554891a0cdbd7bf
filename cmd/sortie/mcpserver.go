package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"sortie/internal/config"
	"sortie/internal/mcp"
)

// cmdMCPServer runs `sortie mcp-server --workflow PATH`: the sortie-tools MCP server an
// agent CLI starts from .sortie/mcp.json. MCP flows over stdin and stdout; logs go to
// stderr. It is configured only by its environment (the env block the daemon wrote) and
// the workflow, and exits 0 when the agent closes stdin.
func cmdMCPServer(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcp-server", flag.ContinueOnError)
	fs.SetOutput(stderr)
	workflow := fs.String("workflow", "", "absolute path of the WORKFLOW.md the session runs under (required)")
	if err := fs.Parse(args); err != nil {
		return parseErrorCode(err)
	}
	switch {
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "sortie mcp-server: unexpected argument %q; the workflow is given with --workflow\n", fs.Arg(0))
		return exitUsage
	case *workflow == "":
		fmt.Fprintln(stderr, "sortie mcp-server: --workflow is required (the absolute WORKFLOW.md path; the daemon writes it into .sortie/mcp.json)")
		return exitUsage
	case !filepath.IsAbs(*workflow):
		fmt.Fprintf(stderr, "sortie mcp-server: --workflow must be an absolute path (got %q): the agent starts the sidecar in its workspace\n", *workflow)
		return exitUsage
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "sortie mcp-server: "+format+"\n", a...)
		return exitFailure
	}

	env, err := mcp.ParseEnv(os.Getenv)
	if err != nil {
		return fail("%v", err)
	}
	cfg, err := config.Load(*workflow, config.Options{Env: mcp.ConfigEnv(os.LookupEnv)})
	if err != nil {
		return fail("%v", err)
	}
	log, err := newLogger(stderr, cfg.Logging.Level, cfg.Logging.Format)
	if err != nil {
		return fail("%v", err)
	}
	log = log.With("component", "mcp-server", "pid", os.Getpid())

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	sidecar, err := mcp.Start(ctx, mcp.Options{Env: env, Config: cfg, Version: version, Log: log})
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

// nopWriteCloser keeps the transport from closing stdout, which the process owns.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
