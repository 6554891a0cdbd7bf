package codex

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"sortie/internal/agent"
)

// options is the validated `codex:` block of WORKFLOW.md (docs/agents/codex.md has the
// table). The timeouts are 0 when unset; the adapter applies the defaults.
type options struct {
	Command           string         // Symphony's shell command line, run with bash -lc; "" uses agent.command
	Model             string         // thread/start model
	ModelProvider     string         // thread/start modelProvider and config.toml model_provider
	ModelProviders    map[string]any // config.toml [model_providers.*], passed through
	Effort            string         // turn/start effort
	ApprovalPolicy    any            // thread/start approvalPolicy: a string or {"granular": {...}}
	ThreadSandbox     string         // thread/start sandbox
	TurnSandboxPolicy map[string]any // turn/start sandboxPolicy, passed through
	Config            map[string]any // extra thread config overrides, passed through
	CodexHome         string         // the directory of the issues' CODEX_HOMEs; "" for the default
	UseLogin          bool           // copy the agent user's ~/.codex/auth.json into CODEX_HOME
	ReadTimeout       time.Duration  // per JSON-RPC request
	TurnTimeout       time.Duration  // silence within a turn
	StallTimeout      time.Duration  // accepted: the config package maps it to agent.stall_timeout_ms
}

var (
	approvalPolicies = []string{"untrusted", "on-failure", "on-request", "never"}
	sandboxModes     = []string{"read-only", "workspace-write", "danger-full-access"}
	efforts          = []string{"none", "minimal", "low", "medium", "high", "xhigh"}
	optionKeys       = []string{
		"approval_policy", "codex_home", "command", "config", "effort", "model", "model_provider",
		"model_providers", "read_timeout_ms", "stall_timeout_ms", "thread_sandbox", "turn_sandbox_policy",
		"turn_timeout_ms", "use_login",
	}
)

// DefaultThreadSandbox is the sandbox of a new thread when codex.thread_sandbox is unset.
const DefaultThreadSandbox = "workspace-write"

// DefaultApprovalPolicy is the approval policy when codex.approval_policy is unset: the
// agent never asks, and what the sandbox refuses fails inside the turn.
const DefaultApprovalPolicy = "never"

// parseOptions validates the block. A wrong type or value is an error naming the key;
// an unknown key is returned as a warning, so that a WORKFLOW.md written for Symphony
// or a newer Sortie keeps starting.
func parseOptions(raw map[string]any, workflowDir string) (options, []string, error) {
	var o options
	var problems, warnings []string
	for _, k := range slices.Sorted(maps.Keys(raw)) {
		v := raw[k]
		at := "codex." + k
		var err error
		switch k {
		case "command":
			o.Command, err = agent.OptionString(v)
		case "model":
			o.Model, err = agent.OptionString(v)
		case "model_provider":
			o.ModelProvider, err = agent.OptionString(v)
		case "model_providers":
			o.ModelProviders, err = optionMap(v)
		case "effort":
			o.Effort, err = agent.OptionEnum(v, efforts)
		case "approval_policy":
			o.ApprovalPolicy, err = approvalPolicy(v)
		case "thread_sandbox":
			o.ThreadSandbox, err = agent.OptionEnum(v, sandboxModes)
		case "turn_sandbox_policy":
			o.TurnSandboxPolicy, err = optionMap(v)
			if err == nil && o.TurnSandboxPolicy != nil {
				if _, ok := o.TurnSandboxPolicy["type"].(string); !ok {
					err = fmt.Errorf("must have a type (dangerFullAccess, readOnly, externalSandbox or workspaceWrite)")
				}
			}
		case "config":
			o.Config, err = optionMap(v)
		case "codex_home":
			o.CodexHome, err = agent.OptionString(v)
			if err == nil && o.CodexHome != "" && !filepath.IsAbs(o.CodexHome) && workflowDir != "" {
				o.CodexHome = filepath.Join(workflowDir, o.CodexHome)
			}
		case "use_login":
			o.UseLogin, err = agent.OptionBool(v)
		case "read_timeout_ms":
			o.ReadTimeout, err = optionMillis(v)
		case "turn_timeout_ms":
			o.TurnTimeout, err = optionMillis(v)
		case "stall_timeout_ms":
			// Symphony: 0 or less turns stall detection off, so a negative value is valid.
			o.StallTimeout, err = optionSignedMillis(v)
		default:
			warnings = append(warnings, fmt.Sprintf("%s: unknown key, ignored (known: %s)", at, strings.Join(optionKeys, ", ")))
		}
		if err != nil {
			problems = append(problems, at+": "+err.Error())
		}
	}
	if len(problems) > 0 {
		return options{}, warnings, fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	return o, warnings, nil
}

// approvalPolicy is one of approvalPolicies or a mapping with the single key granular,
// passed through as the protocol's AskForApproval.
func approvalPolicy(v any) (any, error) {
	if m, ok := v.(map[string]any); ok {
		if _, ok := m["granular"].(map[string]any); !ok || len(m) != 1 {
			return nil, fmt.Errorf("a mapping must be {granular: {...}} (got %s)", agent.DescribeValue(v))
		}
		return m, nil
	}
	s, err := agent.OptionEnum(v, approvalPolicies)
	if err != nil || s == "" {
		return nil, err
	}
	return s, nil
}

// optionMap is a mapping with string keys (nil when absent), as the YAML decoder gives
// it; nested mappings with other keys are refused, since they cannot become JSON.
func optionMap(v any) (map[string]any, error) {
	switch m := v.(type) {
	case nil:
		return nil, nil
	case map[string]any:
		if err := jsonable(m); err != nil {
			return nil, err
		}
		return m, nil
	}
	return nil, fmt.Errorf("must be a mapping (got %s)", agent.DescribeValue(v))
}

func jsonable(v any) error {
	switch t := v.(type) {
	case map[any]any:
		return fmt.Errorf("keys must be strings")
	case map[string]any:
		for k, x := range t {
			if err := jsonable(x); err != nil {
				return fmt.Errorf("%s: %w", k, err)
			}
		}
	case []any:
		for i, x := range t {
			if err := jsonable(x); err != nil {
				return fmt.Errorf("[%d]: %w", i, err)
			}
		}
	}
	return nil
}

// optionMillis is a non-negative number of milliseconds; 0 leaves the default.
func optionMillis(v any) (time.Duration, error) {
	n, err := agent.OptionCount(v)
	if err != nil {
		return 0, fmt.Errorf("must be a non-negative number of milliseconds (got %s)", agent.DescribeValue(v))
	}
	return time.Duration(n) * time.Millisecond, nil
}

// optionSignedMillis is a whole number of milliseconds that may be negative.
func optionSignedMillis(v any) (time.Duration, error) {
	switch n := v.(type) {
	case int:
		return time.Duration(n) * time.Millisecond, nil
	case int64:
		return time.Duration(n) * time.Millisecond, nil
	case float64:
		if n == float64(int64(n)) {
			return time.Duration(int64(n)) * time.Millisecond, nil
		}
	}
	n, err := agent.OptionCount(v)
	if err != nil {
		return 0, fmt.Errorf("must be a whole number of milliseconds (got %s)", agent.DescribeValue(v))
	}
	return time.Duration(n) * time.Millisecond, nil
}
