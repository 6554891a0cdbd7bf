package workflow

import "encoding/json"

// Workflow is one workflow definition: workflow.{toon,yaml,yml,json} in its
// own directory of the library, plus the activities of its activities/
// directory. Field names follow the upstream schema so that existing
// definitions load unchanged; unknown keys are ignored.
type Workflow struct {
	// ID names the workflow; it must equal the directory name.
	ID string `json:"id"`
	// Version is the workflow's semantic version, MAJOR.MINOR.PATCH.
	Version     string   `json:"version"`
	Title       string   `json:"title"`
	Description string   `json:"description,omitempty"`
	Author      string   `json:"author,omitempty"`
	Tags        []string `json:"tags,omitempty"`
	// Rules are prose instructions to the agent; none is enforced.
	Rules     []string   `json:"rules,omitempty"`
	Variables []Variable `json:"variables,omitempty"`
	Modes     []Mode     `json:"modes,omitempty"`
	// ArtifactLocations maps a key to a path or {path, description,
	// gitignored}; paths may interpolate {variable}.
	ArtifactLocations map[string]any `json:"artifactLocations,omitempty"`
	// Skills are the workflow-level skill ids, resolved in this workflow's
	// skills/ and then in meta/skills/.
	Skills []string `json:"skills,omitempty"`
	// InitialActivity is the activity a session starts with; when empty,
	// the activity with the lowest file index.
	InitialActivity string          `json:"initialActivity,omitempty"`
	ExecutionModel  *ExecutionModel `json:"executionModel,omitempty"`
	// ActivitiesDir overrides the activities/ directory, relative to the
	// workflow directory; it may not leave it.
	ActivitiesDir string `json:"activitiesDir,omitempty"`
	// Activities are the inline activities of the workflow file followed by
	// those of the activities directory, in file-index order.
	Activities []*Activity `json:"activities,omitempty"`

	file       string
	lib        *Library
	activities map[string]*Activity
	skills     map[string]*Skill
	resources  map[string]*Resource
}

// ExecutionModel describes the roles taking part in a workflow. It is
// descriptive: nothing enforces the roles.
type ExecutionModel struct {
	Roles []Role `json:"roles"`
}

// Role is one role of an ExecutionModel.
type Role struct {
	ID          string `json:"id"`
	Description string `json:"description"`
}

// Variable declares a workflow variable. Values live in the session, not in
// the definition.
type Variable struct {
	Name string `json:"name"`
	// Type is one of string, number, boolean, array, object.
	Type         string `json:"type"`
	Description  string `json:"description,omitempty"`
	DefaultValue any    `json:"defaultValue,omitempty"`
	Required     bool   `json:"required,omitempty"`
}

// Mode is a named variant of a workflow, on while ActivationVariable is true.
type Mode struct {
	ID                 string         `json:"id"`
	Name               string         `json:"name"`
	Description        string         `json:"description,omitempty"`
	ActivationVariable string         `json:"activationVariable"`
	Recognition        []string       `json:"recognition,omitempty"`
	SkipActivities     []string       `json:"skipActivities,omitempty"`
	Defaults           map[string]any `json:"defaults,omitempty"`
	Resource           string         `json:"resource,omitempty"`
}

// Activity is one stage of a workflow: NN-{id}.{ext} in the activities
// directory, or an inline entry of the workflow file.
type Activity struct {
	ID          string   `json:"id"`
	Version     string   `json:"version"`
	Name        string   `json:"name"`
	Description string   `json:"description,omitempty"`
	Problem     string   `json:"problem,omitempty"`
	Recognition []string `json:"recognition,omitempty"`
	// Skills are the activity's primary and supporting skills.
	Skills      *ActivitySkills `json:"skills,omitempty"`
	Steps       []Step          `json:"steps,omitempty"`
	Checkpoints []Checkpoint    `json:"checkpoints,omitempty"`
	Decisions   []Decision      `json:"decisions,omitempty"`
	Loops       []Loop          `json:"loops,omitempty"`
	Transitions []Transition    `json:"transitions,omitempty"`
	Triggers    []Trigger       `json:"triggers,omitempty"`
	// EntryActions and ExitActions run on entering and leaving the activity.
	EntryActions      []Action `json:"entryActions,omitempty"`
	ExitActions       []Action `json:"exitActions,omitempty"`
	Outcome           []string `json:"outcome,omitempty"`
	ContextToPreserve []string `json:"context_to_preserve,omitempty"`
	Required          bool     `json:"required"`
	// FreeEntry (free_entry) lets a session enter the activity from any activity, not
	// only from those with a transition to it: next_activity refuses every other
	// entry that is not a transition. Checkpoints are not skipped by it: a hand-off
	// still waits for the blocking checkpoints on every path to the end.
	FreeEntry     bool       `json:"free_entry,omitempty"`
	EstimatedTime string     `json:"estimatedTime,omitempty"`
	Rules         []string   `json:"rules,omitempty"`
	Artifacts     []Artifact `json:"artifacts,omitempty"`
	// ArtifactPrefix is set by the loader from the file index NN (as
	// written, e.g. "02"); it is empty for inline activities.
	ArtifactPrefix string `json:"artifactPrefix,omitempty"`

	file string
	// field is the field path of the activity within its file: "" for an
	// activity file, "activities[i]" for an inline one.
	field string
}

// UnmarshalJSON applies the schema default required=true.
func (a *Activity) UnmarshalJSON(b []byte) error {
	type plain Activity
	p := plain{Required: true}
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*a = Activity(p)
	return nil
}

// ActivitySkills names an activity's skills.
type ActivitySkills struct {
	Primary    string   `json:"primary,omitempty"`
	Supporting []string `json:"supporting,omitempty"`
}

// Step is one step of an activity or loop. All steps of an activity are
// required in a step manifest; Required and Condition only inform the agent.
type Step struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Skill is the id of the skill get_skill(step_id) delivers.
	Skill     string     `json:"skill,omitempty"`
	Required  bool       `json:"required"`
	Condition *Condition `json:"condition,omitempty"`
	Actions   []Action   `json:"actions,omitempty"`
}

// UnmarshalJSON applies the schema default required=true.
func (s *Step) UnmarshalJSON(b []byte) error {
	type plain Step
	p := plain{Required: true}
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*s = Step(p)
	return nil
}

// Action is an entry/exit or step action: log, validate, set, emit or
// message.
type Action struct {
	Action  string `json:"action"`
	Target  string `json:"target,omitempty"`
	Message string `json:"message,omitempty"`
	Value   any    `json:"value,omitempty"`
}

// Checkpoint is a point where the agent must stop for a decision. A
// required checkpoint gates the transition out of its activity until it is
// resolved by an option, by auto-advance to DefaultOption after
// AutoAdvanceMs (non-blocking checkpoints only), or, when it has a
// Condition, by dismissal.
type Checkpoint struct {
	ID        string     `json:"id"`
	Name      string     `json:"name"`
	Message   string     `json:"message"`
	Condition *Condition `json:"condition,omitempty"`
	Options   []Option   `json:"options"`
	// Required defaults to true.
	Required bool `json:"required"`
	// Blocking defaults to true: only a human answer resolves it.
	Blocking bool `json:"blocking"`
	// DefaultOption is the option id auto-advance chooses.
	DefaultOption string `json:"defaultOption,omitempty"`
	// AutoAdvanceMs is the delay, in milliseconds from the checkpoint's
	// issuance, after which a non-blocking checkpoint may auto-advance.
	AutoAdvanceMs int64 `json:"autoAdvanceMs,omitempty"`
}

// UnmarshalJSON applies the schema defaults required=true, blocking=true.
func (c *Checkpoint) UnmarshalJSON(b []byte) error {
	type plain Checkpoint
	p := plain{Required: true, Blocking: true}
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*c = Checkpoint(p)
	return nil
}

// Option returns the checkpoint's option with the given id.
func (c *Checkpoint) Option(id string) (*Option, bool) {
	for i := range c.Options {
		if c.Options[i].ID == id {
			return &c.Options[i], true
		}
	}
	return nil, false
}

// Option is one answer to a checkpoint.
type Option struct {
	ID          string  `json:"id"`
	Label       string  `json:"label"`
	Description string  `json:"description,omitempty"`
	Effect      *Effect `json:"effect,omitempty"`
}

// Effect is what choosing an option does. The engine returns effects; the
// orchestrator applies them.
type Effect struct {
	// SetVariable maps variable names to the values they take.
	SetVariable map[string]any `json:"setVariable,omitempty"`
	// TransitionTo is the activity to go to next.
	TransitionTo string `json:"transitionTo,omitempty"`
	// SkipActivities are activities the session will not run.
	SkipActivities []string `json:"skipActivities,omitempty"`
}

// Decision is a branch point inside an activity.
type Decision struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Description string   `json:"description,omitempty"`
	Branches    []Branch `json:"branches"`
}

// Branch is one way out of a Decision; without TransitionTo it is terminal.
type Branch struct {
	ID           string     `json:"id"`
	Label        string     `json:"label"`
	Condition    *Condition `json:"condition,omitempty"`
	TransitionTo string     `json:"transitionTo,omitempty"`
	IsDefault    bool       `json:"isDefault,omitempty"`
}

// Loop repeats steps or activities: forEach over a collection, while or
// doWhile a condition holds, at most MaxIterations times (default 100).
type Loop struct {
	ID             string     `json:"id"`
	Name           string     `json:"name"`
	Type           string     `json:"type"`
	Variable       string     `json:"variable,omitempty"`
	Over           string     `json:"over,omitempty"`
	Condition      *Condition `json:"condition,omitempty"`
	MaxIterations  int        `json:"maxIterations"`
	BreakCondition *Condition `json:"breakCondition,omitempty"`
	Steps          []Step     `json:"steps,omitempty"`
	Activities     []string   `json:"activities,omitempty"`
}

// UnmarshalJSON applies the schema default maxIterations=100.
func (l *Loop) UnmarshalJSON(b []byte) error {
	type plain Loop
	p := plain{MaxIterations: 100}
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*l = Loop(p)
	return nil
}

// Transition is an edge of the activity graph: taken when Condition holds,
// or as the default when IsDefault is set.
type Transition struct {
	To        string     `json:"to"`
	Condition *Condition `json:"condition,omitempty"`
	IsDefault bool       `json:"isDefault,omitempty"`
}

// Trigger starts another workflow.
type Trigger struct {
	Workflow    string   `json:"workflow"`
	Description string   `json:"description,omitempty"`
	PassContext []string `json:"passContext,omitempty"`
}

// Artifact is a file an activity creates or updates.
type Artifact struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Location    string `json:"location,omitempty"`
	Description string `json:"description,omitempty"`
	// Action is create (the default) or update.
	Action string `json:"action,omitempty"`
}
