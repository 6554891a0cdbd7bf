package engine

import (
	"slices"
	"strings"

	"sortie/internal/workflow"
)

// edge is one way from an activity to another, with its condition as text ("" for
// an unconditional or default edge).
type edge struct {
	to        string
	cond      string
	isDefault bool
}

// edges lists the ways out of a: transitions, decision branches and checkpoint
// options (whose condition reads checkpoint:{checkpoint}:{option}).
func edges(a *workflow.Activity) []edge {
	var out []edge
	for _, t := range a.Transitions {
		out = append(out, edge{to: t.To, cond: t.Condition.String(), isDefault: t.IsDefault || t.Condition == nil})
	}
	for _, d := range a.Decisions {
		for _, b := range d.Branches {
			if b.TransitionTo != "" {
				out = append(out, edge{to: b.TransitionTo, cond: b.Condition.String(), isDefault: b.IsDefault || b.Condition == nil})
			}
		}
	}
	for _, cp := range a.Checkpoints {
		for _, o := range cp.Options {
			if o.Effect != nil && o.Effect.TransitionTo != "" {
				out = append(out, edge{to: o.Effect.TransitionTo, cond: "checkpoint:" + cp.ID + ":" + o.ID})
			}
		}
	}
	return out
}

// checkTransition refuses an entry that does not follow the graph: a first activity
// other than the initial one, or a target that is no successor of the current activity
// (a transition, decision branch, checkpoint-option effect or loop activity; from a
// loop's activity, its loop's parent and siblings too), unless the target is marked
// free_entry. Re-entering the current activity is allowed. Upstream only warns
// (workflow-server-behaviour.md §5); here a warning let an agent walk around the
// activity whose checkpoint waits for a human. A claimed transition condition that
// does not match stays a warning: conditions are the agent's to evaluate.
func (c *call) checkTransition(w *workflow.Workflow, from, to, claimed string) error {
	target, ok := w.Activity(to)
	if !ok || from == to {
		return nil
	}
	if from == "" {
		if start := initial(w); to != start && !target.FreeEntry {
			return fail(KindNotATransition, "Cannot enter activity %q first: a session starts with the workflow's initialActivity %q (only activities marked free_entry may be entered from anywhere)", to, start)
		}
		return nil
	}
	prev, ok := w.Activity(from)
	if !ok {
		return nil // the workflow changed under the session; version drift says so
	}
	succ := w.Next(prev)
	if !slices.Contains(succ, to) && !target.FreeEntry {
		next := "none: the activity ends the workflow"
		if len(succ) > 0 {
			next = strings.Join(uniq(succ), ", ")
		}
		return fail(KindNotATransition, "Cannot enter activity %q from %q: it is not one of its transitions (transitions: %s), and it is not marked free_entry. Follow the transitions; an activity with a checkpoint cannot be skipped", to, from, next)
	}
	if !slices.Contains(prev.Successors(), to) {
		return nil // free entry, or back from a loop
	}
	var toHere []edge
	for _, e := range edges(prev) {
		if e.to == to {
			toHere = append(toHere, e)
		}
	}
	if len(toHere) == 0 { // reached through a loop
		return nil
	}
	var conds []string
	hasDefault := false
	for _, e := range toHere {
		if e.cond != "" {
			conds = append(conds, e.cond)
		}
		if e.isDefault {
			hasDefault = true
		}
	}
	switch {
	case claimed == "" || claimed == "default":
		if !hasDefault {
			c.warn("the transition from %q to %q is conditional (%s): pass the condition you evaluated as transition_condition", from, to, strings.Join(conds, " | "))
		}
	case slices.Contains(conds, claimed):
	case len(conds) == 0:
		c.warn("transition_condition %q claimed, but the transition from %q to %q is the default one with no condition: pass \"default\" or omit it", claimed, from, to)
	default:
		c.warn("Condition mismatch: transition_condition %q is not a condition of the transition from %q to %q (conditions: %s)", claimed, from, to, strings.Join(conds, " | "))
	}
	return nil
}

func uniq(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return slices.Compact(out)
}

// checkSkillAssociation warns when the last skill loaded is not one of the activity's.
func (c *call) checkSkillAssociation(a *workflow.Activity, skill string) {
	if skill == "" {
		return
	}
	var own []string
	for _, s := range a.Steps {
		own = append(own, s.Skill)
	}
	for _, l := range a.Loops {
		for _, s := range l.Steps {
			own = append(own, s.Skill)
		}
	}
	if a.Skills != nil {
		own = append(own, a.Skills.Primary)
		own = append(own, a.Skills.Supporting...)
	}
	if !slices.Contains(own, skill) {
		c.warn("skill %q was loaded during activity %q but is not one of its skills", skill, a.ID)
	}
}

// checkSteps checks the step manifest of the activity being left: every top-level
// step, in order, each with an output.
func (c *call) checkSteps(a *workflow.Activity, manifest *[]stepEntry) {
	if len(a.Steps) == 0 && (manifest == nil || len(*manifest) == 0) {
		return
	}
	if manifest == nil {
		c.warn("No step_manifest provided for previous activity %q: list its steps (%s) with their outputs", a.ID, strings.Join(stepIDs(a), ", "))
		return
	}
	want := stepIDs(a)
	var got []string
	for _, e := range *manifest {
		got = append(got, e.StepID)
		if strings.TrimSpace(e.Output) == "" {
			c.warn("Step %q has empty output", e.StepID)
		}
	}
	var missing, unexpected []string
	for _, id := range want {
		if !slices.Contains(got, id) {
			missing = append(missing, id)
		}
	}
	for _, id := range got {
		if !slices.Contains(want, id) {
			unexpected = append(unexpected, id)
		}
	}
	if len(missing) > 0 {
		c.warn("Missing steps in manifest: %s", strings.Join(missing, ", "))
	}
	if len(unexpected) > 0 {
		c.warn("Unexpected steps in manifest: %s", strings.Join(unexpected, ", "))
	}
	// Order, over the steps both lists know.
	var inWant []string
	for _, id := range got {
		if slices.Contains(want, id) {
			inWant = append(inWant, id)
		}
	}
	var wantKnown []string
	for _, id := range want {
		if slices.Contains(inWant, id) {
			wantKnown = append(wantKnown, id)
		}
	}
	for i := range inWant {
		if i < len(wantKnown) && inWant[i] != wantKnown[i] {
			c.warn("Step order mismatch at position %d: expected %q but got %q", i, wantKnown[i], inWant[i])
			break
		}
	}
}

func stepIDs(a *workflow.Activity) []string {
	ids := make([]string, len(a.Steps))
	for i, s := range a.Steps {
		ids[i] = s.ID
	}
	return ids
}

// checkActivities checks an activity manifest (advisory).
func (c *call) checkActivities(w *workflow.Workflow, manifest []activityEntry) {
	if len(manifest) == 0 {
		c.warn("activity_manifest is empty: omit the parameter, or list the activities completed")
		return
	}
	for i, e := range manifest {
		a, ok := w.Activity(e.ActivityID)
		if !ok {
			c.warn("activity_manifest[%d]: unknown activity %q", i, e.ActivityID)
			continue
		}
		if strings.TrimSpace(e.Outcome) == "" {
			c.warn("activity_manifest[%d]: activity %q has an empty outcome", i, e.ActivityID)
		}
		if e.TransitionCondition == "" {
			continue
		}
		matched := false
		for _, ed := range edges(a) {
			if ed.cond == e.TransitionCondition || (e.TransitionCondition == "default" && ed.isDefault) {
				matched = true
				break
			}
		}
		if !matched {
			c.warn("activity_manifest[%d]: transition_condition %q matches no transition of activity %q", i, e.TransitionCondition, e.ActivityID)
		}
	}
}
