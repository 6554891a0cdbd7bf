package gemini

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path"

	"sortie/internal/agent"
	"sortie/internal/agent/statedir"
	"sortie/internal/runas"
)

// The issue's GEMINI_CLI_HOME. The CLI loads settings (hooks, MCP servers, tool
// policies), instructions (GEMINI.md), extensions, commands, skills and policies from
// $GEMINI_CLI_HOME/.gemini, ~/.gemini by default, and a confined CLI must be able to
// write there. Shared, one issue's agent could plant code for every other, and for the
// operator's own gemini. So every local run gets the issue's own directory, reset
// before every run by statedir: what survives is the session transcripts
// (.gemini/tmp/<project>/chats/), which --resume reads, and Sortie writes
// settings.json anew.

// homeEnv is the variable that names the CLI's home (0.61.0).
const homeEnv = "GEMINI_CLI_HOME"

// chats are the transcripts a reset keeps: one JSONL file per run of a session,
// session-<time>-<first 8 of its id>.jsonl.
const chats = ".gemini/tmp/*/chats/session-*.jsonl"

// homeDir is the issue's GEMINI_CLI_HOME: statedir.Dir, <cache>/sortie/gemini/<workflow>/<issue>.
func homeDir(env []string, workflowDir, workspace string) string {
	return statedir.Dir(env, Kind, "", workflowDir, workspace)
}

// RemoveIssueState implements agent.IssueStateRemover: the issue's home goes,
// transcripts and all.
func (d *dialect) RemoveIssueState(env []string, workspace string, owner *runas.User) error {
	return statedir.Remove(homeDir(env, d.workflowDir, workspace), owner)
}

// prepareHome resets home for a run (statedir.Prepare): everything but the transcripts
// goes, settings.json is written, and when the run resumes session id, those of its
// transcripts that need it are repaired (repairTranscript); the others are not
// rewritten.
func prepareHome(home string, owner *runas.User, settings []byte, id string, resume bool) error {
	spec := statedir.Spec{
		Keep:  []string{chats},
		Dirs:  []string{".gemini"},
		Files: []statedir.File{{Name: ".gemini/settings.json", Content: func([]byte) []byte { return settings }}},
	}
	if resume {
		for _, name := range transcriptsOf(home, id) {
			spec.Files = append(spec.Files, statedir.File{Name: name, Content: func(old []byte) []byte {
				// Unread (too large, a link, not the agent user's) or nothing to repair:
				// left as it is, never overwritten.
				if fixed := repairTranscript(old, id); old != nil && !bytes.Equal(fixed, old) {
					return fixed
				}
				return nil
			}})
		}
	}
	return statedir.Prepare(home, owner, spec)
}

// transcriptsOf are the names, below home, of the files that may hold session id's
// transcript. They are names only: statedir reads and writes them without following
// a link.
func transcriptsOf(home, id string) []string {
	if len(id) < 8 {
		return nil
	}
	root, err := os.OpenRoot(home)
	if err != nil {
		return nil
	}
	defer root.Close()
	names, _ := fs.Glob(root.FS(), path.Join(path.Dir(chats), "session-*-"+id[:8]+".jsonl"))
	return names
}

// settings is the settings.json of every run: the authentication headless mode
// needs (without it, a base URL makes the CLI choose one it refuses, exit 41), no
// usage statistics (the CLI then reaches nothing but the model API), no update checks,
// the API keys redacted from the environment of the shell tool and of MCP servers,
// and the MCP servers, each trusted (the CLI offers an untrusted server's tools only
// with a confirmation no headless run can give).
func (o options) settings(servers []agent.MCPServer) ([]byte, error) {
	mcp := map[string]mcpEntry{}
	for _, s := range servers {
		if err := s.NeedsCommandOrURL(); err != nil {
			return nil, err
		}
		e := mcpEntry{Command: s.Command, Args: s.Args, Env: s.Env, Cwd: s.Cwd, Headers: s.Headers, Trust: true}
		switch {
		case s.Command != "":
		case s.Type == "sse":
			e.URL = s.URL
		default:
			e.HTTPURL = s.URL
		}
		mcp[s.Name] = e
	}
	doc := map[string]any{
		"security": map[string]any{
			"auth": map[string]any{"selectedType": o.AuthType},
			"environmentVariableRedaction": map[string]any{"enabled": true,
				"blocked": []string{"GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_APPLICATION_CREDENTIALS"}},
		},
		"privacy": map[string]any{"usageStatisticsEnabled": false},
		"general": map[string]any{"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
	}
	if len(mcp) > 0 {
		doc["mcpServers"] = mcp
	}
	return json.MarshalIndent(doc, "", "  ")
}

// mcpEntry is a server of settings.json's mcpServers: stdio (command), SSE (url) or
// streamable HTTP (httpUrl).
type mcpEntry struct {
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Cwd     string            `json:"cwd,omitempty"`
	URL     string            `json:"url,omitempty"`
	HTTPURL string            `json:"httpUrl,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	Trust   bool              `json:"trust"`
}
