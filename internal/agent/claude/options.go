package claude

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
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
}

var (
	permissionModes = []string{"acceptEdits", "auto", "bypassPermissions", "default", "dontAsk", "manual", "plan"}
	efforts         = []string{"low", "medium", "high", "xhigh", "max"}
	optionKeys      = []string{
		"allowed_tools", "disallowed_tools", "effort", "fallback_model", "max_budget_usd",
		"max_turns", "mcp_config", "model", "permission_mode", "session_persistence", "system_prompt",
	}
)

// parseOptions validates the block. A wrong type or value is an error naming the key;
// an unknown key is returned as a warning, since the reference system ignores such keys
// and an existing WORKFLOW.md must keep starting.
func parseOptions(raw map[string]any, workflowDir string) (options, []string, error) {
	o := options{SessionPersistence: true}
	var problems, warnings []string
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := raw[k]
		at := "claude-code." + k
		var err error
		switch k {
		case "permission_mode":
			o.PermissionMode, err = asEnum(v, permissionModes)
		case "model":
			o.Model, err = asString(v)
		case "fallback_model":
			o.FallbackModel, err = asString(v)
		case "max_turns":
			o.MaxTurns, err = asCount(v)
		case "max_budget_usd":
			o.MaxBudgetUSD, err = asAmount(v)
		case "effort":
			o.Effort, err = asEnum(v, efforts)
		case "allowed_tools":
			o.AllowedTools, err = asToolList(v)
		case "disallowed_tools":
			o.DisallowedTools, err = asToolList(v)
		case "system_prompt":
			o.SystemPrompt, err = asString(v)
		case "mcp_config":
			o.MCPConfig, err = asString(v)
			if err == nil && o.MCPConfig != "" && !filepath.IsAbs(o.MCPConfig) && workflowDir != "" {
				o.MCPConfig = filepath.Join(workflowDir, o.MCPConfig)
			}
		case "session_persistence":
			if v != nil {
				b, ok := v.(bool)
				if !ok {
					err = fmt.Errorf("must be true or false (got %s)", describe(v))
				}
				o.SessionPersistence = b
			}
		default:
			warnings = append(warnings, fmt.Sprintf("%s: unknown key, ignored (known: %s)", at, strings.Join(optionKeys, ", ")))
		}
		if err != nil {
			problems = append(problems, at+": "+err.Error())
		}
	}
	if o.Model != "" && o.Model == o.FallbackModel {
		problems = append(problems, "claude-code.fallback_model: must differ from claude-code.model (the CLI refuses the same model twice)")
	}
	if len(problems) > 0 {
		return options{}, warnings, fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	return o, warnings, nil
}

func asString(v any) (string, error) {
	switch s := v.(type) {
	case nil:
		return "", nil
	case string:
		return strings.TrimSpace(s), nil
	}
	return "", fmt.Errorf("must be a string (got %s)", describe(v))
}

func asEnum(v any, valid []string) (string, error) {
	s, err := asString(v)
	if err != nil || s == "" {
		return s, err
	}
	if !slices.Contains(valid, s) {
		return "", fmt.Errorf("unknown value %q (valid: %s)", s, strings.Join(valid, ", "))
	}
	return s, nil
}

// asToolList takes a comma-separated string or a YAML list of tool names and returns
// the CLI's comma-separated form.
func asToolList(v any) (string, error) {
	switch t := v.(type) {
	case []any:
		names := make([]string, 0, len(t))
		for i, item := range t {
			s, ok := item.(string)
			if !ok || strings.TrimSpace(s) == "" {
				return "", fmt.Errorf("[%d]: must be a non-empty tool name (got %s)", i, describe(item))
			}
			names = append(names, strings.TrimSpace(s))
		}
		return strings.Join(names, ","), nil
	}
	return asString(v)
}

func asCount(v any) (int64, error) {
	switch n := v.(type) {
	case nil:
		return 0, nil
	case int:
		if n >= 0 {
			return int64(n), nil
		}
	case int64:
		if n >= 0 {
			return n, nil
		}
	case uint64:
		if n <= math.MaxInt32 {
			return int64(n), nil
		}
	case float64:
		if n >= 0 && n == math.Trunc(n) && n <= math.MaxInt32 {
			return int64(n), nil
		}
	case string:
		if i, err := strconv.ParseInt(strings.TrimSpace(n), 10, 64); err == nil && i >= 0 {
			return i, nil
		}
	}
	return 0, fmt.Errorf("must be a non-negative whole number (got %s)", describe(v))
}

func asAmount(v any) (float64, error) {
	var f float64
	switch n := v.(type) {
	case nil:
		return 0, nil
	case int:
		f = float64(n)
	case int64:
		f = float64(n)
	case uint64:
		f = float64(n)
	case float64:
		f = n
	case string:
		var err error
		if f, err = strconv.ParseFloat(strings.TrimSpace(n), 64); err != nil {
			return 0, fmt.Errorf("must be an amount in USD (got %s)", describe(v))
		}
	default:
		return 0, fmt.Errorf("must be an amount in USD (got %s)", describe(v))
	}
	if f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("must be a non-negative amount in USD (got %s)", describe(v))
	}
	return f, nil
}

func describe(v any) string {
	switch t := v.(type) {
	case nil:
		return "nothing"
	case string:
		return strconv.Quote(t)
	case map[string]any:
		return "a mapping"
	case []any:
		return "a list"
	}
	return fmt.Sprintf("%v", v)
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
