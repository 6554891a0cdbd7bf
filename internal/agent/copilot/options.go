package copilot

import (
	"strconv"
	"strings"

	"sortie/internal/agent"
	"sortie/internal/option"
)

// Kind is the agent.kind that selects this adapter.
const Kind = "copilot-cli"

// DefaultCommand is the CLI the adapter runs when agent.command is empty.
const DefaultCommand = "copilot"

// The kind is registered with its options: what WORKFLOW.md may say of it.
func init() {
	agent.Register(Kind, agent.Meta{RequiresCommand: true, DefaultCommand: DefaultCommand, Env: EnvNames, Options: optionSpecs}, New)
}

// DefaultMaxAutopilotContinues is --max-autopilot-continues when the block leaves it out
// (the CLI's own default, 5, would stop most real tasks half-way).
const DefaultMaxAutopilotContinues = 50

// options is the validated `copilot-cli:` block of WORKFLOW.md. Every field maps to a
// Copilot CLI flag (docs/agents/copilot-cli.md has the table).
type options struct {
	Model                 string // --model
	MaxAutopilotContinues int64  // --max-autopilot-continues
	Agent                 string // --agent
	AllowedTools          string // --allow-tool=, comma-separated
	DeniedTools           string // --deny-tool=
	AvailableTools        string // --available-tools=
	ExcludedTools         string // --excluded-tools=
	MCPConfig             string // --additional-mcp-config @<path> without a generated file; absolute
	DisableBuiltinMCPs    bool   // --disable-builtin-mcps
	NoCustomInstructions  bool   // --no-custom-instructions
	Experimental          bool   // --experimental
}

// optionSpecs declares the `copilot-cli:` block, registered as the kind's
// agent.Meta.Options. An unknown key is a warning, since the reference system ignores
// such keys and an existing WORKFLOW.md must keep starting.
var optionSpecs = option.Set{Keys: []option.Option{
	{Key: "model", Doc: "--model",
		Set: option.Field(option.Word, func(o *options) *string { return &o.Model })},
	{Key: "max_autopilot_continues", Default: DefaultMaxAutopilotContinues, Doc: "--max-autopilot-continues",
		Set: option.Field(option.Count, func(o *options) *int64 { return &o.MaxAutopilotContinues })},
	{Key: "agent", Doc: "--agent",
		Set: option.Field(option.Word, func(o *options) *string { return &o.Agent })},
	{Key: "allowed_tools", Doc: "--allow-tool=; any tool scoping key replaces --allow-all",
		Set: option.Field(asToolList, func(o *options) *string { return &o.AllowedTools })},
	{Key: "denied_tools", Doc: "--deny-tool=",
		Set: option.Field(asToolList, func(o *options) *string { return &o.DeniedTools })},
	{Key: "available_tools", Doc: "--available-tools=",
		Set: option.Field(asToolList, func(o *options) *string { return &o.AvailableTools })},
	{Key: "excluded_tools", Doc: "--excluded-tools=",
		Set: option.Field(asToolList, func(o *options) *string { return &o.ExcludedTools })},
	{Key: "mcp_config", Path: true, Doc: "--additional-mcp-config @<path>, relative to WORKFLOW.md's directory; the daemon merges it into .sortie/mcp.json",
		Set: option.Field(option.String, func(o *options) *string { return &o.MCPConfig })},
	{Key: "disable_builtin_mcps", Doc: "--disable-builtin-mcps",
		Set: option.Field(option.Bool, func(o *options) *bool { return &o.DisableBuiltinMCPs })},
	{Key: "no_custom_instructions", Doc: "--no-custom-instructions",
		Set: option.Field(option.Bool, func(o *options) *bool { return &o.NoCustomInstructions })},
	{Key: "experimental", Doc: "--experimental",
		Set: option.Field(option.Bool, func(o *options) *bool { return &o.Experimental })},
}}

// parseOptions validates the block by optionSpecs: a wrong type or value is an error
// naming the key, an unknown key a warning.
func parseOptions(raw map[string]any, workflowDir string) (options, []string, error) {
	return option.Read[options](optionSpecs, Kind, raw, workflowDir)
}

// scoped reports whether any tool-scoping key is set, which replaces --allow-all.
func (o options) scoped() bool {
	return o.AllowedTools != "" || o.DeniedTools != "" || o.AvailableTools != "" || o.ExcludedTools != ""
}

// resumeMode is how a turn continues the conversation (spec, "Session resume mechanism").
type resumeMode int

const (
	resumeNone     resumeMode = iota // first turn of a new session: neither flag
	resumeID                         // --resume <id>: the id came from a result event
	resumeContinue                   // --continue: no id was ever captured
)

// turnArgs are the per-turn inputs of args.
type turnArgs struct {
	prompt     string // "" when the prompt goes to standard input instead
	mode       resumeMode
	sessionID  string   // with resumeID
	mcpConfigs []string // each passed as --additional-mcp-config @<path>
	usageFile  string   // --usage-output-file, "" for none
}

// args builds the CLI arguments of one turn.
//
// Forms the pinned CLI (1.0.102) requires, each pinned by a test:
//   - --prompt=<text>, not "-p <text>": the CLI's parser rejects a separate value that
//     starts with '-', and a rendered prompt may well start with a Markdown list item.
//   - --allow-tool=<list> and the other tool flags take a variadic value; the joined
//     form keeps it from swallowing what follows. Lists are comma-separated.
//   - --additional-mcp-config @<path>: without the '@' the value is parsed as JSON.
func (o options) args(t turnArgs) []string {
	var a []string
	if t.prompt != "" {
		a = append(a, "--prompt="+t.prompt)
	}
	a = append(a, "--output-format", "json", "-s", "--autopilot", "--no-ask-user",
		"--max-autopilot-continues", strconv.FormatInt(o.MaxAutopilotContinues, 10))
	if o.scoped() {
		if o.AllowedTools != "" {
			a = append(a, "--allow-tool="+o.AllowedTools)
		}
		if o.DeniedTools != "" {
			a = append(a, "--deny-tool="+o.DeniedTools)
		}
		if o.AvailableTools != "" {
			a = append(a, "--available-tools="+o.AvailableTools)
		}
		if o.ExcludedTools != "" {
			a = append(a, "--excluded-tools="+o.ExcludedTools)
		}
	} else {
		a = append(a, "--allow-all")
	}
	switch t.mode {
	case resumeID:
		a = append(a, "--resume", t.sessionID)
	case resumeContinue:
		a = append(a, "--continue")
	}
	if o.Model != "" {
		a = append(a, "--model", o.Model)
	}
	if o.Agent != "" {
		a = append(a, "--agent", o.Agent)
	}
	if o.DisableBuiltinMCPs {
		a = append(a, "--disable-builtin-mcps")
	}
	if o.NoCustomInstructions {
		a = append(a, "--no-custom-instructions")
	}
	if o.Experimental {
		a = append(a, "--experimental")
	}
	for _, c := range t.mcpConfigs {
		a = append(a, "--additional-mcp-config", "@"+c)
	}
	if t.usageFile != "" {
		a = append(a, "--usage-output-file", t.usageFile)
	}
	return a
}

// asToolList is option.ToolList with a comma-separated string split as well, so
// that tool names and permission patterns (shell, write, shell(git:*), MyMCP(tool))
// reach the CLI without blanks around them or empty names between commas.
func asToolList(v any) (string, error) {
	s, err := option.ToolList(v)
	if _, list := v.([]any); list || err != nil {
		return s, err
	}
	var names []string
	for _, n := range strings.Split(s, ",") {
		if n = strings.TrimSpace(n); n != "" {
			names = append(names, n)
		}
	}
	return strings.Join(names, ","), nil
}
