package claude

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"sortie/internal/agent"
)

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
	optionKeys      = []string{
		"allowed_tools", "disallowed_tools", "effort", "fallback_model", "max_budget_usd",
		"max_turns", "mcp_config", "model", "permission_mode", "session_persistence", "system_prompt", "use_login",
	}
)

// parseOptions validates the block. A wrong type or value is an error naming the key;
// an unknown key is returned as a warning, since the reference system ignores such keys
// and an existing WORKFLOW.md must keep starting.
func parseOptions(raw map[string]any, workflowDir string) (options, []string, error) {
	o := options{SessionPersistence: true}
	var problems, warnings []string
	for _, k := range slices.Sorted(maps.Keys(raw)) {
		v := raw[k]
		at := "claude-code." + k
		var err error
		switch k {
		case "permission_mode":
			o.PermissionMode, err = agent.OptionEnum(v, permissionModes)
		case "model":
			o.Model, err = agent.OptionString(v)
		case "fallback_model":
			o.FallbackModel, err = agent.OptionString(v)
		case "max_turns":
			o.MaxTurns, err = agent.OptionCount(v)
		case "max_budget_usd":
			o.MaxBudgetUSD, err = agent.OptionUSD(v)
		case "effort":
			o.Effort, err = agent.OptionEnum(v, efforts)
		case "allowed_tools":
			o.AllowedTools, err = agent.OptionToolList(v)
		case "disallowed_tools":
			o.DisallowedTools, err = agent.OptionToolList(v)
		case "system_prompt":
			o.SystemPrompt, err = agent.OptionString(v)
		case "mcp_config":
			o.MCPConfig, err = agent.OptionString(v)
			if err == nil && o.MCPConfig != "" && !filepath.IsAbs(o.MCPConfig) && workflowDir != "" {
				o.MCPConfig = filepath.Join(workflowDir, o.MCPConfig)
			}
		case "session_persistence":
			if v != nil { // nothing keeps the default, true
				o.SessionPersistence, err = agent.OptionBool(v)
			}
		case "use_login":
			o.UseLogin, err = agent.OptionBool(v)
		default:
			warnings = append(warnings, fmt.Sprintf("%s: unknown key, ignored (known: %s)", at, strings.Join(optionKeys, ", ")))
		}
		if err != nil {
			problems = append(problems, at+": "+err.Error())
		}
	}
	if o.Model != "" && o.Model == o.FallbackModel {
		// The spec's own example block sets both to one model; the CLI refuses that, so
		// the fallback is dropped rather than the daemon stopped.
		warnings = append(warnings, fmt.Sprintf("claude-code.fallback_model: the same model as claude-code.model (%s), so no fallback model is passed (the CLI refuses the same model twice)", o.Model))
		o.FallbackModel = ""
	}
	if len(problems) > 0 {
		return options{}, warnings, fmt.Errorf("%s", strings.Join(problems, "; "))
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
