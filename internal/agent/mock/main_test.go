package mock

import (
	"os"
	"strings"
	"testing"
)

// TestMain lets the test binary act as the mock agent's child: the adapter re-executes
// os.Executable(), which here is this binary. It is also the MCP server of the
// mcp_calls tests (serveFakeMCP), started by the child from .sortie/mcp.json.
func TestMain(m *testing.M) {
	if IsChild() {
		os.Exit(ChildMain())
	}
	// Checked second, so that a server started with the child-mode switch still set
	// would play a mock turn and fail the test instead of serving.
	if os.Getenv(fakeMCPServerEnv) == "1" {
		os.Exit(serveFakeMCP())
	}
	// Under -race every child would otherwise sleep a second before exiting
	// (GORACE atexit_sleep_ms defaults to 1000).
	os.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	os.Exit(m.Run())
}
