package codex

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"sortie/internal/testkit/clis"
)

// mcpServerEnv makes the test binary a minimal MCP stdio server, standing in for
// `sortie mcp-server`, so that a contract test can see codex load the server from the
// session's MCP configuration and call its tools: ping answers pong; ask sends the
// client an elicitation first, as a server that needs a human would.
const mcpServerEnv = "CODEX_CONTRACT_MCP_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(mcpServerEnv) == "1" {
		serveMCP()
		os.Exit(0)
	}
	clis.Main(m, nil)
}

func serveMCP() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 10<<20)
	out := json.NewEncoder(os.Stdout)
	var pending json.RawMessage // the id of an ask call waiting for its elicitation's answer
	for in.Scan() {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
			Params struct {
				ProtocolVersion string         `json:"protocolVersion"`
				Name            string         `json:"name"`
				Arguments       map[string]any `json:"arguments"`
			} `json:"params"`
		}
		if json.Unmarshal(in.Bytes(), &msg) != nil || len(msg.ID) == 0 {
			continue // notifications need no answer
		}
		if msg.Method == "" { // the client's answer to our elicitation
			if pending != nil {
				out.Encode(map[string]any{"jsonrpc": "2.0", "id": pending, "result": map[string]any{"content": []any{
					map[string]any{"type": "text", "text": "elicitation answered: " + string(msg.Result)}}}})
				pending = nil
			}
			continue
		}
		reply := map[string]any{"jsonrpc": "2.0", "id": msg.ID}
		switch msg.Method {
		case "initialize":
			reply["result"] = map[string]any{
				"protocolVersion": msg.Params.ProtocolVersion,
				"capabilities":    map[string]any{"tools": map[string]any{}},
				"serverInfo":      map[string]any{"name": "contract-test", "version": "1"},
			}
		case "tools/list":
			schema := map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}}
			reply["result"] = map[string]any{"tools": []any{
				map[string]any{"name": "ping", "description": "Answers pong with the text it was given.", "inputSchema": schema},
				map[string]any{"name": "ask", "description": "Asks the user a question.", "inputSchema": schema},
			}}
		case "tools/call":
			if msg.Params.Name == "ask" {
				pending = msg.ID
				out.Encode(map[string]any{"jsonrpc": "2.0", "id": "elicit-1", "method": "elicitation/create", "params": map[string]any{
					"message":         fmt.Sprintf("Which branch? (%v)", msg.Params.Arguments["text"]),
					"requestedSchema": map[string]any{"type": "object", "properties": map[string]any{"branch": map[string]any{"type": "string"}}},
				}})
				continue
			}
			reply["result"] = map[string]any{"content": []any{map[string]any{
				"type": "text", "text": fmt.Sprintf("pong: %v", msg.Params.Arguments["text"]),
			}}}
		default:
			reply["error"] = map[string]any{"code": -32601, "message": "method not found: " + msg.Method}
		}
		out.Encode(reply)
	}
}
