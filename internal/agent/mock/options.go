package mock

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"sortie/internal/option"
)

// outcome is how a scripted turn ends.
type outcome string

// Turn outcomes, the values of a script.
const (
	outcomeSuccess       outcome = "success"        // turn_completed
	outcomeFailure       outcome = "failure"        // result reports failure, exit 0 → turn_failed
	outcomeHang          outcome = "hang"           // session_started, then silence until killed
	outcomeCrash         outcome = "crash"          // exit crash_exit_code without a result → port_exit
	outcomeInputRequired outcome = "input_required" // → turn_input_required
)

var outcomes = []outcome{outcomeCrash, outcomeFailure, outcomeHang, outcomeInputRequired, outcomeSuccess}

// options is the validated `mock:` block: the default profile and the per-issue ones,
// each already merged with the default. It travels to the child as JSON.
type options struct {
	Default profile            `json:"default"`
	Issues  map[string]profile `json:"issues,omitempty"`
}

// profileFor is the profile of the issue with this identifier.
func (o options) profileFor(identifier string) profile {
	if p, ok := o.Issues[identifier]; ok {
		return p
	}
	return o.Default
}

// profile is what every turn of one issue does.
type profile struct {
	Script          []outcome         `json:"script"`
	DelayMS         int64             `json:"delay_ms"`
	EventsPerTurn   int64             `json:"events_per_turn"`
	InputTokens     int64             `json:"input_tokens_per_turn"`
	OutputTokens    int64             `json:"output_tokens_per_turn"`
	CacheReadTokens int64             `json:"cache_read_tokens_per_turn"`
	Model           string            `json:"model"`
	APIDurationMS   int64             `json:"api_duration_ms"`
	ToolCalls       []toolCall        `json:"tool_calls,omitempty"`
	Files           map[string]string `json:"files,omitempty"`
	Status          string            `json:"status,omitempty"`
	MalformedLines  int64             `json:"malformed_lines"`
	HelperProcesses int64             `json:"helper_processes"`
	CrashExitCode   int64             `json:"crash_exit_code"`
	MCPCalls        [][]mcpCall       `json:"mcp_calls,omitempty"`
	Shell           []shellStep       `json:"shell,omitempty"`
}

// shellStep is one shell command the child runs each turn, as an agent's Bash tool
// would, its result recorded in the workspace (shell.go).
type shellStep struct {
	Name string `json:"name"`
	Run  string `json:"run"`
}

// toolCall is one tool_result event the child emits each turn.
type toolCall struct {
	Name       string `json:"name"`
	DurationMS int64  `json:"duration_ms"`
	Error      bool   `json:"error"`
}

// mcpCall is one MCP tool call of an mcp_calls turn group (mcpcalls.go runs it).
type mcpCall struct {
	Server      string          `json:"server"`
	Tool        string          `json:"tool"`
	Arguments   json.RawMessage `json:"arguments,omitempty"` // a JSON object, before substitution
	ExpectError bool            `json:"expect_error,omitempty"`
}

// clone copies p so that an issue's profile shares no slice or map with the default.
func (p profile) clone() profile {
	p.Script = slices.Clone(p.Script)
	p.ToolCalls = slices.Clone(p.ToolCalls)
	p.Shell = slices.Clone(p.Shell)
	if p.MCPCalls != nil {
		groups := make([][]mcpCall, len(p.MCPCalls))
		for i, g := range p.MCPCalls {
			groups[i] = slices.Clone(g)
		}
		p.MCPCalls = groups
	}
	if p.Files != nil {
		files := make(map[string]string, len(p.Files))
		for k, v := range p.Files {
			files[k] = v
		}
		p.Files = files
	}
	return p
}

// Bounds that catch typos (a delay in seconds written as hours) and keep one turn's
// output finite.
const (
	maxDelayMS  = 24 * 60 * 60 * 1000
	maxEvents   = 100_000
	maxTokens   = 1_000_000_000_000
	maxTools    = 1000
	maxHelpers  = 16
	maxMCPArgs  = 1 << 20 // bytes of one call's arguments, as JSON
	counterDir  = ".mock-agent"
	counterFile = counterDir + "/turns"
	statusDir   = ".sortie"
	statusFile  = statusDir + "/status"
)

// profileSpecs declares the keys of a profile: the `mock:` block's own, and those of
// each per-issue block. A wrong value is refused, and so is an unknown key.
var profileSpecs = option.Set{Strict: true, Keys: append([]option.Option{
	{Key: "script", Default: []any{string(outcomeSuccess)}, Doc: "how successive turns end",
		Set: option.FieldAt(asScript, func(p *profile) *[]outcome { return &p.Script })},
	{Key: "delay_ms", Default: 0, Doc: "the duration of one turn, spread over its events",
		Set: option.FieldAt(intIn(0, maxDelayMS), func(p *profile) *int64 { return &p.DelayMS })},
	{Key: "events_per_turn", Default: 3, Doc: "notification events per turn",
		Set: option.FieldAt(intIn(0, maxEvents), func(p *profile) *int64 { return &p.EventsPerTurn })},
	{Key: "tool_calls", Default: []any{}, Doc: "one tool_result event per {name, duration_ms, error}, every turn",
		Set: option.FieldAt(asToolCalls, func(p *profile) *[]toolCall { return &p.ToolCalls })},
	{Key: "input_tokens_per_turn", Default: 100, Doc: "input tokens one turn reports",
		Set: option.FieldAt(intIn(0, maxTokens), func(p *profile) *int64 { return &p.InputTokens })},
	{Key: "output_tokens_per_turn", Default: 50, Doc: "output tokens one turn reports",
		Set: option.FieldAt(intIn(0, maxTokens), func(p *profile) *int64 { return &p.OutputTokens })},
	{Key: "cache_read_tokens_per_turn", Default: 0, Doc: "cache-read tokens one turn reports",
		Set: option.FieldAt(intIn(0, maxTokens), func(p *profile) *int64 { return &p.CacheReadTokens })},
	{Key: "model", Default: "mock-model", Doc: "the model events name",
		Set: option.FieldAt(asModel, func(p *profile) *string { return &p.Model })},
	{Key: "api_duration_ms", Default: 0, Doc: "APIDurationMS of each token_usage event",
		Set: option.FieldAt(intIn(0, maxDelayMS), func(p *profile) *int64 { return &p.APIDurationMS })},
	{Key: "files", Default: map[string]any{}, Doc: "files written into the workspace every turn, by relative path",
		Set: option.FieldAt(asFiles, func(p *profile) *map[string]string { return &p.Files })},
	{Key: "status", Default: "", Doc: "written to .sortie/status every turn",
		Set: option.FieldAt(asStatus, func(p *profile) *string { return &p.Status })},
	{Key: "malformed_lines", Default: 0, Doc: "non-JSON lines written per turn",
		Set: option.FieldAt(intIn(0, maxEvents), func(p *profile) *int64 { return &p.MalformedLines })},
	{Key: "helper_processes", Default: 0, Doc: "long-lived processes the child leaves in its group every turn",
		Set: option.FieldAt(intIn(0, maxHelpers), func(p *profile) *int64 { return &p.HelperProcesses })},
	{Key: "crash_exit_code", Default: 1, Doc: "the exit status of the crash outcome",
		Set: option.FieldAt(intIn(1, 255), func(p *profile) *int64 { return &p.CrashExitCode })},
	{Key: "mcp_calls", Default: []any{}, Doc: "MCP tool calls through .sortie/mcp.json, one group per turn",
		Set: option.FieldAt(asMCPCalls, func(p *profile) *[][]mcpCall { return &p.MCPCalls })},
	{Key: "shell", Default: []any{}, Doc: "shell commands each turn runs in the workspace, as an agent's Bash tool would",
		Set: option.FieldAt(asShell, func(p *profile) *[]shellStep { return &p.Shell })},
},
	// Keys of the in-process mock of the system we measure against, with what to write
	// instead.
	retired("turn_outcomes", "use script (success, failure, hang, crash, input_required)"),
	retired("turn_delay_ms", "use delay_ms"),
	retired("model_name", "use model"),
	retired("session_id", "the session id is generated, or taken from the resumed session"),
	retired("agent_pid", "the pid is the real child's"),
	retired("start_error", "point agent.command at a missing program for agent_not_found"),
	retired("stop_error", "StopSession always succeeds"),
)}

// optionSpecs declares the `mock:` block, registered as the kind's agent.Meta.Options:
// a profile's keys, and two that only the top level takes.
var optionSpecs = option.Set{Strict: true, Keys: append(slices.Clone(profileSpecs.Keys),
	option.Option{Key: "issues", Doc: "per-issue blocks by issue identifier, each a profile over the default"},
	// The daemon's, as for every adapter: it merges that file into .sortie/mcp.json. The
	// mock reads the merged file only for mcp_calls.
	option.Option{Key: "mcp_config", Doc: "MCP servers the daemon merges into .sortie/mcp.json, for mcp_calls"},
)}

func retired(key, hint string) option.Option {
	return option.Option{Key: key, Retired: "not supported by this mock agent; " + hint + " (see docs/agents/mock.md)"}
}

// parseOptions validates the `mock:` block (nil means every default). Errors name the
// key path, e.g. `mock.issues.DEMO-3.script[1]: unknown outcome "sucess" (valid: ...)`.
func parseOptions(raw map[string]any) (options, error) {
	var o options
	profileSpecs.Defaults(&o.Default)
	top := make(map[string]any, len(raw))
	for k, v := range raw {
		if k != "issues" && k != "mcp_config" {
			top[k] = v
		}
	}
	if err := o.Default.apply("mock", top); err != nil {
		return options{}, err
	}
	rawIssues, ok := raw["issues"]
	if !ok || rawIssues == nil {
		return o, nil
	}
	issues, err := asMap("mock.issues", rawIssues)
	if err != nil {
		return options{}, err
	}
	o.Issues = make(map[string]profile, len(issues))
	for _, id := range sortedKeys(issues) {
		path := "mock.issues." + id
		if strings.TrimSpace(id) == "" {
			return options{}, fmt.Errorf("mock.issues: an issue identifier is empty")
		}
		block, err := asMap(path, issues[id])
		if err != nil {
			return options{}, err
		}
		if _, nested := block["issues"]; nested {
			return options{}, fmt.Errorf("%s.issues: per-issue blocks cannot contain issues", path)
		}
		p := o.Default.clone()
		if err := p.apply(path, block); err != nil {
			return options{}, err
		}
		o.Issues[id] = p
	}
	return o, nil
}

// apply sets the profile fields named in m; keys it does not set keep their value.
func (p *profile) apply(path string, m map[string]any) error {
	_, err := profileSpecs.Parse(path, m, p)
	return firstProblem(err)
}

// firstProblem is the first, in key order, of what an option.Set refused: the mock
// reports one problem at a time.
func firstProblem(err error) error {
	var oe *option.Error
	if errors.As(err, &oe) {
		return errors.New(oe.Problems[0])
	}
	return err
}

// intIn reads an integer from lo to hi.
func intIn(lo, hi int64) func(path string, v any) (int64, error) {
	return func(path string, v any) (int64, error) { return asInt(path, v, lo, hi) }
}

// asModel is a non-empty model name.
func asModel(path string, v any) (string, error) {
	s, err := asString(path, v)
	if err == nil && strings.TrimSpace(s) == "" {
		return "", fmt.Errorf("%s: must not be empty", path)
	}
	return s, err
}

// asStatus is a single line for .sortie/status.
func asStatus(path string, v any) (string, error) {
	s, err := asString(path, v)
	if err == nil && strings.ContainsAny(s, "\r\n") {
		return "", fmt.Errorf("%s: must be a single line (got %q)", path, s)
	}
	return s, err
}

func asScript(path string, v any) ([]outcome, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%s: must be a list of outcomes (got %s)", path, option.Describe(v))
	}
	if len(list) == 0 {
		return nil, fmt.Errorf("%s: must list at least one outcome", path)
	}
	script := make([]outcome, 0, len(list))
	for i, item := range list {
		s, _ := item.(string)
		if !slices.Contains(outcomes, outcome(s)) {
			return nil, fmt.Errorf("%s[%d]: unknown outcome %s (valid: %s)", path, i, option.Describe(item), joinOutcomes())
		}
		script = append(script, outcome(s))
	}
	return script, nil
}

func joinOutcomes() string {
	names := make([]string, len(outcomes))
	for i, o := range outcomes {
		names[i] = string(o)
	}
	return strings.Join(names, ", ")
}

// toolCallSpecs declares the keys of a tool_calls entry.
var toolCallSpecs = option.Set{Strict: true, Keys: []option.Option{
	{Key: "name", Doc: "the tool's name; required", Set: option.FieldAt(asString, func(c *toolCall) *string { return &c.Name })},
	{Key: "duration_ms", Doc: "added to the turn's duration", Set: option.FieldAt(intIn(0, maxDelayMS), func(c *toolCall) *int64 { return &c.DurationMS })},
	{Key: "error", Doc: "true: the call failed", Set: option.FieldAt(asBool, func(c *toolCall) *bool { return &c.Error })},
}}

func asToolCalls(path string, v any) ([]toolCall, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%s: must be a list of {name, duration_ms, error} (got %s)", path, option.Describe(v))
	}
	if len(list) > maxTools {
		return nil, fmt.Errorf("%s: at most %d tool calls (got %d)", path, maxTools, len(list))
	}
	calls := make([]toolCall, 0, len(list))
	for i, item := range list {
		at := fmt.Sprintf("%s[%d]", path, i)
		m, err := asMap(at, item)
		if err != nil {
			return nil, err
		}
		var c toolCall
		if _, err := toolCallSpecs.Parse(at, m, &c); err != nil {
			return nil, firstProblem(err)
		}
		if strings.TrimSpace(c.Name) == "" {
			return nil, fmt.Errorf("%s.name: required", at)
		}
		calls = append(calls, c)
	}
	return calls, nil
}

// asMCPCalls validates mcp_calls: a list of turn groups, each a list of
// {tool, server, arguments, expect_error}. An empty group is a turn without calls.
func asMCPCalls(path string, v any) ([][]mcpCall, error) {
	groups, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%s: must be a list of turn groups, each a list of {tool, server, arguments, expect_error} (got %s)", path, option.Describe(v))
	}
	if len(groups) > maxTools {
		return nil, fmt.Errorf("%s: at most %d turn groups (got %d)", path, maxTools, len(groups))
	}
	out := make([][]mcpCall, 0, len(groups))
	for gi, g := range groups {
		gat := fmt.Sprintf("%s[%d]", path, gi)
		list, ok := g.([]any)
		if !ok && g != nil {
			return nil, fmt.Errorf("%s: must be a list of {tool, server, arguments, expect_error} (got %s)", gat, option.Describe(g))
		}
		if len(list) > maxTools {
			return nil, fmt.Errorf("%s: at most %d calls (got %d)", gat, maxTools, len(list))
		}
		calls := make([]mcpCall, 0, len(list))
		for ci, item := range list {
			c, err := asMCPCall(fmt.Sprintf("%s[%d]", gat, ci), item)
			if err != nil {
				return nil, err
			}
			calls = append(calls, c)
		}
		out = append(out, calls)
	}
	return out, nil
}

// mcpCallSpecs declares the keys of one call of an mcp_calls group.
var mcpCallSpecs = option.Set{Strict: true, Keys: []option.Option{
	{Key: "tool", Doc: "the tool to call; required", Set: option.FieldAt(asString, func(c *mcpCall) *string { return &c.Tool })},
	{Key: "server", Default: defaultMCPServer, Doc: "the server of .sortie/mcp.json to call it on",
		Set: option.FieldAt(asServer, func(c *mcpCall) *string { return &c.Server })},
	{Key: "arguments", Default: map[string]any{}, Doc: "the call's arguments, a mapping",
		Set: option.FieldAt(asJSONObject, func(c *mcpCall) *json.RawMessage { return &c.Arguments })},
	{Key: "expect_error", Doc: "true: the call must fail", Set: option.FieldAt(asBool, func(c *mcpCall) *bool { return &c.ExpectError })},
}}

// asServer is the non-empty name of an MCP server.
func asServer(path string, v any) (string, error) {
	s, err := asString(path, v)
	if err == nil && strings.TrimSpace(s) == "" {
		return "", fmt.Errorf("%s: must not be empty (omit it for %s)", path, defaultMCPServer)
	}
	return s, err
}

func asMCPCall(at string, v any) (mcpCall, error) {
	m, err := asMap(at, v)
	if err != nil {
		return mcpCall{}, err
	}
	var c mcpCall
	mcpCallSpecs.Defaults(&c)
	if _, err := mcpCallSpecs.Parse(at, m, &c); err != nil {
		return mcpCall{}, firstProblem(err)
	}
	if _, ok := m["tool"]; !ok {
		return mcpCall{}, fmt.Errorf("%s.tool: required", at)
	}
	if strings.TrimSpace(c.Tool) == "" {
		return mcpCall{}, fmt.Errorf("%s.tool: must not be empty", at)
	}
	return c, nil
}

// asJSONObject encodes a mapping from YAML or JSON as a JSON object of at most
// maxMCPArgs bytes. Nested YAML mappings may have non-string keys; they become
// strings, as JSON requires.
func asJSONObject(path string, v any) (json.RawMessage, error) {
	if v == nil {
		return json.RawMessage("{}"), nil
	}
	if _, err := asMap(path, v); err != nil {
		return nil, err
	}
	norm, err := jsonValue(path, v)
	if err != nil {
		return nil, err
	}
	data, err := json.Marshal(norm)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(data) > maxMCPArgs {
		return nil, fmt.Errorf("%s: at most %d bytes as JSON (got %d)", path, maxMCPArgs, len(data))
	}
	return data, nil
}

// jsonValue converts a decoded YAML or JSON value into one encoding/json writes as
// the same JSON, rejecting what JSON cannot hold.
func jsonValue(path string, v any) (any, error) {
	switch x := v.(type) {
	case nil, string, bool, int, int64, int32, uint, uint64, float64, json.Number:
		return x, nil
	case []any:
		out := make([]any, len(x))
		for i, item := range x {
			var err error
			if out[i], err = jsonValue(fmt.Sprintf("%s[%d]", path, i), item); err != nil {
				return nil, err
			}
		}
		return out, nil
	case map[string]any, map[any]any:
		m, _ := asMap(path, x)
		out := make(map[string]any, len(m))
		for k, item := range m {
			var err error
			if out[k], err = jsonValue(path+"."+k, item); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("%s: cannot be sent as JSON (got %s); quote it", path, option.Describe(v))
}

// decodeJSONObject decodes a JSON object keeping numbers exact.
func decodeJSONObject(data []byte) (map[string]any, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		return nil, err
	}
	return m, nil
}

func asFiles(path string, v any) (map[string]string, error) {
	m, err := asMap(path, v)
	if err != nil {
		return nil, err
	}
	files := make(map[string]string, len(m))
	for _, name := range sortedKeys(m) {
		at := fmt.Sprintf("%s[%q]", path, name)
		if !filepath.IsLocal(name) || strings.Contains(name, `\`) {
			return nil, fmt.Errorf("%s: must be a relative path inside the workspace, without \"..\"", at)
		}
		if clean := filepath.ToSlash(filepath.Clean(name)); clean == counterDir || strings.HasPrefix(clean, counterDir+"/") {
			return nil, fmt.Errorf("%s: %s/ holds the mock's own script counter", at, counterDir)
		}
		if clean := filepath.ToSlash(filepath.Clean(name)); clean == mcpStateFile || clean == mcpLogFile {
			return nil, fmt.Errorf("%s: %s holds the mock's own mcp_calls state", at, clean)
		}
		content, err := asString(at, m[name])
		if err != nil {
			return nil, err
		}
		files[name] = content
	}
	return files, nil
}

// asMap accepts the map shapes YAML and JSON decoders produce.
func asMap(path string, v any) (map[string]any, error) {
	switch m := v.(type) {
	case map[string]any:
		return m, nil
	case map[any]any:
		out := make(map[string]any, len(m))
		for k, v := range m {
			out[fmt.Sprint(k)] = v
		}
		return out, nil
	}
	return nil, fmt.Errorf("%s: must be a mapping (got %s)", path, option.Describe(v))
}

func asString(path string, v any) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%s: must be a string (got %s)", path, option.Describe(v))
	}
	return s, nil
}

func asBool(path string, v any) (bool, error) {
	b, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("%s: must be true or false (got %s)", path, option.Describe(v))
	}
	return b, nil
}

func asInt(path string, v any, lo, hi int64) (int64, error) {
	var n int64
	ok := true
	switch x := v.(type) {
	case int:
		n = int64(x)
	case int64:
		n = x
	case int32:
		n = int64(x)
	case uint64:
		ok = x <= math.MaxInt64
		n = int64(x)
	case uint:
		ok = uint64(x) <= math.MaxInt64
		n = int64(x)
	case float64:
		ok = x == math.Trunc(x) && x >= math.MinInt64 && x <= math.MaxInt64
		n = int64(x)
	default:
		ok = false
	}
	if !ok || n < lo || n > hi {
		return 0, fmt.Errorf("%s: must be an integer from %d to %d (got %s)", path, lo, hi, option.Describe(v))
	}
	return n, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
