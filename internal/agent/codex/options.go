package codex

import (
	"fmt"
	"strings"
	"time"

	"sortie/internal/agent"
	"sortie/internal/option"
)

// Kind is the agent.kind that selects this adapter.
const Kind = "codex"

// DefaultCommand is what runs when neither agent.command nor codex.command is set.
const DefaultCommand = "codex app-server"

// The kind is registered with its options: what WORKFLOW.md may say of it.
func init() {
	agent.Register(Kind, agent.Meta{RequiresCommand: true, DefaultCommand: DefaultCommand, Env: EnvNames, EnvFrom: EnvFrom, Options: optionSpecs}, New)
}

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
)

// DefaultThreadSandbox is the sandbox of a new thread when codex.thread_sandbox is unset.
const DefaultThreadSandbox = "workspace-write"

// DefaultApprovalPolicy is the approval policy when codex.approval_policy is unset: the
// agent never asks, and what the sandbox refuses fails inside the turn.
const DefaultApprovalPolicy = "never"

// optionSpecs declares the `codex:` block (Symphony's keys, and the model keys),
// registered as the kind's agent.Meta.Options; config checks a Symphony WORKFLOW.md's
// block by it too. An unknown key is a warning, so that a WORKFLOW.md written for
// Symphony or a newer Sortie keeps starting.
var optionSpecs = option.Set{Keys: []option.Option{
	{Key: "command", Doc: "Symphony's shell command line, run with bash -lc; unset: agent.command",
		Set: option.Field(option.String, func(o *options) *string { return &o.Command })},
	{Key: "model", Doc: "thread/start model",
		Set: option.Field(option.String, func(o *options) *string { return &o.Model })},
	{Key: "model_provider", Doc: "thread/start modelProvider and config.toml model_provider",
		Set: option.Field(option.String, func(o *options) *string { return &o.ModelProvider })},
	{Key: "model_providers", Doc: "config.toml [model_providers.*], passed through",
		Set: option.Field(optionMap, func(o *options) *map[string]any { return &o.ModelProviders })},
	{Key: "effort", Doc: "turn/start effort",
		Set: option.Field(option.OneOf(efforts...), func(o *options) *string { return &o.Effort })},
	{Key: "approval_policy", Doc: "thread/start approvalPolicy: " + strings.Join(approvalPolicies, ", ") + " or {granular: {...}}; unset: " + DefaultApprovalPolicy,
		Set: option.Field(approvalPolicy, func(o *options) *any { return &o.ApprovalPolicy })},
	{Key: "thread_sandbox", Doc: "thread/start sandbox; unset: " + DefaultThreadSandbox,
		Set: option.Field(option.OneOf(sandboxModes...), func(o *options) *string { return &o.ThreadSandbox })},
	{Key: "turn_sandbox_policy", Doc: "turn/start sandboxPolicy, passed through",
		Set: option.Field(turnSandboxPolicy, func(o *options) *map[string]any { return &o.TurnSandboxPolicy })},
	{Key: "config", Doc: "thread config overrides, passed through",
		Set: option.Field(optionMap, func(o *options) *map[string]any { return &o.Config })},
	{Key: "codex_home", Path: true, Doc: "the directory of the issues' CODEX_HOMEs, relative to WORKFLOW.md's directory",
		Set: option.Field(option.String, func(o *options) *string { return &o.CodexHome })},
	{Key: "use_login", Doc: "copy the agent user's ~/.codex/auth.json into CODEX_HOME",
		Set: option.Field(option.Bool, func(o *options) *bool { return &o.UseLogin })},
	{Key: "read_timeout_ms", Doc: "per JSON-RPC request; config also reads it as agent.read_timeout_ms",
		Set: option.Field(optionMillis, func(o *options) *time.Duration { return &o.ReadTimeout })},
	{Key: "turn_timeout_ms", Doc: "silence within a turn",
		Set: option.Field(optionMillis, func(o *options) *time.Duration { return &o.TurnTimeout })},
	// Symphony: 0 or less turns stall detection off, so a negative value is valid.
	{Key: "stall_timeout_ms", Doc: "read by config as agent.stall_timeout_ms; 0 or less turns stall detection off",
		Set: option.Field(optionSignedMillis, func(o *options) *time.Duration { return &o.StallTimeout })},
}}

// parseOptions validates the block by optionSpecs: a wrong type or value is an error
// naming the key, an unknown key a warning.
func parseOptions(raw map[string]any, workflowDir string) (options, []string, error) {
	return option.Read[options](optionSpecs, Kind, raw, workflowDir)
}

// turnSandboxPolicy is a mapping with a type, passed through as the protocol's
// SandboxPolicy.
func turnSandboxPolicy(v any) (map[string]any, error) {
	m, err := optionMap(v)
	if err == nil && m != nil {
		if _, ok := m["type"].(string); !ok {
			return nil, fmt.Errorf("must have a type (dangerFullAccess, readOnly, externalSandbox or workspaceWrite)")
		}
	}
	return m, err
}

// approvalPolicy is one of approvalPolicies or a mapping with the single key granular,
// passed through as the protocol's AskForApproval.
func approvalPolicy(v any) (any, error) {
	if m, ok := v.(map[string]any); ok {
		if _, ok := m["granular"].(map[string]any); !ok || len(m) != 1 {
			return nil, fmt.Errorf("a mapping must be {granular: {...}} (got %s)", option.Describe(v))
		}
		return m, nil
	}
	s, err := option.Enum(v, approvalPolicies)
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
	return nil, fmt.Errorf("must be a mapping (got %s)", option.Describe(v))
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
	n, err := option.Count(v)
	if err != nil {
		return 0, fmt.Errorf("must be a non-negative number of milliseconds (got %s)", option.Describe(v))
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
	n, err := option.Count(v)
	if err != nil {
		return 0, fmt.Errorf("must be a whole number of milliseconds (got %s)", option.Describe(v))
	}
	return time.Duration(n) * time.Millisecond, nil
}
