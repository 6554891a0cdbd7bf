package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Tool names (workflow-tools-api.md).
const (
	ToolDiscover          = "discover"
	ToolListWorkflows     = "list_workflows"
	ToolHealthCheck       = "health_check"
	ToolStartSession      = "start_session"
	ToolGetWorkflow       = "get_workflow"
	ToolNextActivity      = "next_activity"
	ToolGetCheckpoint     = "get_checkpoint"
	ToolRespondCheckpoint = "respond_checkpoint"
	ToolGetSkills         = "get_skills"
	ToolGetSkill          = "get_skill"
	ToolGetResource       = "get_resource"
	ToolGetTrace          = "get_trace"
)

// Spec is what an MCP client sees of a tool.
type Spec struct {
	Name        string
	Description string
	InputSchema json.RawMessage
	ReadOnly    bool

	traced bool
	run    func(c *call, args json.RawMessage) (any, error)
}

// Specs returns the twelve tools in the spec's order.
func Specs() []Spec { return slices.Clone(specs) }

// Names returns the tool names in the spec's order.
func Names() []string {
	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = s.Name
	}
	return names
}

func specByName(name string) (Spec, bool) {
	i := slices.IndexFunc(specs, func(s Spec) bool { return s.Name == name })
	if i < 0 {
		return Spec{}, false
	}
	return specs[i], true
}

const tokenProp = `"session_token":{"type":"string","minLength":1,"description":"The session_token of your most recent workflow tool response (only the newest is accepted)."}`

func schema(required []string, props ...string) json.RawMessage {
	req := ""
	if len(required) > 0 {
		q := make([]string, len(required))
		for i, r := range required {
			q[i] = fmt.Sprintf("%q", r)
		}
		req = `,"required":[` + strings.Join(q, ",") + `]`
	}
	return json.RawMessage(`{"type":"object","properties":{` + strings.Join(props, ",") + `}` + req + `,"additionalProperties":false}`)
}

var specs []Spec

func init() {
	specs = []Spec{
		{Name: ToolDiscover, ReadOnly: true, run: (*call).discover, InputSchema: schema(nil),
			Description: "Entry point of the workflow tools. Returns the server name and version, the available workflows and the bootstrap procedure. No session token needed."},
		{Name: ToolListWorkflows, ReadOnly: true, run: (*call).listWorkflows, InputSchema: schema(nil),
			Description: "Lists every workflow definition (id, title, version, description, tags) so you can match the task to one. No session token needed."},
		{Name: ToolHealthCheck, ReadOnly: true, run: (*call).healthCheck, InputSchema: schema(nil),
			Description: "Server health: status, version, how many workflows are available and the uptime. No session token needed."},
		{Name: ToolStartSession, traced: true, run: (*call).startSession,
			InputSchema: schema([]string{"workflow_id"},
				`"workflow_id":{"type":"string","minLength":1,"description":"The workflow to run (from list_workflows)."}`,
				`"session_token":{"type":"string","description":"Resume or inherit an existing session: its newest token. Its workflow must equal workflow_id."}`,
				`"agent_id":{"type":"string","description":"Your agent identity, stamped into the token's aid field."}`),
			Description: "Starts a workflow session (workflow_id only) or inherits one (workflow_id plus the session_token to resume). Returns the session_token every other workflow tool needs; always pass the newest one."},
		{Name: ToolGetWorkflow, traced: true, ReadOnly: true, run: (*call).getWorkflow,
			InputSchema: schema([]string{"session_token"}, tokenProp,
				`"summary":{"type":"boolean","description":"true (default): rules, variables, modes, execution model, initialActivity and activity stubs. false: the full definition."}`),
			Description: "Loads the session's workflow definition: a summary by default (rules, variables, initialActivity, activity list), the full definition with summary=false."},
		{Name: ToolNextActivity, traced: true, run: (*call).nextActivity,
			InputSchema: schema([]string{"session_token", "activity_id"}, tokenProp,
				`"activity_id":{"type":"string","minLength":1,"description":"The activity to enter: initialActivity first, then one of the current activity's transitions."}`,
				`"transition_condition":{"type":"string","description":"The transition condition you took, as text (e.g. tests_pass == false), or \"default\"."}`,
				`"step_manifest":{"type":"array","description":"The steps of the activity you are leaving, in order, each with its output.","items":{"type":"object","properties":{"step_id":{"type":"string"},"output":{"type":"string"}},"required":["step_id","output"],"additionalProperties":false}}`,
				`"activity_manifest":{"type":"array","description":"The activities completed so far (advisory).","items":{"type":"object","properties":{"activity_id":{"type":"string"},"outcome":{"type":"string"},"transition_condition":{"type":"string"}},"required":["activity_id","outcome"],"additionalProperties":false}}`),
			Description: "Enters an activity and returns its complete definition (steps, checkpoints, transitions, rules, skills) plus a trace token. Its required checkpoints become pending: no other activity can be entered until each is resolved with respond_checkpoint."},
		{Name: ToolGetCheckpoint, traced: true, ReadOnly: true, run: (*call).getCheckpoint,
			InputSchema: schema([]string{"session_token", "activity_id", "checkpoint_id"}, tokenProp,
				`"activity_id":{"type":"string","minLength":1,"description":"The activity that defines the checkpoint."}`,
				`"checkpoint_id":{"type":"string","minLength":1,"description":"The checkpoint to read."}`),
			Description: "Loads a checkpoint's full details (message, options with effects, blocking and auto-advance settings) and, under Sortie, whether a human has answered it yet. It does not change the session's activity."},
		{Name: ToolRespondCheckpoint, traced: true, run: (*call).respondCheckpoint,
			InputSchema: schema([]string{"session_token", "checkpoint_id"}, tokenProp,
				`"checkpoint_id":{"type":"string","minLength":1,"description":"A pending checkpoint."}`,
				`"option_id":{"type":"string","minLength":1,"description":"The option the human chose."}`,
				`"auto_advance":{"type":"boolean","const":true,"description":"Take the default option of a non-blocking checkpoint once its autoAdvanceMs has elapsed."}`,
				`"condition_not_met":{"type":"boolean","const":true,"description":"Dismiss a conditional checkpoint whose condition is false."}`),
			Description: "Resolves a pending checkpoint with exactly one of option_id (the human's choice), auto_advance: true (non-blocking checkpoints, after autoAdvanceMs) or condition_not_met: true (conditional checkpoints). Returns the option's effects and the checkpoints still pending."},
		{Name: ToolGetSkills, traced: true, ReadOnly: true, run: (*call).getSkills,
			InputSchema: schema([]string{"session_token"}, tokenProp),
			Description: "Loads the workflow-level skills (behavioural protocols) with lightweight references to their resources."},
		{Name: ToolGetSkill, traced: true, ReadOnly: true, run: (*call).getSkill,
			InputSchema: schema([]string{"session_token", "step_id"}, tokenProp,
				`"step_id":{"type":"string","minLength":1,"description":"A step of the current activity."}`),
			Description: "Loads the skill of a step of the current activity (call next_activity first), with references to its resources; load each with get_resource."},
		{Name: ToolGetResource, traced: true, ReadOnly: true, run: (*call).getResource,
			InputSchema: schema([]string{"session_token", "resource_index"}, tokenProp,
				`"resource_index":{"type":"string","minLength":1,"description":"A resource index: bare (\"05\") in the session's workflow, or prefixed (\"meta/05\") in the named one."}`),
			Description: "Loads a resource's full content by index."},
		{Name: ToolGetTrace, ReadOnly: true, run: (*call).getTrace,
			InputSchema: schema([]string{"session_token"}, tokenProp,
				`"trace_tokens":{"type":"array","items":{"type":"string"},"description":"Trace tokens from next_activity responses to resolve; without them, the session's whole stored trace."}`),
			Description: "Resolves trace tokens into the recorded tool-call events, or returns the session's whole trace."},
	}
}

// decode decodes args strictly into dst: an object (or nothing) with only the
// schema's fields.
func decode(tool string, args json.RawMessage, dst any) error {
	if len(bytes.TrimSpace(args)) == 0 || string(bytes.TrimSpace(args)) == "null" {
		args = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &te) && te.Field != "":
			return fail(KindInvalidInput, "%s: argument %s: want %s", tool, te.Field, te.Type)
		case errors.As(err, &te):
			return fail(KindInvalidInput, "%s: arguments must be a JSON object", tool)
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			spec, _ := specByName(tool)
			return fail(KindInvalidInput, "%s: %s is not an argument of this tool (arguments: %s)", tool,
				strings.TrimPrefix(err.Error(), "json: unknown field "), strings.Join(params(spec), ", "))
		default:
			return fail(KindInvalidInput, "%s: arguments are not valid JSON: %v", tool, err)
		}
	}
	if _, err := dec.Token(); err != io.EOF {
		return fail(KindInvalidInput, "%s: arguments must be one JSON object", tool)
	}
	return nil
}

func params(s Spec) []string {
	var sc struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	_ = json.Unmarshal(s.InputSchema, &sc)
	var names []string
	for n := range sc.Properties {
		names = append(names, n)
	}
	slices.Sort(names)
	if len(names) == 0 {
		return []string{"none"}
	}
	return names
}
