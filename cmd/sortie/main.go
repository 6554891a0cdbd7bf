// Command sortie turns issue-tracker tickets into coding-agent sessions. See
// `sortie help` and docs/ for how to run it.
package main

import (
	"fmt"
	"io"
	"os"

	"sortie/internal/agent/mock"
	"sortie/internal/agent/supervise"

	// Adapters register themselves by kind.
	_ "sortie/internal/agent/all"
	_ "sortie/internal/tracker/all"
)

// Set by the build (-ldflags -X).
var (
	version = "dev"
	commit  = "none"
	date    = "unknown"
)

// Exit codes, documented in docs/cli.md.
const (
	exitOK      = 0 // success, a valid workflow, or a graceful shutdown
	exitFailure = 1 // invalid workflow, start-up failure, fatal runtime error
	exitUsage   = 2 // bad command line
)

func main() {
	// A confined mock agent is started as `sortie confine ... -- sortie <turn file>` with
	// the mock's child marker already in its environment: confine first, or the child
	// would run unconfined.
	if len(os.Args) > 1 && os.Args[1] == "confine" {
		os.Exit(cmdConfine(os.Args[2:], os.Stderr))
	}
	// Likewise `sortie supervise -- sortie <turn file>`, which owns the agent's process
	// tree (internal/agent/supervise).
	if len(os.Args) > 1 && os.Args[1] == "supervise" {
		os.Exit(supervise.Main(os.Args[2:], os.Stderr))
	}
	// The mock agent runs the sortie binary itself as its child process.
	if mock.IsChild() {
		os.Exit(mock.ChildMain())
	}
	if runsDaemon(os.Args[1:]) {
		if err := concealEnviron(); err != nil {
			fmt.Fprintf(os.Stderr, "sortie: warning: the daemon's secrets stay visible in /proc/%d/environ: %v\n", os.Getpid(), err)
		}
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run dispatches to a subcommand and returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "validate":
			return cmdValidate(args[1:], stdout, stderr)
		case "init":
			return cmdInit(args[1:], stdout, stderr)
		case "webhooks":
			return cmdWebhooks(args[1:], stdout, stderr)
		case "demo":
			return cmdDemo(args[1:], stdout, stderr)
		case "status":
			return cmdStatus(args[1:], stdout, stderr)
		case "mcp-server":
			return cmdMCPServer(args[1:], os.Stdin, stdout, stderr)
		case "confine":
			return cmdConfine(args[1:], stderr)
		case "supervise":
			return supervise.Main(args[1:], stderr)
		case "version", "--version", "-V":
			fmt.Fprintln(stdout, versionLine())
			return exitOK
		case "help", "-h", "-help", "--help":
			fmt.Fprint(stdout, usageText)
			return exitOK
		}
	}
	return cmdRun(args, stdout, stderr)
}

// runsDaemon reports whether args start the daemon (no subcommand, or flags and a
// WORKFLOW.md), the one command that holds secrets for long.
func runsDaemon(args []string) bool {
	if len(args) == 0 {
		return true
	}
	switch args[0] {
	case "validate", "init", "webhooks", "demo", "status", "mcp-server", "confine", "supervise", "version", "--version", "-V", "help", "-h", "-help", "--help":
		return false
	}
	return true
}

func versionLine() string {
	return fmt.Sprintf("sortie %s (commit %s, built %s)", version, commit, date)
}

const usageText = `sortie turns issue-tracker tickets into coding-agent sessions.

Usage:
  sortie [flags] [WORKFLOW.md]        run the daemon (default ./WORKFLOW.md)
  sortie demo [--dir DIR] [flags]     write a self-contained demo into DIR (default: a new
                                      temporary directory) and run it; needs no credentials
  sortie validate [--format text|json] [WORKFLOW.md]
                                      check a workflow file; exit 0 valid, 1 invalid
  sortie init [DIR]                   write a commented WORKFLOW.md and issues.json that
                                      run with the file tracker and the mock agent
  sortie webhooks [WORKFLOW.md]       what to register on the workflow's tracker so that
                                      issues start within a second: the URL, the events,
                                      the secret's variable
  sortie status [--json] [WORKFLOW.md]
                                      what is running, retrying and awaiting input, and
                                      the recent runs: from the daemon's API, or from its
                                      database when no daemon answers
  sortie mcp-server --workflow PATH   the sortie-tools MCP server (stdio) that agent CLIs
                                      start from .sortie/mcp.json; not run by hand
  sortie mcp-server --workflows DIR [--state-dir DIR]
                                      serve the workflow tools of the library in DIR to
                                      any MCP client (stdio), with their own state
  sortie version                      print the version
  sortie help                         print this help

Run flags:
  --exit-when-idle      exit 0 once nothing is running, retrying or eligible
  --dry-run             poll once, print what would be dispatched and why others are not
  --env-file PATH       read SORTIE_* overrides from this .env file
  --port N              serve the dashboard, API and metrics on port N (0: off;
                        default: server.port, else 7678)
  --host ADDR           listen on this IP address (default: server.host, else 127.0.0.1)
  --log-level LEVEL     debug, info, warn or error (default: logging.level, else info)
  --log-format FORMAT   text or json (default: logging.format, else text)

Exit codes: 0 success, 1 invalid workflow or failure, 2 bad command line.
Configuration reference: docs/configuration.md
`
