package prompt

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"sync"
)

// StatusProtocolInstructions is appended to every first-turn prompt so the agent knows
// how to stop the run through `.sortie/status`. The wording is the normative text of
// spec/agent-extensions.md (RuntimeStatusSuffix).
const StatusProtocolInstructions = `If you determine that you cannot make further progress on this task without human
intervention, or if your work is complete and requires human review, signal the
orchestrator by running:

    mkdir -p .sortie && echo "blocked" > .sortie/status

Use "blocked" when you cannot proceed. Use "needs-human-review" when your work is
complete and awaiting review. Do not write this file during normal productive work.`

// DefaultContinuationPrompt is sent on a turn after the first when the template renders
// nothing for it (for example because everything is inside {{ if not .run.is_continuation }}).
const DefaultContinuationPrompt = `Keep going with the same task. Look at where the workspace stands now (changed files, ` +
	`test and lint output) and take the next step towards finishing. Do not redo work that is already done.`

// ToolDoc describes one tool of the sortie-tools MCP server for the first-turn prompt.
type ToolDoc struct {
	Name        string
	Description string
	InputSchema json.RawMessage // JSON Schema of the tool's arguments; nil for none
}

// TurnPrompt returns the prompt to send on turn number turn (1-based), given the
// template rendered for that turn.
//
// On the first turn (turn < 2) it is the rendered text, then an "## Available Sortie
// tools" section when tools is not empty, then StatusProtocolInstructions, separated by
// blank lines. On later turns it is the rendered text alone, or
// DefaultContinuationPrompt when that is blank.
func TurnPrompt(rendered string, turn int, tools []ToolDoc) string {
	if turn >= 2 {
		if strings.TrimSpace(rendered) == "" {
			return DefaultContinuationPrompt
		}
		return rendered
	}
	var parts []string
	if body := strings.TrimRight(rendered, " \t\r\n"); strings.TrimSpace(body) != "" {
		parts = append(parts, body)
	}
	if len(tools) > 0 {
		parts = append(parts, toolsSection(tools))
	}
	parts = append(parts, StatusProtocolInstructions)
	return strings.Join(parts, "\n\n") + "\n"
}

// maxSections bounds the sections remembered: a daemon offers a few sets of tools (the
// gates of its sessions), each the same at every session's first turn.
const maxSections = 16

type section struct {
	tools []ToolDoc // a copy of what the text was made from
	text  string
}

var sections struct {
	mu   sync.Mutex
	list []section
}

// toolsSection is the "## Available Sortie tools" section for tools, made once per set
// of tools and then reused: formatting every schema at every session's first turn
// would cost more than the rest of the prompt.
func toolsSection(tools []ToolDoc) string {
	sections.mu.Lock()
	for _, s := range sections.list {
		if slices.EqualFunc(s.tools, tools, sameDoc) {
			sections.mu.Unlock()
			return s.text
		}
	}
	sections.mu.Unlock()
	text := formatToolsSection(tools)
	copied := make([]ToolDoc, len(tools))
	for i, t := range tools {
		copied[i] = ToolDoc{Name: t.Name, Description: t.Description, InputSchema: slices.Clone(t.InputSchema)}
	}
	sections.mu.Lock()
	if len(sections.list) >= maxSections {
		sections.list = sections.list[1:]
	}
	sections.list = append(sections.list, section{tools: copied, text: text})
	sections.mu.Unlock()
	return text
}

func sameDoc(a, b ToolDoc) bool {
	return a.Name == b.Name && a.Description == b.Description && bytes.Equal(a.InputSchema, b.InputSchema)
}

func formatToolsSection(tools []ToolDoc) string {
	var b strings.Builder
	b.WriteString("## Available Sortie tools\n\n")
	b.WriteString("Your session is connected to the `sortie-tools` MCP server. Call these tools ")
	b.WriteString("through your MCP client by name; do not write tool calls into your replies. ")
	b.WriteString("Each tool answers with JSON, and a failed call answers with an error object ")
	b.WriteString("instead of ending your session, so check the answer before relying on it.")
	for _, t := range tools {
		b.WriteString("\n\n### ")
		b.WriteString(t.Name)
		if d := strings.TrimSpace(t.Description); d != "" {
			b.WriteString("\n\n")
			b.WriteString(d)
		}
		if schema := formatSchema(t.InputSchema); schema != "" {
			b.WriteString("\n\nInput schema:\n\n```json\n")
			b.WriteString(schema)
			b.WriteString("\n```")
		}
	}
	return b.String()
}

// formatSchema indents a JSON schema for reading; invalid JSON is shown as given.
func formatSchema(raw json.RawMessage) string {
	if len(bytes.TrimSpace(raw)) == 0 {
		return ""
	}
	var out bytes.Buffer
	if err := json.Indent(&out, raw, "", "  "); err != nil {
		return strings.TrimSpace(string(raw))
	}
	return out.String()
}
