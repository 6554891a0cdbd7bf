package workflow

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
)

var semver = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\d+\.\d+\.\d+$`) })

var (
	variableTypes = []string{"string", "number", "boolean", "array", "object"}
	loopTypes     = []string{"forEach", "while", "doWhile"}
)

// ids reports duplicates among the ids of a list, at field[i].key.
type ids struct {
	seen   map[string]string
	report func(field, format string, args ...any)
}

func newIDs(report func(field, format string, args ...any)) *ids {
	return &ids{seen: map[string]string{}, report: report}
}

// add records id found at field; a missing or repeated id is reported.
func (d *ids) add(field, id, what string) {
	if id == "" {
		d.report(field, "missing: every %s has an id", what)
		return
	}
	if prev, ok := d.seen[id]; ok {
		d.report(field, "duplicate %s id %q (also at %s)", what, id, prev)
		return
	}
	d.seen[id] = field
}

func required(report func(field, format string, args ...any), field, value string) {
	if strings.TrimSpace(value) == "" {
		report(field, "missing: required")
	}
}

// checkLocal checks the workflow file on its own.
func (w *Workflow) checkLocal(ps *problems) {
	r := ps.at(w.file, "")
	required(r, "id", w.ID)
	required(r, "title", w.Title)
	if !semver().MatchString(w.Version) {
		r("version", "%q is not a version MAJOR.MINOR.PATCH", w.Version)
	}
	if w.ExecutionModel != nil {
		if len(w.ExecutionModel.Roles) == 0 {
			r("executionModel.roles", "missing: at least one role")
		}
		d := newIDs(r)
		for i, role := range w.ExecutionModel.Roles {
			d.add(fmt.Sprintf("executionModel.roles[%d].id", i), role.ID, "role")
		}
	}
	vars := newIDs(r)
	for i, v := range w.Variables {
		f := fmt.Sprintf("variables[%d]", i)
		vars.add(f+".name", v.Name, "variable")
		if !slices.Contains(variableTypes, v.Type) {
			r(f+".type", "%q is not a variable type: want one of %s", v.Type, strings.Join(variableTypes, ", "))
		}
	}
	modes := newIDs(r)
	for i, m := range w.Modes {
		f := fmt.Sprintf("modes[%d]", i)
		modes.add(f+".id", m.ID, "mode")
		required(r, f+".activationVariable", m.ActivationVariable)
	}
}

// checkLocal checks an activity; with w non-nil it also checks references
// to w's activities, skills and variables.
func (a *Activity) checkLocal(ps *problems, w *Workflow) {
	r := ps.at(a.file, a.field)
	required(r, "id", a.ID)
	required(r, "name", a.Name)
	required(r, "version", a.Version)
	activity := func(field, id string) {
		if w == nil {
			return
		}
		if id == "" {
			r(field, "missing: names an activity")
			return
		}
		if _, ok := w.activities[id]; !ok {
			r(field, "unknown activity %q%s", id, known(w))
		}
	}
	skill := func(field, id string) {
		if w == nil || id == "" || w.lib == nil {
			return
		}
		if _, ok := w.lib.Skill(w.ID, id); !ok {
			r(field, "unknown skill %q: not in %s/skills or %s/skills", id, w.ID, MetaWorkflow)
		}
	}
	cond := func(field string, c *Condition) {
		if c != nil {
			c.check(field, r)
		}
	}
	if a.Skills != nil {
		skill("skills.primary", a.Skills.Primary)
		for i, s := range a.Skills.Supporting {
			skill(fmt.Sprintf("skills.supporting[%d]", i), s)
		}
	}
	steps := newIDs(r)
	checkStep := func(f string, s Step) {
		steps.add(f+".id", s.ID, "step")
		required(r, f+".name", s.Name)
		skill(f+".skill", s.Skill)
		cond(f+".condition", s.Condition)
	}
	for i, s := range a.Steps {
		checkStep(fmt.Sprintf("steps[%d]", i), s)
	}
	cps := newIDs(r)
	for i, c := range a.Checkpoints {
		f := fmt.Sprintf("checkpoints[%d]", i)
		cps.add(f+".id", c.ID, "checkpoint")
		required(r, f+".name", c.Name)
		required(r, f+".message", c.Message)
		cond(f+".condition", c.Condition)
		if len(c.Options) == 0 {
			r(f+".options", "missing: a checkpoint offers at least one option")
		}
		opts := newIDs(r)
		for j, o := range c.Options {
			of := fmt.Sprintf("%s.options[%d]", f, j)
			opts.add(of+".id", o.ID, "option")
			required(r, of+".label", o.Label)
			if o.Effect == nil {
				continue
			}
			if o.Effect.TransitionTo != "" {
				activity(of+".effect.transitionTo", o.Effect.TransitionTo)
			}
			for k, s := range o.Effect.SkipActivities {
				activity(fmt.Sprintf("%s.effect.skipActivities[%d]", of, k), s)
			}
		}
		if c.DefaultOption != "" {
			if _, ok := c.Option(c.DefaultOption); !ok {
				r(f+".defaultOption", "%q is not one of the checkpoint's options", c.DefaultOption)
			}
		}
		// respond_checkpoint(auto_advance) is valid only for a non-blocking
		// checkpoint and picks defaultOption once autoAdvanceMs has passed
		// (workflow-tools-api.md, Checkpoint Enforcement); a timer that can
		// never fire or has nothing to pick is an authoring mistake.
		switch {
		case c.AutoAdvanceMs < 0:
			r(f+".autoAdvanceMs", "must be positive (got %d)", c.AutoAdvanceMs)
		case c.AutoAdvanceMs > 0 && c.Blocking:
			r(f+".autoAdvanceMs", "a blocking checkpoint never auto-advances: set blocking: false or remove autoAdvanceMs")
		case c.AutoAdvanceMs > 0 && c.DefaultOption == "":
			r(f+".autoAdvanceMs", "auto-advance needs a defaultOption to choose")
		}
	}
	decs := newIDs(r)
	for i, d := range a.Decisions {
		f := fmt.Sprintf("decisions[%d]", i)
		decs.add(f+".id", d.ID, "decision")
		if len(d.Branches) < 2 {
			r(f+".branches", "a decision has at least 2 branches (got %d)", len(d.Branches))
		}
		brs := newIDs(r)
		for j, b := range d.Branches {
			bf := fmt.Sprintf("%s.branches[%d]", f, j)
			brs.add(bf+".id", b.ID, "branch")
			cond(bf+".condition", b.Condition)
			if b.TransitionTo != "" {
				activity(bf+".transitionTo", b.TransitionTo)
			}
		}
	}
	loops := newIDs(r)
	for i, l := range a.Loops {
		f := fmt.Sprintf("loops[%d]", i)
		loops.add(f+".id", l.ID, "loop")
		if !slices.Contains(loopTypes, l.Type) {
			r(f+".type", "%q is not a loop type: want one of %s", l.Type, strings.Join(loopTypes, ", "))
		}
		if l.MaxIterations <= 0 {
			r(f+".maxIterations", "must be positive (got %d)", l.MaxIterations)
		}
		cond(f+".condition", l.Condition)
		cond(f+".breakCondition", l.BreakCondition)
		for j, s := range l.Steps {
			checkStep(fmt.Sprintf("%s.steps[%d]", f, j), s)
		}
		for j, id := range l.Activities {
			activity(fmt.Sprintf("%s.activities[%d]", f, j), id)
		}
	}
	defaults := 0
	for i, t := range a.Transitions {
		f := fmt.Sprintf("transitions[%d]", i)
		activity(f+".to", t.To)
		if w == nil && t.To == "" {
			r(f+".to", "missing: names an activity")
		}
		cond(f+".condition", t.Condition)
		if t.IsDefault {
			defaults++
			if defaults == 2 {
				r(f+".isDefault", "a second default transition: at most one transition is the default")
			}
		}
	}
}

func known(w *Workflow) string {
	var ids []string
	for _, a := range w.Activities {
		ids = append(ids, a.ID)
	}
	if len(ids) > 12 {
		return ""
	}
	return " (known: " + strings.Join(ids, ", ") + ")"
}

// validate checks every workflow of the library and their references, and
// records advisory warnings.
func (l *Library) validate(ps *problems) {
	for _, w := range l.workflows {
		w.lib = l
		w.checkLocal(ps)
		w.activities = map[string]*Activity{}
		prefixes := map[string]*Activity{}
		for _, a := range w.Activities {
			if a.ID == "" {
				continue
			}
			if prev, ok := w.activities[a.ID]; ok {
				ps.add(a.file, joinField(a.field, "id"), "duplicate activity id %q (also in %s)", a.ID, prev.file)
				continue
			}
			w.activities[a.ID] = a
			if a.ArtifactPrefix == "" {
				continue
			}
			n, _ := NormalizeIndex(a.ArtifactPrefix)
			if prev, ok := prefixes[n]; ok {
				ps.add(a.file, "", "activity index %s clashes with %s: artifact prefixes must be unique", a.ArtifactPrefix, prev.file)
				continue
			}
			prefixes[n] = a
		}
		if len(w.Activities) == 0 && w.ID != MetaWorkflow {
			ps.add(w.file, "activities", "no activities: add activities/NN-{id}.toon or inline activities")
		}
		if w.InitialActivity != "" {
			if _, ok := w.activities[w.InitialActivity]; !ok {
				ps.add(w.file, "initialActivity", "unknown activity %q%s", w.InitialActivity, known(w))
			}
		}
		for i, id := range w.Skills {
			if _, ok := l.Skill(w.ID, id); !ok {
				ps.add(w.file, fmt.Sprintf("skills[%d]", i), "unknown skill %q: not in %s/skills or %s/skills", id, w.ID, MetaWorkflow)
			}
		}
		for i, m := range w.Modes {
			for j, id := range m.SkipActivities {
				if _, ok := w.activities[id]; !ok {
					ps.add(w.file, fmt.Sprintf("modes[%d].skipActivities[%d]", i, j), "unknown activity %q%s", id, known(w))
				}
			}
		}
		for _, a := range w.Activities {
			a.checkLocal(ps, w)
		}
		for _, s := range w.skills {
			l.checkSkill(ps, s)
		}
		l.warnings = append(l.warnings, w.graphWarnings()...)
	}
	slices.SortStableFunc(ps.list, func(a, b Problem) int { return strings.Compare(a.File, b.File) })
	slices.SortStableFunc(l.warnings, func(a, b Problem) int { return strings.Compare(a.File, b.File) })
}

func (l *Library) checkSkill(ps *problems, s *Skill) {
	r := ps.at(s.file, "")
	required(r, "id", s.ID)
	required(r, "version", s.Version)
	required(r, "capability", s.Capability)
	for i, ref := range s.Resources {
		if _, ok := l.Resource(s.Workflow, ref); !ok {
			r(fmt.Sprintf("resources[%d]", i), "unknown resource %q", ref)
		}
	}
}

// graphWarnings reports activities no path of transitions, decision
// branches or checkpoint effects reaches from the initial activity, and
// conditions on variables the workflow does not declare.
func (w *Workflow) graphWarnings() []Problem {
	var out []Problem
	if len(w.Activities) == 0 {
		return nil
	}
	start := w.InitialActivity
	if start == "" {
		start = w.Activities[0].ID
	}
	seen := map[string]bool{}
	queue := []string{start}
	for _, a := range w.Activities {
		if a.FreeEntry {
			queue = append(queue, a.ID) // entered from anywhere
		}
	}
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		a, ok := w.activities[id]
		if !ok || seen[id] {
			continue
		}
		seen[id] = true
		queue = append(queue, a.successors()...)
	}
	declared := map[string]bool{}
	for _, v := range w.Variables {
		declared[v.Name] = true
	}
	for _, a := range w.Activities {
		if !seen[a.ID] {
			out = append(out, Problem{File: a.file, Field: a.field, Msg: fmt.Sprintf("activity %q is unreachable from %q", a.ID, start)})
		}
		if a.FreeEntry && len(a.successors()) == 0 && w.hasBlockingAfterStart(start) {
			out = append(out, Problem{File: a.file, Field: joinField(a.field, "free_entry"), Msg: fmt.Sprintf(
				"activity %q ends the workflow and has free_entry: an agent may enter it from anywhere, so no checkpoint before it is on every path to the end and a hand-off need not wait for one", a.ID)})
		}
		if len(w.Variables) == 0 {
			continue
		}
		for _, f := range a.conditions() {
			for _, v := range f.c.variables(nil) {
				if !declared[strings.SplitN(v, ".", 2)[0]] {
					out = append(out, Problem{File: a.file, Field: joinField(a.field, f.field), Msg: fmt.Sprintf("variable %q is not declared in the workflow", v)})
				}
			}
		}
	}
	return out
}

// Successors returns the activities a session may go to from a: its
// transitions, decision branches, checkpoint-option effects and loop
// activities, in that order, possibly repeated.
func (a *Activity) Successors() []string { return a.successors() }

func (a *Activity) successors() []string {
	var ids []string
	for _, t := range a.Transitions {
		ids = append(ids, t.To)
	}
	for _, d := range a.Decisions {
		for _, b := range d.Branches {
			if b.TransitionTo != "" {
				ids = append(ids, b.TransitionTo)
			}
		}
	}
	for _, c := range a.Checkpoints {
		for _, o := range c.Options {
			if o.Effect != nil && o.Effect.TransitionTo != "" {
				ids = append(ids, o.Effect.TransitionTo)
			}
		}
	}
	for _, l := range a.Loops {
		ids = append(ids, l.Activities...)
	}
	return ids
}

type fieldCondition struct {
	field string
	c     *Condition
}

func (a *Activity) conditions() []fieldCondition {
	var out []fieldCondition
	add := func(field string, c *Condition) {
		if c != nil {
			out = append(out, fieldCondition{field, c})
		}
	}
	for i, s := range a.Steps {
		add(fmt.Sprintf("steps[%d].condition", i), s.Condition)
	}
	for i, c := range a.Checkpoints {
		add(fmt.Sprintf("checkpoints[%d].condition", i), c.Condition)
	}
	for i, t := range a.Transitions {
		add(fmt.Sprintf("transitions[%d].condition", i), t.Condition)
	}
	for i, d := range a.Decisions {
		for j, b := range d.Branches {
			add(fmt.Sprintf("decisions[%d].branches[%d].condition", i, j), b.Condition)
		}
	}
	for i, l := range a.Loops {
		add(fmt.Sprintf("loops[%d].condition", i), l.Condition)
		add(fmt.Sprintf("loops[%d].breakCondition", i), l.BreakCondition)
	}
	return out
}

// VersionDrift returns the warning a session started on sessionVersion
// gets when the workflow's version has since changed; ok is false when
// the versions agree. Drift is advisory (workflow-tools-api.md,
// Validation).
func (w *Workflow) VersionDrift(sessionVersion string) (warning Problem, ok bool) {
	if sessionVersion == w.Version {
		return Problem{}, false
	}
	return Problem{File: w.file, Field: "version", Msg: fmt.Sprintf("workflow %q is at version %s but the session started on %s", w.ID, w.Version, sessionVersion)}, true
}
