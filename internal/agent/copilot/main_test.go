package copilot

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"sortie/internal/testkit/clis"
)

// mcpServerEnv makes the test binary a minimal MCP stdio server with one tool, ping,
// named after the value of the variable, so that a contract test can see the real CLI
// load servers from --additional-mcp-config and call their tools.
const mcpServerEnv = "COPILOT_CONTRACT_MCP_SERVER"

// cliCache is the XDG_CACHE_HOME of every CLI run in this package. The npm package
// unpacks its native runtime (about 235 MB) into the cache on its first run, which
// takes seconds; sharing one cache keeps that to once per `go test`, while HOME and
// the CLI's configuration and session state stay private to each test.
var cliCache string

func TestMain(m *testing.M) {
	if code, ok := clis.ConfineMain(); ok {
		os.Exit(code)
	}
	if name := os.Getenv(mcpServerEnv); name != "" {
		serveMCP(name)
		os.Exit(0)
	}
	dir, err := os.MkdirTemp("", "sortie-copilot-cache-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cliCache = dir
	// The fake-CLI tests' issue homes go below it too, not below the machine's /tmp.
	byok = append(byok, "HOME="+dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func serveMCP(name string) {
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
				"serverInfo":      map[string]any{"name": name, "version": "1"},
			}
		case "tools/list":
			reply["result"] = map[string]any{"tools": []any{map[string]any{
				"name": "ping", "description": "Answers pong with the text it was given.",
				"inputSchema": map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}},
			}}}
		case "tools/call":
			reply["result"] = map[string]any{"content": []any{map[string]any{
				"type": "text", "text": fmt.Sprintf("pong from %s: %v", name, req.Params.Arguments["text"]),
			}}}
		default:
			reply["error"] = map[string]any{"code": -32601, "message": "method not found: " + req.Method}
		}
		out.Encode(reply)
	}
}
