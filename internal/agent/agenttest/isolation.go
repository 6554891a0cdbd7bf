package agenttest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sortie/internal/testkit/fakemodel"
)

// NothingPlanted fails t unless the model requests reqs of a session in workspace ws
// carry none of markers and no hook ran there: what an earlier session's agent planted
// in its CLI's configuration (instructions, memory, a subagent) for later sessions to
// load, and the hook it planted to `touch hook-ran` in the workspace. What a CLI loads
// reaches the model in the system prompt, in text blocks of the messages (system
// reminders) and in the tools' descriptions and schemas; the planting command itself
// is a tool_use block of the earlier session, which does not count. who names the
// session in messages.
func NothingPlanted(t *testing.T, who string, reqs []fakemodel.Request, ws string, markers ...string) {
	t.Helper()
	if len(reqs) == 0 {
		t.Fatalf("%s: no model request", who)
	}
	for _, q := range reqs {
		texts := []string{q.System}
		for _, m := range q.Messages {
			for _, c := range m.Content {
				if c.Type == "text" {
					texts = append(texts, c.Text)
				}
			}
		}
		var body struct {
			Tools []struct {
				Description string          `json:"description"`
				Input       json.RawMessage `json:"input_schema"`
			} `json:"tools"`
		}
		_ = json.Unmarshal(q.Body, &body)
		for _, tool := range body.Tools {
			texts = append(texts, tool.Description, string(tool.Input))
		}
		for _, marker := range markers {
			for _, text := range texts {
				if strings.Contains(text, marker) {
					t.Errorf("%s: the model request carries %s, which an earlier session planted", who, marker)
					break
				}
			}
		}
	}
	if _, err := os.Stat(filepath.Join(ws, "hook-ran")); err == nil {
		t.Errorf("%s: the hook an earlier session planted ran", who)
	}
}
