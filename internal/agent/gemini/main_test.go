package gemini

import (
	"testing"

	"sortie/internal/mcp/mcptest"
	"sortie/internal/testkit/clis"
)

// The test binary is also the sortie-tools sidecar that the MCP tests write into
// .sortie/mcp.json; this runs before TestMain.
func init() { mcptest.Main() }

func TestMain(m *testing.M) { clis.Main(m, nil) }
