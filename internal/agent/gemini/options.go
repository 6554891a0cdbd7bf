package gemini

import (
	"sortie/internal/agent"
	"sortie/internal/option"
)

// Kind is the agent.kind that selects this adapter.
const Kind = "gemini"

// DefaultCommand is the CLI the adapter runs when agent.command is empty.
const DefaultCommand = "gemini"

// The kind is registered with its options: what WORKFLOW.md may say of it.
func init() {
	agent.Register(Kind, agent.Meta{RequiresCommand: true, DefaultCommand: DefaultCommand, Env: EnvNames, Options: optionSpecs}, New)
}

// EnvNames are the daemon's variables the gemini CLI inherits besides every agent's
// (agentenv.Base): its API key and endpoint, and Vertex AI's settings. Not
// GEMINI_CLI_HOME, which the adapter sets to the issue's own directory.
var EnvNames = []string{"GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GEMINI_BASE_URL", "GOOGLE_VERTEX_BASE_URL",
	"GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION", "GOOGLE_APPLICATION_CREDENTIALS"}

// options is the validated `gemini:` block of WORKFLOW.md (docs/agents/gemini.md has
// the table).
type options struct {
	ApprovalMode string // --approval-mode; yolo unless the operator says otherwise
	Model        string // --model
	AuthType     string // security.auth.selectedType of the settings.json
	MCPConfig    string // merged into .sortie/mcp.json by the daemon; read here without one
}

// approvalModes are the CLI's --approval-mode choices (0.61.0).
var approvalModes = []string{"default", "auto_edit", "yolo", "plan"}

// authTypes are the non-interactive authentications the CLI takes from settings.
var authTypes = []string{"gemini-api-key", "vertex-ai"}

// optionSpecs declares the `gemini:` block, registered as the kind's
// agent.Meta.Options. An unknown key is a warning.
var optionSpecs = option.Set{Keys: []option.Option{
	{Key: "approval_mode", Default: "yolo", Doc: "--approval-mode; yolo (every tool call approved, the shell tool offered) unless set",
		Set: option.Field(option.OneOf(approvalModes...), func(o *options) *string { return &o.ApprovalMode })},
	{Key: "model", Doc: "--model; unset: the CLI's default (auto routing)",
		Set: option.Field(option.String, func(o *options) *string { return &o.Model })},
	{Key: "auth_type", Default: "gemini-api-key", Doc: "security.auth.selectedType: gemini-api-key (GEMINI_API_KEY) or vertex-ai",
		Set: option.Field(option.OneOf(authTypes...), func(o *options) *string { return &o.AuthType })},
	{Key: "mcp_config", Path: true, Doc: "MCP servers, relative to WORKFLOW.md's directory; the daemon merges them into .sortie/mcp.json",
		Set: option.Field(option.String, func(o *options) *string { return &o.MCPConfig })},
}}

// parseOptions validates the block by optionSpecs: a wrong type or value is an error
// naming the key, an unknown key a warning.
func parseOptions(raw map[string]any, workflowDir string) (options, []string, error) {
	return option.Read[options](optionSpecs, Kind, raw, workflowDir)
}

// args are the CLI arguments of one turn: headless (stdin is not a terminal, and the
// prompt comes on it), streaming JSON, the workspace trusted for this run only
// (--skip-trust, which also keeps the CLI from loading the workspace's own
// .gemini/settings.json), --debug (the only way 0.61.0 reports a failed shell
// command's exit status in stream-json; its logs go to stderr), and the session: a
// new one under our id, or resumed.
func (o options) args(sessionID string, resume bool) []string {
	a := []string{"--output-format", "stream-json", "--skip-trust", "--debug", "--approval-mode", o.ApprovalMode}
	if resume {
		a = append(a, "--resume", sessionID)
	} else {
		a = append(a, "--session-id", sessionID)
	}
	if o.Model != "" {
		a = append(a, "--model", o.Model)
	}
	return a
}
