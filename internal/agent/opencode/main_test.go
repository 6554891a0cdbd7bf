package opencode

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"sortie/internal/testkit/clis"
)

// mcpServerEnv makes the test binary a minimal MCP stdio server with one tool, ping,
// so that a contract test can see the real CLI load a server from its configuration
// and call its tool.
const mcpServerEnv = "OPENCODE_CONTRACT_MCP_SERVER"

// sharedCache is the XDG_CACHE_HOME of every opencode run of this test binary.
var sharedCache string

func TestMain(m *testing.M) {
	if code, ok := clis.ConfineMain(); ok {
		os.Exit(code)
	}
	if os.Getenv(mcpServerEnv) == "1" {
		serveMCP()
		os.Exit(0)
	}
	dir, err := os.MkdirTemp("", "sortie-opencode-cache-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	sharedCache = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func serveMCP() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 10<<20)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string         `json:"protocolVersion"`
				Arguments       map[string]any `json:"arguments"`
			} `json:"params"`
		}
		if json.Unmarshal(in.Bytes(), &req) != nil || len(req.ID) == 0 {
			continue // notifications need no answer
		}
		reply := map[string]any{"jsonrpc": "2.0", "id": req.ID}
		switch req.Method {
		case "initialize":
			reply["result"] = map[string]any{
				"protocolVersion": req.Params.ProtocolVersion,
				"capabilities":    map[string]any{"tools": map[string]any{}},
				"serverInfo":      map[string]any{"name": "contract-test", "version": "1"},
			}
		case "tools/list":
			reply["result"] = map[string]any{"tools": []any{map[string]any{
				"name": "ping", "description": "Answers pong with the text it was given.",
				"inputSchema": map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}},
			}}}
		case "tools/call":
			reply["result"] = map[string]any{"content": []any{map[string]any{
				"type": "text", "text": fmt.Sprintf("pong: %v (%s)", req.Params.Arguments["text"], os.Getenv("PING_TAG")),
			}}}
		default:
			reply["error"] = map[string]any{"code": -32601, "message": "method not found: " + req.Method}
		}
		out.Encode(reply)
	}
}
