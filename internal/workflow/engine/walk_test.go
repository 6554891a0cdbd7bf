package engine

import (
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"sortie/internal/store"
	"sortie/internal/workflow"
)

// evalCondition evaluates a workflow condition over a variable bag the way the
// example skills tell an agent to: == and != compare decoded JSON values
// strictly (no coercion; an unset variable equals nothing), the ordered operators
// compare numbers (a numeric string counts), exists and notExists test presence,
// and a variable may be a dot path into nested objects.
func evalCondition(c *workflow.Condition, vars map[string]any) bool {
	if c == nil {
		return true
	}
	switch c.Type {
	case workflow.CondAnd:
		for i := range c.Conditions {
			if !evalCondition(&c.Conditions[i], vars) {
				return false
			}
		}
		return true
	case workflow.CondOr:
		for i := range c.Conditions {
			if evalCondition(&c.Conditions[i], vars) {
				return true
			}
		}
		return false
	case workflow.CondNot:
		return !evalCondition(c.Condition, vars)
	}
	v, ok := lookup(vars, c.Variable)
	switch c.Operator {
	case "exists":
		return ok && v != nil
	case "notExists":
		return !ok || v == nil
	}
	var want any
	if err := json.Unmarshal(c.Value, &want); err != nil {
		return false
	}
	switch c.Operator {
	case "==":
		return ok && reflect.DeepEqual(v, want)
	case "!=":
		return !ok || !reflect.DeepEqual(v, want)
	}
	a, aok := number(v)
	b, bok := number(want)
	if !ok || !aok || !bok {
		return false
	}
	switch c.Operator {
	case ">":
		return a > b
	case "<":
		return a < b
	case ">=":
		return a >= b
	case "<=":
		return a <= b
	}
	return false
}

func lookup(vars map[string]any, path string) (any, bool) {
	var cur any = vars
	for _, part := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[part]; !ok {
			return nil, false
		}
	}
	return cur, true
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case string:
		f, err := strconv.ParseFloat(x, 64)
		return f, err == nil
	}
	return 0, false
}

func TestEvalCondition(t *testing.T) {
	vars := map[string]any{"ok": true, "n": 2.0, "s": "3", "name": "jira", "obj": map[string]any{"deep": map[string]any{"x": 1.0}}, "nil": nil}
	cond := func(js string) *workflow.Condition {
		var c workflow.Condition
		if err := json.Unmarshal([]byte(js), &c); err != nil {
			t.Fatal(err)
		}
		return &c
	}
	for js, want := range map[string]bool{
		`{"type":"simple","variable":"ok","operator":"==","value":true}`:                                                                                  true,
		`{"type":"simple","variable":"ok","operator":"==","value":"true"}`:                                                                                false, // strict
		`{"type":"simple","variable":"n","operator":"==","value":"2"}`:                                                                                    false,
		`{"type":"simple","variable":"missing","operator":"==","value":false}`:                                                                            false,
		`{"type":"simple","variable":"missing","operator":"!=","value":false}`:                                                                            true,
		`{"type":"simple","variable":"n","operator":"<","value":3}`:                                                                                       true,
		`{"type":"simple","variable":"s","operator":">=","value":3}`:                                                                                      true, // numeric string
		`{"type":"simple","variable":"name","operator":">","value":1}`:                                                                                    false,
		`{"type":"simple","variable":"missing","operator":"<","value":1}`:                                                                                 false,
		`{"type":"simple","variable":"obj.deep.x","operator":"==","value":1}`:                                                                             true,
		`{"type":"simple","variable":"obj.deep.y","operator":"exists"}`:                                                                                   false,
		`{"type":"simple","variable":"obj.deep","operator":"exists"}`:                                                                                     true,
		`{"type":"simple","variable":"nil","operator":"notExists"}`:                                                                                       true,
		`{"type":"not","condition":{"type":"simple","variable":"ok","operator":"==","value":true}}`:                                                       false,
		`{"type":"and","conditions":[{"type":"simple","variable":"ok","operator":"exists"},{"type":"simple","variable":"n","operator":"<=","value":2}]}`:  true,
		`{"type":"or","conditions":[{"type":"simple","variable":"ok","operator":"notExists"},{"type":"simple","variable":"n","operator":">","value":2}]}`: false,
	} {
		if got := evalCondition(cond(js), vars); got != want {
			t.Errorf("%s = %v, want %v", js, got, want)
		}
	}
}

// scenario scripts a well-behaved agent (and its humans) through a workflow.
type scenario struct {
	name string
	// act is what the agent does to its variables while running an activity's
	// steps; visit counts the activity's entries from 1.
	act func(activity string, visit int, vars map[string]any)
	// choose picks the resolution of a checkpoint whose condition holds: an option
	// id, or "auto" to let a non-blocking checkpoint auto-advance.
	choose func(activity, checkpoint string, visit int) string
	want   []string
}

// workPackageAgent is what a behaving agent does in the example's activities.
func workPackageAgent(blocked bool, failVerifies int, deviate bool) func(string, int, map[string]any) {
	fails := failVerifies
	return func(activity string, visit int, vars map[string]any) {
		switch activity {
		case "understand":
			vars["blocked"] = blocked
			if blocked {
				vars["outcome"] = "blocked"
			}
		case "plan":
			if vars["needs_plan_revision"] == true {
				vars["plan_revisions"] = vars["plan_revisions"].(float64) + 1
			}
		case "implement":
			vars["more_work_requested"] = false
			vars["plan_deviation"] = deviate && visit == 1
		case "verify":
			vars["verify_attempts"] = vars["verify_attempts"].(float64) + 1
			vars["tests_pass"] = fails == 0
			if fails > 0 {
				fails--
			}
		}
	}
}

// choices answers every checkpoint by a table of activity/checkpoint → options by
// visit (the last one repeats); unlisted checkpoints take their first option.
func choices(table map[string][]string) func(string, string, int) string {
	return func(activity, cp string, visit int) string {
		opts, ok := table[activity+"/"+cp]
		if !ok {
			return ""
		}
		return opts[min(visit, len(opts))-1]
	}
}

func TestWalk_ExampleWorkPackage(t *testing.T) {
	lib, err := workflow.LoadLibrary(filepath.Join("..", "..", "..", "examples", "workflows"))
	if err != nil {
		t.Fatalf("examples/workflows: %v", err)
	}
	happy := []string{"understand", "plan", "approve-plan", "implement", "verify", "ready-for-review", "handoff"}
	approve := map[string][]string{"approve-plan/approve-plan": {"approve"}, "ready-for-review/ready-for-review": {"hand-off"}}
	with := func(extra map[string][]string) map[string][]string {
		out := map[string][]string{}
		for k, v := range approve {
			out[k] = v
		}
		for k, v := range extra {
			out[k] = v
		}
		return out
	}
	// Built afresh for each run: the agents keep state.
	scenarios := func() []scenario {
		return []scenario{
			{"approve everything", workPackageAgent(false, 0, false), choices(approve), happy},
			{"revise once then approve", workPackageAgent(false, 0, false),
				choices(with(map[string][]string{"approve-plan/approve-plan": {"revise", "approve"}})),
				[]string{"understand", "plan", "approve-plan", "plan", "approve-plan", "implement", "verify", "ready-for-review", "handoff"}},
			{"more work once", workPackageAgent(false, 0, false),
				choices(with(map[string][]string{"ready-for-review/ready-for-review": {"more-work", "hand-off"}})),
				[]string{"understand", "plan", "approve-plan", "implement", "verify", "ready-for-review", "implement", "verify", "ready-for-review", "handoff"}},
			{"tests fail twice", workPackageAgent(false, 2, false), choices(approve),
				[]string{"understand", "plan", "approve-plan", "implement", "verify", "implement", "verify", "implement", "verify", "ready-for-review", "handoff"}},
			{"blocked", workPackageAgent(true, 0, false), choices(approve), []string{"understand", "handoff"}},
			{"abandon the plan", workPackageAgent(false, 0, false),
				choices(with(map[string][]string{"approve-plan/approve-plan": {"abandon"}})),
				[]string{"understand", "plan", "approve-plan", "handoff"}},
			{"deviation auto-advances", workPackageAgent(false, 0, true),
				choices(with(map[string][]string{"verify/deviation-notice": {"auto"}})), happy},
			{"deviation sends the plan back", workPackageAgent(false, 0, true),
				choices(with(map[string][]string{"verify/deviation-notice": {"replan"}})),
				[]string{"understand", "plan", "approve-plan", "implement", "verify", "plan", "approve-plan", "implement", "verify", "ready-for-review", "handoff"}},
		}
	}
	for _, humansMode := range []bool{false, true} {
		for _, sc := range scenarios() {
			name := sc.name
			if humansMode {
				name += " (humans)"
			}
			t.Run(name, func(t *testing.T) {
				var opts []option
				if humansMode {
					opts = append(opts, humans)
				}
				h := newHarness(t, lib, opts...)
				got := walk(t, h, "work-package", sc)
				if !slices.Equal(got, sc.want) {
					t.Fatalf("path %v\nwant %v", got, sc.want)
				}
			})
		}
	}
}

// walk drives workflow wf from start_session to an activity without transitions,
// as a behaving agent would, and returns the activities entered. Every response
// must be free of validation warnings.
func walk(t *testing.T, h *harness, wf string, sc scenario) []string {
	t.Helper()
	clean := func(what string, m obj) obj {
		t.Helper()
		noWarnings(t, what, m)
		return m
	}
	clean("start_session", h.start(wf))
	clean("get_skills", h.ok(ToolGetSkills, obj{}))
	summary := clean("get_workflow", h.ok(ToolGetWorkflow, obj{}))
	w, _ := h.lib.Load().Workflow(wf)

	vars := map[string]any{}
	for _, v := range summary["variables"].([]any) {
		v := v.(obj)
		if d, ok := v["defaultValue"]; ok {
			vars[v["name"].(string)] = d
		}
	}
	target, cond := summary["initialActivity"].(string), ""
	var path []string
	var steps []obj // manifest of the activity being left
	var manifest []obj
	visits := map[string]int{}
	cpVisits := map[string]int{}
	for range 50 {
		args := obj{"activity_id": target}
		if cond != "" {
			args["transition_condition"] = cond
		}
		if len(path) > 0 {
			args["step_manifest"] = steps
			args["activity_manifest"] = manifest
		}
		m := clean("next_activity("+target+")", h.ok(ToolNextActivity, args))
		path = append(path, target)
		visits[target]++
		act, _ := w.Activity(target)

		// Steps: the skill of each, then its resources.
		steps = []obj{}
		for _, s := range act.Steps {
			out := "done: " + s.ID
			if s.Condition != nil && !evalCondition(s.Condition, vars) {
				out = "skipped: condition false"
			}
			steps = append(steps, obj{"step_id": s.ID, "output": out})
		}
		sc.act(target, visits[target], vars)

		// Checkpoints: the gate holds skills until each is resolved.
		var jump string
		for _, id := range strs(m["pending_checkpoints"]) {
			cp := findCheckpoint(act, id)
			c := clean("get_checkpoint", h.ok(ToolGetCheckpoint, obj{"activity_id": target, "checkpoint_id": id}))
			if c["pending"] != true {
				t.Fatalf("%s/%s: get_checkpoint says not pending", target, id)
			}
			if cp.Condition != nil && !evalCondition(cp.Condition, vars) {
				clean("dismiss", h.ok(ToolRespondCheckpoint, obj{"checkpoint_id": id, "condition_not_met": true}))
				continue
			}
			cpVisits[target+"/"+id]++
			choice := sc.choose(target, id, cpVisits[target+"/"+id])
			if choice == "" {
				choice = cp.Options[0].ID
			}
			var r obj
			switch {
			case choice == "auto" && h.opts.Humans:
				h.clk.Advance(time.Duration(cp.AutoAdvanceMs) * time.Millisecond)
				answer(t, h, id, cp.DefaultOption, store.AnswerAutoAdvance)
				r = h.ok(ToolRespondCheckpoint, obj{"checkpoint_id": id, "auto_advance": true})
			case choice == "auto":
				h.err(ToolRespondCheckpoint, obj{"checkpoint_id": id, "auto_advance": true}, KindTimerNotElapsed)
				h.clk.Advance(time.Duration(cp.AutoAdvanceMs) * time.Millisecond)
				r = h.ok(ToolRespondCheckpoint, obj{"checkpoint_id": id, "auto_advance": true})
			case h.opts.Humans:
				if c["awaiting_human"] != true {
					t.Fatalf("%s/%s: get_checkpoint before an answer = %v", target, id, c)
				}
				h.err(ToolRespondCheckpoint, obj{"checkpoint_id": id, "option_id": choice}, KindAwaitingHuman)
				answer(t, h, id, choice, store.AnswerDashboard)
				c = h.ok(ToolGetCheckpoint, obj{"activity_id": target, "checkpoint_id": id})
				if ha, _ := c["human_answer"].(obj); ha["option_id"] != choice {
					t.Fatalf("%s/%s: human_answer = %v", target, id, c["human_answer"])
				}
				r = h.ok(ToolRespondCheckpoint, obj{"checkpoint_id": id, "option_id": choice})
			default:
				h.clk.Advance(DefaultMinResponse)
				r = h.ok(ToolRespondCheckpoint, obj{"checkpoint_id": id, "option_id": choice})
			}
			clean("respond_checkpoint", r)
			opt := r["resolved_option"].(string)
			if e, ok := r["effect"].(obj); ok {
				for k, v := range e["setVariable"].(obj) {
					vars[k] = v
				}
				if to, ok := e["transitionTo"].(string); ok {
					jump, cond = to, "checkpoint:"+id+":"+opt
				}
			}
		}
		for _, s := range act.Steps {
			if s.Skill == "" {
				continue
			}
			sk := clean("get_skill", h.ok(ToolGetSkill, obj{"step_id": s.ID}))["skill"].(obj)
			refs, _ := sk["_resources"].([]any)
			for _, ref := range refs {
				clean("get_resource", h.ok(ToolGetResource, obj{"resource_index": ref.(obj)["index"]}))
			}
		}

		// The next activity: an effect's transitionTo, else the first transition whose
		// condition holds, else the default.
		if jump == "" {
			var def string
			for _, tr := range act.Transitions {
				switch {
				case tr.Condition == nil || tr.IsDefault:
					if def == "" {
						def = tr.To
					}
				case jump == "" && evalCondition(tr.Condition, vars):
					jump, cond = tr.To, tr.Condition.String()
				}
			}
			if jump == "" {
				jump, cond = def, "default"
			}
		}
		if jump == "" {
			trace := clean("get_trace", h.ok(ToolGetTrace, obj{}))
			if trace["event_count"].(float64) < float64(len(path)) {
				t.Fatalf("trace has %v events for %d activities", trace["event_count"], len(path))
			}
			return path
		}
		manifest = append(manifest, obj{"activity_id": target, "outcome": "completed", "transition_condition": cond})
		target = jump
	}
	t.Fatalf("no end after 50 activities: %v", path)
	return nil
}

func answer(t *testing.T, h *harness, cp, option, source string) {
	t.Helper()
	by := "reviewer"
	if source == store.AnswerAutoAdvance {
		by = ""
	}
	if _, err := h.st.AnswerCheckpoint(context.Background(), store.CheckpointAnswer{SessionID: sessionID(t, h.tok), CheckpointID: cp,
		Option: option, By: by, Source: source, At: h.clk.Now()}); err != nil {
		t.Fatalf("answering %s with %s: %v", cp, option, err)
	}
}
