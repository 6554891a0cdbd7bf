package agent

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseMCPServers_OneParseForEveryCLI(t *testing.T) {
	got, err := ParseMCPServers([]byte(`{"mcpServers":{
		"web":{"type":"http","url":"https://mcp.example/","headers":{"Authorization":"Bearer x"}},
		"sortie-tools":{"type":"stdio","command":"/usr/bin/sortie","args":["mcp-server"],"env":{"SORTIE_RUN_ID":"7"},"cwd":"/w"},
		"odd":{}}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := []MCPServer{
		{Name: "odd"},
		{Name: ToolsServer, Type: "stdio", Command: "/usr/bin/sortie", Args: []string{"mcp-server"}, Env: map[string]string{"SORTIE_RUN_ID": "7"}, Cwd: "/w"},
		{Name: "web", Type: "http", URL: "https://mcp.example/", Headers: map[string]string{"Authorization": "Bearer x"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("servers =\n%+v\nwant\n%+v", got, want)
	}
	if err := got[0].NeedsCommandOrURL(); err == nil || !strings.Contains(err.Error(), `"odd" has neither a command nor a url`) {
		t.Errorf("NeedsCommandOrURL(odd) = %v", err)
	}
	if err := got[1].NeedsCommandOrURL(); err != nil {
		t.Errorf("NeedsCommandOrURL(sortie-tools) = %v", err)
	}
	if _, err := ParseMCPServers([]byte(`{"mcpServers":[`)); err == nil || !strings.Contains(err.Error(), "not a JSON MCP configuration") {
		t.Errorf("broken JSON: %v", err)
	}
}

func TestReadMCPConfig_BoundedAndNamed(t *testing.T) {
	p := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(p, []byte(`{"mcpServers":{"a":{"command":"x"}}}`+strings.Repeat(" ", MaxMCPConfig)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadMCPConfig(p); err == nil || !strings.Contains(err.Error(), "larger than 1 MiB") {
		t.Errorf("oversized file: %v", err)
	}
	if err := os.WriteFile(p, []byte(`nope`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadMCPConfig(p); err == nil || !strings.HasPrefix(err.Error(), p+": ") {
		t.Errorf("error does not name the file: %v", err)
	}
	sp := StartParams{MCPConfigPath: p, MCPServers: []MCPServer{{Name: "given", Command: "c"}}}
	if got, err := sp.Servers(); err != nil || len(got) != 1 || got[0].Name != "given" {
		t.Errorf("Servers with MCPServers = %+v, %v; want them, the file unread", got, err)
	}
}

func FuzzParseMCPServers(f *testing.F) {
	f.Add([]byte(`{"mcpServers":{"a":{"command":"x","args":["1"],"env":{"K":"v"}},"b":{"url":"u"}}}`))
	f.Add([]byte(`{"mcpServers":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		servers, err := ParseMCPServers(data)
		if err != nil {
			return
		}
		for i := 1; i < len(servers); i++ {
			if servers[i-1].Name >= servers[i].Name {
				t.Fatalf("servers not sorted by name: %q before %q", servers[i-1].Name, servers[i].Name)
			}
		}
	})
}
