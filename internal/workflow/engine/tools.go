package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"sortie/internal/workflow"
)

// bootstrap is the procedure discover returns when the library has no meta
// bootstrap resource (meta/resources/00-*).
const bootstrap = `1. list_workflows, and pick the workflow that fits the task.
2. start_session(workflow_id) for a session_token. Pass the newest session_token to every later call.
3. get_skills, then get_workflow (summary) for the activities and initialActivity.
4. next_activity(initialActivity). For each step with a skill: get_skill(step_id), then get_resource for each of its _resources.
5. When next_activity reports pending checkpoints: get_checkpoint for each, then resolve it with respond_checkpoint before entering another activity.
6. Follow the activity's transitions: next_activity(activity_id, transition_condition, step_manifest) with the steps you completed.`

type workflowRef struct {
	ID      string `json:"id"`
	Title   string `json:"title"`
	Version string `json:"version"`
}

func (c *call) discover(args json.RawMessage) (any, error) {
	if err := decode(c.tool, args, &struct{}{}); err != nil {
		return nil, err
	}
	lib, err := c.library()
	if err != nil {
		return nil, err
	}
	out := map[string]any{"server": c.e.o.Server, "version": c.e.o.Version}
	refs := []workflowRef{}
	for _, w := range lib.Workflows() {
		refs = append(refs, workflowRef{ID: w.ID, Title: w.Title, Version: w.Version})
	}
	out["available_workflows"] = refs
	out["bootstrap"] = bootstrap
	if r, ok := lib.Resource(workflow.MetaWorkflow, "0"); ok {
		out["discovery"] = r.Content
	}
	if c.e.o.Humans {
		out["checkpoints"] = "Under Sortie, humans answer checkpoints: read the checkpoint with get_checkpoint, then end your turn. " +
			"Sortie shows it to a human and resumes you with the answer; then call respond_checkpoint with exactly that option_id."
	}
	return out, nil
}

func (c *call) listWorkflows(args json.RawMessage) (any, error) {
	if err := decode(c.tool, args, &struct{}{}); err != nil {
		return nil, err
	}
	lib, err := c.library()
	if err != nil {
		return nil, err
	}
	type item struct {
		ID              string   `json:"id"`
		Title           string   `json:"title"`
		Version         string   `json:"version"`
		Description     string   `json:"description,omitempty"`
		Tags            []string `json:"tags,omitempty"`
		InitialActivity string   `json:"initialActivity,omitempty"`
	}
	out := []item{}
	for _, w := range lib.Workflows() {
		out = append(out, item{ID: w.ID, Title: w.Title, Version: w.Version, Description: w.Description, Tags: w.Tags, InitialActivity: initial(w)})
	}
	return out, nil
}

func (c *call) healthCheck(args json.RawMessage) (any, error) {
	if err := decode(c.tool, args, &struct{}{}); err != nil {
		return nil, err
	}
	n := 0
	if lib := c.e.o.Library(); lib != nil {
		n = len(lib.Workflows())
	}
	return map[string]any{"status": "healthy", "server": c.e.o.Server, "version": c.e.o.Version,
		"workflows_available": n, "uptime_seconds": int64(math.Max(0, c.e.o.Now().Sub(c.e.started).Seconds()))}, nil
}

// initial returns the workflow's initial activity.
func initial(w *workflow.Workflow) string {
	if w.InitialActivity != "" {
		return w.InitialActivity
	}
	if len(w.Activities) > 0 {
		return w.Activities[0].ID
	}
	return ""
}

func (c *call) startSession(args json.RawMessage) (any, error) {
	var a struct {
		WorkflowID   string `json:"workflow_id"`
		SessionToken string `json:"session_token"`
		AgentID      string `json:"agent_id"`
	}
	if err := decode(c.tool, args, &a); err != nil {
		return nil, err
	}
	if a.WorkflowID == "" {
		return nil, fail(KindInvalidInput, "workflow_id: missing; call list_workflows for the ids")
	}
	lib, err := c.library()
	if err != nil {
		return nil, err
	}
	w, ok := lib.Workflow(a.WorkflowID)
	if !ok || w.ID == workflow.MetaWorkflow {
		var ids []string
		for _, w := range lib.Workflows() {
			ids = append(ids, w.ID)
		}
		return nil, fail(KindWorkflowNotFound, "workflow %q not found (workflows: %s)", a.WorkflowID, strings.Join(ids, ", "))
	}
	body := map[string]any{"workflow": map[string]any{"id": w.ID, "version": w.Version, "title": w.Title, "description": w.Description}}
	if a.SessionToken == "" {
		tok, p, err := c.e.sessions.Start(w.ID, w.Version, a.AgentID)
		if err != nil {
			return nil, err
		}
		c.e.mu.Lock()
		c.e.bindings[p.SessionID] = binding{workflow: w.ID, issueID: c.caller.IssueID, identifier: c.caller.Identifier}
		c.e.mu.Unlock()
		c.token, c.out = tok, &p
		c.save(p, tok)
		c.detail = "new session"
		return c.withToken(body), nil
	}
	p, err := c.verifyLocked(a.SessionToken, a.WorkflowID)
	if err != nil {
		return nil, err
	}
	c.in = &p
	c.activityForLog = p.Activity
	c.e.mu.Lock()
	b, known := c.e.bindings[p.SessionID]
	c.e.mu.Unlock()
	if known && c.caller.IssueID != "" && b.issueID != c.caller.IssueID {
		return nil, fail(KindSessionOfAnotherIssue, "session %s belongs to issue %s, not to this one; call start_session(workflow_id) without session_token", p.SessionID, b.identifier)
	}
	if d, drift := w.VersionDrift(p.Version); drift {
		c.warn("version drift: %s", d.Msg)
	}
	next := p
	next.AgentID = a.AgentID
	if err := c.issue(next); err != nil {
		return nil, err
	}
	body["inherited"] = true
	if len(p.Pending) > 0 {
		body["pending_checkpoints"] = p.Pending
	}
	if p.Activity != "" {
		body["current_activity"] = p.Activity
	}
	c.detail = "inherited"
	return c.withToken(body), nil
}

func (c *call) getWorkflow(args json.RawMessage) (any, error) {
	var a struct {
		SessionToken string `json:"session_token"`
		Summary      *bool  `json:"summary"`
	}
	w, err := c.begin(args, &a, &a.SessionToken, true)
	if err != nil {
		return nil, err
	}
	if err := c.issue(*c.in); err != nil {
		return nil, err
	}
	if a.Summary != nil && !*a.Summary {
		full, err := toMap(w)
		if err != nil {
			return nil, err
		}
		return c.withToken(full), nil
	}
	type stub struct {
		ID       string `json:"id"`
		Name     string `json:"name"`
		Required bool   `json:"required"`
	}
	stubs := []stub{}
	for _, act := range w.Activities {
		stubs = append(stubs, stub{ID: act.ID, Name: act.Name, Required: act.Required})
	}
	body := map[string]any{"id": w.ID, "version": w.Version, "title": w.Title, "initialActivity": initial(w), "activities": stubs}
	set := func(k string, v any, empty bool) {
		if !empty {
			body[k] = v
		}
	}
	set("description", w.Description, w.Description == "")
	set("rules", w.Rules, len(w.Rules) == 0)
	set("variables", w.Variables, len(w.Variables) == 0)
	set("modes", w.Modes, len(w.Modes) == 0)
	set("skills", w.Skills, len(w.Skills) == 0)
	set("executionModel", w.ExecutionModel, w.ExecutionModel == nil)
	set("artifactLocations", w.ArtifactLocations, len(w.ArtifactLocations) == 0)
	return c.withToken(body), nil
}

// toMap returns v as a JSON object.
func toMap(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	return m, nil
}

// resourceRef is a lightweight reference to a skill's resource.
type resourceRef struct {
	Index   string `json:"index"`
	ID      string `json:"id,omitempty"`
	Version string `json:"version,omitempty"`
}

// skillBody returns a skill's document without its raw resources list, with
// _resources references (unresolvable references are reported as warnings, not
// dropped silently).
func (c *call) skillBody(lib *workflow.Library, s *workflow.Skill) (json.RawMessage, error) {
	var buf bytes.Buffer
	dec := json.NewDecoder(bytes.NewReader(s.Document))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("skill %s: document is not an object", s.ID)
	}
	buf.WriteByte('{')
	first := true
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		k, _ := kt.(string)
		if k == "resources" || k == "_resources" {
			continue
		}
		if !first {
			buf.WriteByte(',')
		}
		first = false
		kb, _ := json.Marshal(k)
		buf.Write(kb)
		buf.WriteByte(':')
		buf.Write(v)
	}
	refs := []resourceRef{}
	for _, ref := range s.Resources {
		// A bare index in a meta skill means a meta resource.
		r, ok := lib.Resource(s.Workflow, ref)
		if !ok {
			c.warn("skill %s: resource %q does not resolve", s.ID, ref)
			continue
		}
		refs = append(refs, resourceRef{Index: qualify(s.Workflow, c.in.Workflow, ref), ID: r.ID, Version: r.Version})
	}
	if len(refs) > 0 {
		if !first {
			buf.WriteByte(',')
		}
		rb, _ := json.Marshal(refs)
		buf.WriteString(`"_resources":`)
		buf.Write(rb)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// qualify returns ref as get_resource resolves it for a session of sessionWF: a bare
// index of another workflow's skill gets that workflow's prefix.
func qualify(skillWF, sessionWF, ref string) string {
	if strings.Contains(ref, "/") || skillWF == sessionWF {
		return ref
	}
	return skillWF + "/" + ref
}

func (c *call) getSkills(args json.RawMessage) (any, error) {
	var a struct {
		SessionToken string `json:"session_token"`
	}
	w, err := c.begin(args, &a, &a.SessionToken, true)
	if err != nil {
		return nil, err
	}
	lib, _ := c.library()
	skills := map[string]json.RawMessage{}
	var failed []string
	for _, id := range w.Skills {
		s, ok := lib.Skill(w.ID, id)
		if !ok {
			failed = append(failed, id)
			continue
		}
		b, err := c.skillBody(lib, s)
		if err != nil {
			failed = append(failed, id)
			continue
		}
		skills[id] = b
	}
	if err := c.issue(*c.in); err != nil {
		return nil, err
	}
	body := map[string]any{"scope": "workflow", "skills": skills}
	if len(failed) > 0 {
		body["failed_skills"] = failed
	}
	return c.withToken(body), nil
}

func (c *call) getSkill(args json.RawMessage) (any, error) {
	var a struct {
		SessionToken string `json:"session_token"`
		StepID       string `json:"step_id"`
	}
	w, err := c.begin(args, &a, &a.SessionToken, true)
	if err != nil {
		return nil, err
	}
	if a.StepID == "" {
		return nil, fail(KindInvalidInput, "step_id: missing; pass a step id of the current activity")
	}
	if c.in.Activity == "" {
		return nil, fail(KindNoActivity, "no current activity: call next_activity first, then get_skill for its steps")
	}
	act, ok := w.Activity(c.in.Activity)
	if !ok {
		return nil, fail(KindActivityNotFound, "the session's activity %q is no longer in workflow %q; call get_workflow", c.in.Activity, w.ID)
	}
	step, ids := findStep(act, a.StepID)
	if step == nil {
		return nil, fail(KindStepNotFound, "step %q is not a step of activity %q (steps: %s)", a.StepID, act.ID, strings.Join(ids, ", "))
	}
	if step.Skill == "" {
		return nil, fail(KindSkillNotFound, "step %q of activity %q has no skill: follow its description", step.ID, act.ID)
	}
	lib, _ := c.library()
	s, ok := lib.Skill(w.ID, step.Skill)
	if !ok {
		return nil, fail(KindSkillNotFound, "skill %q of step %q is in neither %s/skills nor meta/skills", step.Skill, step.ID, w.ID)
	}
	b, err := c.skillBody(lib, s)
	if err != nil {
		return nil, err
	}
	next := *c.in
	next.Skill = s.ID
	if err := c.issue(next); err != nil {
		return nil, err
	}
	c.detail = step.ID + " → " + s.ID
	return c.withToken(map[string]any{"skill": b}), nil
}

// findStep finds a step of the activity or of one of its loops, and lists the ids.
func findStep(a *workflow.Activity, id string) (*workflow.Step, []string) {
	var ids []string
	for i := range a.Steps {
		if a.Steps[i].ID == id {
			return &a.Steps[i], nil
		}
		ids = append(ids, a.Steps[i].ID)
	}
	for _, l := range a.Loops {
		for i := range l.Steps {
			if l.Steps[i].ID == id {
				return &l.Steps[i], nil
			}
			ids = append(ids, l.Steps[i].ID)
		}
	}
	if len(ids) == 0 {
		ids = []string{"none"}
	}
	return nil, ids
}

func (c *call) getResource(args json.RawMessage) (any, error) {
	var a struct {
		SessionToken  string `json:"session_token"`
		ResourceIndex string `json:"resource_index"`
	}
	w, err := c.begin(args, &a, &a.SessionToken, true)
	if err != nil {
		return nil, err
	}
	lib, _ := c.library()
	r, ok := lib.Resource(w.ID, a.ResourceIndex)
	if !ok {
		return nil, fail(KindResourceNotFound, "resource %q not found: use a bare index (\"05\") of workflow %s or a prefixed one (\"meta/05\")", a.ResourceIndex, w.ID)
	}
	if err := c.issue(*c.in); err != nil {
		return nil, err
	}
	c.detail = a.ResourceIndex
	res := map[string]any{"index": a.ResourceIndex, "content": r.Content}
	if r.ID != "" {
		res["id"] = r.ID
	}
	if r.Version != "" {
		res["version"] = r.Version
	}
	return c.withToken(map[string]any{"resource": res}), nil
}
