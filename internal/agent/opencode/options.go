package opencode

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"sortie/internal/agent"
	"sortie/internal/option"
)

// Kind is the agent.kind that selects this adapter, and the name of its block in
// WORKFLOW.md.
const Kind = "opencode"

// DefaultCommand is the CLI the adapter runs when agent.command is empty.
const DefaultCommand = "opencode"

// The kind is registered with its options: what WORKFLOW.md may say of it.
func init() {
	agent.Register(Kind, agent.Meta{RequiresCommand: true, DefaultCommand: DefaultCommand, Env: EnvNames, Options: optionSpecs}, New)
}

// options is the validated `opencode:` block of WORKFLOW.md (docs/agents/opencode.md
// has the table).
type options struct {
	Model   string // --model provider/model
	Agent   string // --agent
	Variant string // --variant
	// Permission is OpenCode's `permission` configuration (a string such as "allow",
	// or a mapping by tool), nil when the block has none.
	Permission any
	// Config is inline OpenCode configuration merged under the adapter's own (mcp, and
	// permission when set); nil for none.
	Config map[string]any
	// ConfigFile is an OpenCode configuration file (JSON or JSONC) the CLI loads as
	// OPENCODE_CONFIG, absolute; over SSH, a path on the SSH host.
	ConfigFile string
	// configFilePermission: the file sets `permission` (read when the file is local);
	// fileLevel is its value when that is one action for everything ("allow", …).
	configFilePermission bool
	fileLevel            string
	// Subagents lets the agent start OpenCode subagents (the task tool), whose model
	// requests the CLI's output does not show, so budgets do not count them. false
	// (the default) denies the tool.
	Subagents bool
	// UseLogin copies the agent user's `opencode auth login` credentials (auth.json)
	// into each issue's data directory, where the agent can read them. Off by default.
	UseLogin bool
	// MCPConfig is the operator's claude-style {"mcpServers":{...}} file, absolute.
	// The daemon merges it into .sortie/mcp.json; the adapter reads it only when a
	// session has no generated file.
	MCPConfig string
	// StateDir holds OpenCode's isolated configuration, data and state; "" for the
	// default under the user's cache directory (statedir.Dir).
	StateDir string
}

// permissionActions are the values OpenCode takes for a permission.
var permissionActions = []string{"allow", "ask", "deny"}

// maxConfigFile bounds the operator's OpenCode configuration file.
const maxConfigFile = 1 << 20

// optionSpecs declares the `opencode:` block, registered as the kind's
// agent.Meta.Options. An unknown key is a warning, so that an existing WORKFLOW.md keeps
// starting.
var optionSpecs = option.Set{Keys: []option.Option{
	{Key: "model", Doc: "--model provider/model",
		Set: option.Field(asModel, func(o *options) *string { return &o.Model })},
	{Key: "agent", Doc: "--agent",
		Set: option.Field(option.Word, func(o *options) *string { return &o.Agent })},
	{Key: "variant", Doc: "--variant",
		Set: option.Field(option.Word, func(o *options) *string { return &o.Variant })},
	{Key: "permission", Doc: "OpenCode's permission: allow, ask, deny or a mapping by tool; set, turns run without --auto",
		Set: option.Field(asPermission, func(o *options) *any { return &o.Permission })},
	{Key: "config", Doc: "inline OpenCode configuration, merged under the adapter's own",
		Set: option.Field(asInlineConfig, func(o *options) *map[string]any { return &o.Config })},
	{Key: "config_file", Path: true, Doc: "an OpenCode configuration file (JSON or JSONC), OPENCODE_CONFIG, relative to WORKFLOW.md's directory",
		Set: option.Field(option.String, func(o *options) *string { return &o.ConfigFile })},
	{Key: "mcp_config", Path: true, Doc: "the operator's MCP servers, relative to WORKFLOW.md's directory; the daemon merges them into .sortie/mcp.json",
		Set: option.Field(option.String, func(o *options) *string { return &o.MCPConfig })},
	{Key: "use_login", Doc: "copy the agent user's `opencode auth login` credentials (auth.json) into each issue's data directory, where the agent can read them",
		Set: option.Field(option.Bool, func(o *options) *bool { return &o.UseLogin })},
	{Key: "subagents", Doc: "let the agent start OpenCode subagents (the task tool), whose usage budgets do not count",
		Set: option.Field(option.Bool, func(o *options) *bool { return &o.Subagents })},
	{Key: "state_dir", Path: true, Doc: "OpenCode's isolated configuration, data and state, relative to WORKFLOW.md's directory",
		Set: option.Field(option.String, func(o *options) *string { return &o.StateDir })},
}}

// parseOptions validates the block by optionSpecs: a wrong type or value is an error
// naming the key, an unknown key a warning. A local config_file is read here.
func parseOptions(raw map[string]any, workflowDir string) (options, []string, error) {
	o, warnings, err := option.Read[options](optionSpecs, Kind, raw, workflowDir)
	if err != nil {
		return o, warnings, err
	}
	if o.ConfigFile != "" {
		perm, err := readConfigFile(o.ConfigFile)
		switch {
		case err == nil:
			o.configFilePermission = perm != nil
			o.fileLevel, _ = perm.(string)
		case os.IsNotExist(err):
			// Perhaps a path on the SSH hosts: the CLI reads it there.
			warnings = append(warnings, fmt.Sprintf("%s.config_file: %s does not exist here; OpenCode on an SSH host reads it there, a local run fails", Kind, o.ConfigFile))
		default:
			return options{}, warnings, fmt.Errorf("%s.config_file: %v", Kind, err)
		}
	}
	return o, warnings, nil
}

// autoApprove reports whether turns run with --auto: only when the operator configured
// no permission at all, since --auto approves every request a configuration asks about.
func (o options) autoApprove() bool {
	if o.Permission != nil || o.configFilePermission {
		return false
	}
	_, inline := o.Config["permission"]
	return !inline
}

// modelName is the model events name: opencode.model, else the inline configuration's
// `model`; "" when neither says (the CLI's output does not name it).
func (o options) modelName() string {
	if o.Model != "" {
		return o.Model
	}
	m, _ := o.Config["model"].(string)
	return m
}

// validModel: provider/model, both parts non-empty.
func validModel(s string) bool {
	p, m, ok := strings.Cut(s, "/")
	return ok && p != "" && m != "" && !strings.ContainsAny(s, " \t\n")
}

// asModel is a flag's word of the form provider/model.
func asModel(v any) (string, error) {
	s, err := option.Word(v)
	if err == nil && s != "" && !validModel(s) {
		return "", fmt.Errorf("must be provider/model, as in anthropic/claude-sonnet-4-5 (got %q)", s)
	}
	return s, err
}

// asPermission is OpenCode's permission setting: one action for everything, or a
// mapping (by tool, and by pattern within a tool).
func asPermission(v any) (any, error) {
	switch p := v.(type) {
	case nil:
		return nil, nil
	case string:
		s, err := option.Enum(p, permissionActions)
		if err != nil || s == "" {
			return nil, err
		}
		return s, nil
	case map[string]any, map[any]any:
		m, err := jsonValue(p, "")
		if err != nil {
			return nil, err
		}
		return m, nil
	}
	return nil, fmt.Errorf("must be allow, ask, deny or a mapping by tool (got %s)", option.Describe(v))
}

// asConfig is inline OpenCode configuration: a mapping.
func asConfig(v any) (map[string]any, error) {
	switch v.(type) {
	case nil:
		return nil, nil
	case map[string]any, map[any]any:
		m, err := jsonValue(v, "")
		if err != nil {
			return nil, err
		}
		return m.(map[string]any), nil
	}
	return nil, fmt.Errorf("must be a mapping of OpenCode configuration (got %s)", option.Describe(v))
}

// asInlineConfig is asConfig without Sortie's reserved MCP server name.
func asInlineConfig(v any) (map[string]any, error) {
	m, err := asConfig(v)
	if err == nil {
		if _, ok := mcpOf(m)[agent.ToolsServer]; ok {
			return nil, fmt.Errorf("mcp.%s: the server name is reserved for Sortie's own tools; rename it", agent.ToolsServer)
		}
	}
	return m, err
}

// jsonValue converts a value the YAML decoder made into one encoding/json can write:
// mappings with string keys, lists, scalars. at is the path for an error.
func jsonValue(v any, at string) (any, error) {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			c, err := jsonValue(x, join(at, k))
			if err != nil {
				return nil, err
			}
			out[k] = c
		}
		return out, nil
	case map[any]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			ks, ok := k.(string)
			if !ok {
				return nil, fmt.Errorf("%s: key %v is not a string", strings.TrimPrefix(join(at, "?"), "."), k)
			}
			c, err := jsonValue(x, join(at, ks))
			if err != nil {
				return nil, err
			}
			out[ks] = c
		}
		return out, nil
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			c, err := jsonValue(x, fmt.Sprintf("%s[%d]", at, i))
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	case nil, string, bool, int, int64, uint64, float64:
		return t, nil
	}
	return nil, fmt.Errorf("%s: unsupported value %s", at, option.Describe(v))
}

func join(at, k string) string {
	if at == "" {
		return k
	}
	return at + "." + k
}

// readConfigFile reads the operator's OpenCode configuration file, JSON or JSONC, and
// returns its `permission`, nil when it sets none. A file that is not an object is an
// error; one that names Sortie's reserved MCP server is too.
func readConfigFile(path string) (permission any, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxConfigFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxConfigFile {
		return nil, fmt.Errorf("%s: larger than 1 MiB", path)
	}
	var doc map[string]any
	if err := json.Unmarshal(stripJSONC(b), &doc); err != nil {
		return nil, fmt.Errorf("%s: not an OpenCode configuration (JSON or JSONC): %v", path, err)
	}
	if _, ok := mcpOf(doc)[agent.ToolsServer]; ok {
		return nil, fmt.Errorf("%s: mcp.%s: the server name is reserved for Sortie's own tools; rename it", path, agent.ToolsServer)
	}
	return doc["permission"], nil
}

// stripJSONC turns JSONC into JSON: comments (// and /* */) outside strings become
// spaces, and commas before a closing bracket or brace are dropped.
func stripJSONC(b []byte) []byte {
	out := make([]byte, 0, len(b))
	inString, escaped := false, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inString {
			out = append(out, c)
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch {
		case c == '"':
			inString = true
			out = append(out, c)
		case c == '/' && i+1 < len(b) && b[i+1] == '/':
			for i < len(b) && b[i] != '\n' {
				i++
			}
			out = append(out, '\n')
		case c == '/' && i+1 < len(b) && b[i+1] == '*':
			i += 2
			for i+1 < len(b) && (b[i] != '*' || b[i+1] != '/') {
				i++
			}
			i++ // past the '/'
			out = append(out, ' ')
		case c == ']' || c == '}':
			// Drop a trailing comma: the last non-space byte written.
			j := len(out) - 1
			for j >= 0 && (out[j] == ' ' || out[j] == '\t' || out[j] == '\n' || out[j] == '\r') {
				j--
			}
			if j >= 0 && out[j] == ',' {
				out[j] = ' '
			}
			out = append(out, c)
		default:
			out = append(out, c)
		}
	}
	return out
}

// mcpOf is the `mcp` mapping of an OpenCode configuration, nil when it has none.
func mcpOf(cfg map[string]any) map[string]any {
	m, _ := cfg["mcp"].(map[string]any)
	return m
}
