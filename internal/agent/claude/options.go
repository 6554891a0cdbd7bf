package claude

import (
	"fmt"
	"strconv"

	"sortie/internal/agent"
	"sortie/internal/option"
)

// Kind is the agent.kind that selects this adapter.
const Kind = "claude-code"

// DefaultCommand is the CLI the adapter runs when agent.command is empty.
const DefaultCommand = "claude"

// The kind is registered with its options: what WORKFLOW.md may say of it.
func init() {
	agent.Register(Kind, agent.Meta{RequiresCommand: true, DefaultCommand: DefaultCommand, Env: EnvNames, Options: optionSpecs}, New)
}

// options is the validated `claude-code:` block of WORKFLOW.md. Every field maps to a
// Claude Code CLI flag (docs/agents/claude-code.md has the table).
type options struct {
	PermissionMode     string  // --permission-mode; "" → --dangerously-skip-permissions
	Model              string  // --model
	FallbackModel      string  // --fallback-model
	MaxTurns           int64   // --max-turns; 0 = CLI default
	MaxBudgetUSD       float64 // --max-budget-usd; 0 = none
	Effort             string  // --effort
	AllowedTools       string  // --allowedTools
	DisallowedTools    string  // --disallowedTools
	SystemPrompt       string  // --append-system-prompt
	MCPConfig          string  // --mcp-config, absolute (resolved against WORKFLOW.md's directory)
	SessionPersistence bool    // false → --no-session-persistence
	// UseLogin copies the user's `claude` login (~/.claude/.credentials.json) into each
	// issue's configuration directory, where the agent can read it. Off by default.
	UseLogin bool
}

var (
	permissionModes = []string{"acceptEdits", "auto", "bypassPermissions", "default", "dontAsk", "manual", "plan"}
	efforts         = []string{"low", "medium", "high", "xhigh", "max"}
)

// optionSpecs declares the `claude-code:` block, registered as the kind's
// agent.Meta.Options. An unknown key is a warning, since the reference system ignores
// such keys and an existing WORKFLOW.md must keep starting.
var optionSpecs = option.Set{Keys: []option.Option{
	{Key: "permission_mode", Doc: "--permission-mode; unset: --dangerously-skip-permissions",
		Set: option.Field(option.OneOf(permissionModes...), func(o *options) *string { return &o.PermissionMode })},
	{Key: "model", Doc: "--model",
		Set: option.Field(option.String, func(o *options) *string { return &o.Model })},
	{Key: "fallback_model", Doc: "--fallback-model; dropped, with a warning, when it is the model",
		Set: option.Field(option.String, func(o *options) *string { return &o.FallbackModel })},
	{Key: "max_turns", Doc: "--max-turns; 0: the CLI's default",
		Set: option.Field(option.Count, func(o *options) *int64 { return &o.MaxTurns })},
	{Key: "max_budget_usd", Doc: "--max-budget-usd; 0: none",
		Set: option.Field(option.USD, func(o *options) *float64 { return &o.MaxBudgetUSD })},
	{Key: "effort", Doc: "--effort",
		Set: option.Field(option.OneOf(efforts...), func(o *options) *string { return &o.Effort })},
	{Key: "allowed_tools", Doc: "--allowedTools",
		Set: option.Field(option.ToolList, func(o *options) *string { return &o.AllowedTools })},
	{Key: "disallowed_tools", Doc: "--disallowedTools",
		Set: option.Field(option.ToolList, func(o *options) *string { return &o.DisallowedTools })},
	{Key: "system_prompt", Doc: "--append-system-prompt",
		Set: option.Field(option.String, func(o *options) *string { return &o.SystemPrompt })},
	{Key: "mcp_config", Path: true, Doc: "--mcp-config, relative to WORKFLOW.md's directory; the daemon merges it into .sortie/mcp.json",
		Set: option.Field(option.String, func(o *options) *string { return &o.MCPConfig })},
	{Key: "session_persistence", Default: true, Doc: "false: --no-session-persistence",
		Set: option.Field(option.Bool, func(o *options) *bool { return &o.SessionPersistence })},
	{Key: "use_login", Doc: "copy the user's claude login into each issue's configuration directory",
		Set: option.Field(option.Bool, func(o *options) *bool { return &o.UseLogin })},
}}

// parseOptions validates the block by optionSpecs: a wrong type or value is an error
// naming the key, an unknown key a warning.
func parseOptions(raw map[string]any, workflowDir string) (options, []string, error) {
	o, warnings, err := option.Read[options](optionSpecs, Kind, raw, workflowDir)
	if err != nil {
		return o, warnings, err
	}
	if o.Model != "" && o.Model == o.FallbackModel {
		// The spec's own example block sets both to one model; the CLI refuses that, so
		// the fallback is dropped rather than the daemon stopped.
		warnings = append(warnings, fmt.Sprintf("claude-code.fallback_model: the same model as claude-code.model (%s), so no fallback model is passed (the CLI refuses the same model twice)", o.Model))
		o.FallbackModel = ""
	}
	return o, warnings, nil
}

// args builds the CLI arguments of one turn (the prompt goes to stdin). resume selects
// --resume over --session-id; mcpConfigs are passed with one --mcp-config each.
func (o options) args(sessionID string, resume bool, mcpConfigs []string) []string {
	a := []string{"-p", "--output-format", "stream-json", "--verbose"}
	if resume {
		a = append(a, "--resume", sessionID)
	} else {
		a = append(a, "--session-id", sessionID)
	}
	if o.PermissionMode != "" {
		a = append(a, "--permission-mode", o.PermissionMode)
	} else {
		a = append(a, "--dangerously-skip-permissions")
	}
	if o.Model != "" {
		a = append(a, "--model", o.Model)
	}
	if o.FallbackModel != "" {
		a = append(a, "--fallback-model", o.FallbackModel)
	}
	if o.MaxTurns > 0 {
		a = append(a, "--max-turns", strconv.FormatInt(o.MaxTurns, 10))
	}
	if o.MaxBudgetUSD > 0 {
		a = append(a, "--max-budget-usd", strconv.FormatFloat(o.MaxBudgetUSD, 'f', -1, 64))
	}
	if o.Effort != "" {
		a = append(a, "--effort", o.Effort)
	}
	if o.AllowedTools != "" {
		a = append(a, "--allowedTools", o.AllowedTools)
	}
	if o.DisallowedTools != "" {
		a = append(a, "--disallowedTools", o.DisallowedTools)
	}
	if o.SystemPrompt != "" {
		a = append(a, "--append-system-prompt", o.SystemPrompt)
	}
	for _, c := range mcpConfigs {
		a = append(a, "--mcp-config", c)
	}
	if !o.SessionPersistence {
		a = append(a, "--no-session-persistence")
	}
	return a
}
