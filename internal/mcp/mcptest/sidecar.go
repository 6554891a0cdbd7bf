// Package mcptest lets a contract test binary serve the real sortie-tools MCP sidecar
// (package mcp, as `sortie mcp-server` runs it) over stdio, so that an agent CLI under
// test starts it from .sortie/mcp.json without a sortie binary being built. It serves
// the session's local tools (sortie_status from SORTIE_WORKSPACE); there is no daemon,
// so nothing the agent socket grants is offered.
package mcptest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"sortie/internal/agent/agenttest"
	"sortie/internal/mcp"
)

// Env, set to "1", makes a test binary that calls Main the sidecar.
const Env = "SORTIE_AGENTTEST_SIDECAR"

// Main serves sortie-tools on stdin and stdout, then exits the process, when it was
// started as Server's entry; otherwise it returns at once. Call it before anything
// else of the test binary runs: first in TestMain, or from an init function of a test
// file in a package whose TestMain is not yours.
func Main() {
	if os.Getenv(Env) != "1" {
		return
	}
	os.Exit(serve())
}

func serve() int {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("component", "agenttest-sidecar", "pid", os.Getpid())
	env, err := mcp.ParseEnv(os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "agenttest sidecar:", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	sc, err := mcp.Start(ctx, mcp.Options{Env: env, Version: "agenttest", Log: log})
	if err != nil {
		fmt.Fprintln(os.Stderr, "agenttest sidecar:", err)
		return 1
	}
	defer sc.Close()
	if err := sc.Serve(ctx, &sdk.IOTransport{Reader: os.Stdin, Writer: os.Stdout}); err != nil && !errors.Is(err, io.EOF) && ctx.Err() == nil {
		fmt.Fprintln(os.Stderr, "agenttest sidecar:", err)
		return 1
	}
	return 0
}

// Server is the .sortie/mcp.json entry that runs this test binary as the sidecar; the
// binary must call Main first.
func Server(t testing.TB) agenttest.MCPServer {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatalf("agenttest sidecar: locating the test binary: %v", err)
	}
	return agenttest.MCPServer{Command: self, Env: map[string]string{Env: "1"}}
}
