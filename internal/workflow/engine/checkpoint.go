package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"sortie/internal/store"
	"sortie/internal/workflow"
)

type stepEntry struct {
	StepID string `json:"step_id"`
	Output string `json:"output"`
}

type activityEntry struct {
	ActivityID          string `json:"activity_id"`
	Outcome             string `json:"outcome"`
	TransitionCondition string `json:"transition_condition"`
}

func (c *call) nextActivity(args json.RawMessage) (any, error) {
	var a struct {
		SessionToken        string           `json:"session_token"`
		ActivityID          string           `json:"activity_id"`
		TransitionCondition string           `json:"transition_condition"`
		StepManifest        *[]stepEntry     `json:"step_manifest"`
		ActivityManifest    *[]activityEntry `json:"activity_manifest"`
	}
	w, err := c.begin(args, &a, &a.SessionToken, false)
	if err != nil {
		return nil, err
	}
	if a.ActivityID == "" {
		return nil, fail(KindInvalidInput, "activity_id: missing; pass initialActivity (%s) or one of the current activity's transitions", initial(w))
	}
	p := c.in
	if len(p.Pending) > 0 && a.ActivityID != p.Activity {
		return nil, fail(KindCheckpointsPending, "Cannot enter activity %q: %d checkpoint(s) of activity %q are unresolved %q. %s",
			a.ActivityID, len(p.Pending), p.Activity, p.Pending, c.e.resolveHints(w, p.Activity, p.Pending))
	}
	act, ok := w.Activity(a.ActivityID)
	if !ok {
		var ids []string
		for _, x := range w.Activities {
			ids = append(ids, x.ID)
		}
		return nil, fail(KindActivityNotFound, "Activity %q not found in workflow %q (activities: %s)", a.ActivityID, w.ID, strings.Join(ids, ", "))
	}
	if err := c.checkTransition(w, p.Activity, act.ID, a.TransitionCondition); err != nil {
		return nil, err
	}
	if prev, ok := w.Activity(p.Activity); ok {
		c.checkSkillAssociation(prev, p.Skill)
		c.checkSteps(prev, a.StepManifest)
	}
	if a.ActivityManifest != nil {
		c.checkActivities(w, *a.ActivityManifest)
	}

	now := c.e.o.Now()
	next := *p
	// skill is the skill loaded in the current activity: entering one starts afresh,
	// so the skill-association check of the next transition looks at this one only.
	next.Activity, next.Cond, next.Skill = act.ID, a.TransitionCondition, ""
	next.Pending, next.PendingAt = nil, 0
	var armed []store.Checkpoint
	for _, cp := range act.Checkpoints {
		if !cp.Required {
			continue
		}
		next.Pending = append(next.Pending, cp.ID)
		armed = append(armed, c.storeCheckpoint(w, act, cp, now))
	}
	if len(next.Pending) > 0 {
		next.PendingAt = now.Unix()
	}
	rows, err := c.e.o.State.ArmCheckpoints(c.ctx, p.SessionID, armed)
	if err != nil {
		return nil, fail(KindStateUnavailable, "recording the activity's checkpoints failed (%v); retry next_activity with the same session_token", err)
	}
	if err := c.issue(next); err != nil {
		return nil, err
	}
	// The trace segment closes before this call's own event, as upstream, and only
	// once the call has succeeded, so a failed call loses no events.
	c.traceToken = c.e.traceToken(p.SessionID, act.ID, now)
	c.activityForLog = act.ID
	c.detail = "→ " + act.ID
	if p.Activity != "" {
		c.detail = p.Activity + " → " + act.ID
	}
	body, err := toMap(act)
	if err != nil {
		return nil, err
	}
	if len(next.Pending) > 0 {
		body["pending_checkpoints"] = next.Pending
		body["checkpoint_instructions"] = c.e.checkpointInstructions(next.Pending)
	}
	if c.traceToken != "" {
		body["trace_token"] = c.traceToken
	}
	if h := c.e.o.Hooks.Armed; len(rows) > 0 && h != nil {
		caller := c.caller
		c.later(func() { h(caller, rows) })
	}
	return c.withToken(body), nil
}

// storeCheckpoint is the record of one issuance.
func (c *call) storeCheckpoint(w *workflow.Workflow, act *workflow.Activity, cp workflow.Checkpoint, now time.Time) store.Checkpoint {
	opts := make([]store.CheckpointOption, len(cp.Options))
	for i, o := range cp.Options {
		opts[i] = store.CheckpointOption{ID: o.ID, Label: o.Label, Description: o.Description}
	}
	return store.Checkpoint{SessionID: c.in.SessionID, IssueID: c.caller.IssueID, Identifier: c.caller.Identifier, RunID: c.caller.RunID,
		Workflow: w.ID, Activity: act.ID, CheckpointID: cp.ID, Name: cp.Name, Message: cp.Message, Options: opts,
		Blocking: cp.Blocking, DefaultOption: cp.DefaultOption, AutoAdvanceMS: cp.AutoAdvanceMs, Conditional: cp.Condition != nil,
		IssuedAt: now}
}

func (e *Engine) checkpointInstructions(pending []string) string {
	if e.o.Humans {
		return fmt.Sprintf("Checkpoint(s) %q need a human decision. Finish the work this activity asks for, read each with get_checkpoint, then END YOUR TURN: "+
			"Sortie shows the checkpoint to a human and resumes you with the answer. Then call respond_checkpoint with exactly the option_id the human chose. "+
			"A conditional checkpoint whose condition is false can be dismissed with condition_not_met: true.", pending)
	}
	return fmt.Sprintf("Checkpoint(s) %q must be resolved with respond_checkpoint before you enter another activity: present each (get_checkpoint) to the user "+
		"and respond with the option they choose.", pending)
}

// resolveHints tells the agent how to resolve each pending checkpoint.
func (e *Engine) resolveHints(w *workflow.Workflow, activity string, pending []string) string {
	act, _ := w.Activity(activity)
	var hints []string
	for _, id := range pending {
		cp := findCheckpoint(act, id)
		switch {
		case cp == nil:
			hints = append(hints, fmt.Sprintf("%s: respond_checkpoint(checkpoint_id=%q, option_id=…)", id, id))
		case cp.Condition != nil:
			hints = append(hints, fmt.Sprintf("%s: an option (%s), or condition_not_met: true if its condition is false", id, optionIDs(cp)))
		case !cp.Blocking && cp.DefaultOption != "" && cp.AutoAdvanceMs > 0:
			hints = append(hints, fmt.Sprintf("%s: an option (%s), or auto_advance: true once %d ms have passed since it was issued", id, optionIDs(cp), cp.AutoAdvanceMs))
		case e.o.Humans:
			hints = append(hints, fmt.Sprintf("%s: the option a human chooses (%s); end your turn and Sortie resumes you with it", id, optionIDs(cp)))
		default:
			hints = append(hints, fmt.Sprintf("%s: the option the user chooses (%s)", id, optionIDs(cp)))
		}
	}
	return "Resolve with respond_checkpoint: " + strings.Join(hints, "; ") + "."
}

func findCheckpoint(a *workflow.Activity, id string) *workflow.Checkpoint {
	if a == nil {
		return nil
	}
	for i := range a.Checkpoints {
		if a.Checkpoints[i].ID == id {
			return &a.Checkpoints[i]
		}
	}
	return nil
}

func optionIDs(cp *workflow.Checkpoint) string {
	ids := make([]string, len(cp.Options))
	for i, o := range cp.Options {
		ids[i] = o.ID
	}
	return strings.Join(ids, ", ")
}

func (c *call) getCheckpoint(args json.RawMessage) (any, error) {
	var a struct {
		SessionToken string `json:"session_token"`
		ActivityID   string `json:"activity_id"`
		CheckpointID string `json:"checkpoint_id"`
	}
	w, err := c.begin(args, &a, &a.SessionToken, false)
	if err != nil {
		return nil, err
	}
	act, ok := w.Activity(a.ActivityID)
	if !ok {
		return nil, fail(KindActivityNotFound, "Activity %q not found in workflow %q", a.ActivityID, w.ID)
	}
	cp := findCheckpoint(act, a.CheckpointID)
	if cp == nil {
		var ids []string
		for _, x := range act.Checkpoints {
			ids = append(ids, x.ID)
		}
		return nil, fail(KindCheckpointNotFound, "Checkpoint %q not found in activity %q (checkpoints: %s)", a.CheckpointID, act.ID, strings.Join(ids, ", "))
	}
	body, err := toMap(cp)
	if err != nil {
		return nil, err
	}
	pending := a.ActivityID == c.in.Activity && slices.Contains(c.in.Pending, cp.ID)
	body["pending"] = pending
	if pending && c.e.o.Humans {
		row, found, err := c.e.pendingRow(c, cp.ID)
		if err != nil {
			return nil, err
		}
		switch {
		case found && row.Answered():
			body["human_answer"] = map[string]any{"option_id": row.Answer, "answered_by": row.AnsweredBy, "source": row.AnswerSource}
			body["next"] = fmt.Sprintf("Call respond_checkpoint(checkpoint_id=%q, option_id=%q).", cp.ID, row.Answer)
		default:
			body["awaiting_human"] = true
			body["next"] = "A human has not answered yet. Finish what the activity asks, then end your turn; Sortie resumes you with the answer."
		}
	}
	// Reading a checkpoint does not move the session (the upstream act-switch hole).
	if err := c.issue(*c.in); err != nil {
		return nil, err
	}
	c.detail = act.ID + "/" + cp.ID
	return c.withToken(body), nil
}

// pendingRow returns the stored pending issuance of checkpoint id in c's session.
func (e *Engine) pendingRow(c *call, id string) (store.Checkpoint, bool, error) {
	rows, err := e.o.State.PendingCheckpoints(c.ctx)
	if err != nil {
		return store.Checkpoint{}, false, fail(KindStateUnavailable, "reading the checkpoint's answer failed (%v); retry with the same session_token", err)
	}
	for _, r := range rows {
		if r.SessionID == c.in.SessionID && r.CheckpointID == id {
			return r, true, nil
		}
	}
	return store.Checkpoint{}, false, nil
}

func (c *call) respondCheckpoint(args json.RawMessage) (any, error) {
	var a struct {
		SessionToken    string  `json:"session_token"`
		CheckpointID    string  `json:"checkpoint_id"`
		OptionID        *string `json:"option_id"`
		AutoAdvance     *bool   `json:"auto_advance"`
		ConditionNotMet *bool   `json:"condition_not_met"`
	}
	w, err := c.begin(args, &a, &a.SessionToken, false)
	if err != nil {
		return nil, err
	}
	// Exactly one mode, and a mode is only ever "true" or a non-empty option: the
	// upstream server took {auto_advance:false} as a mode that checked nothing.
	modes := 0
	for _, present := range []bool{a.OptionID != nil, a.AutoAdvance != nil, a.ConditionNotMet != nil} {
		if present {
			modes++
		}
	}
	switch {
	case modes != 1:
		return nil, fail(KindInvalidInput, "Exactly one of option_id, auto_advance or condition_not_met must be given (got %d)", modes)
	case a.OptionID != nil && *a.OptionID == "":
		return nil, fail(KindInvalidInput, "option_id: empty; pass the id of the chosen option")
	case a.AutoAdvance != nil && !*a.AutoAdvance:
		return nil, fail(KindInvalidInput, "auto_advance: false is not a way to resolve a checkpoint; pass auto_advance: true, or another mode")
	case a.ConditionNotMet != nil && !*a.ConditionNotMet:
		return nil, fail(KindInvalidInput, "condition_not_met: false is not a way to resolve a checkpoint; pass condition_not_met: true, or another mode")
	}
	p := c.in
	if !slices.Contains(p.Pending, a.CheckpointID) {
		pend := "none"
		if len(p.Pending) > 0 {
			pend = strings.Join(p.Pending, ", ")
		}
		return nil, fail(KindCheckpointNotPending, "Checkpoint %q is not pending. Pending checkpoints: %s", a.CheckpointID, pend)
	}
	act, _ := w.Activity(p.Activity)
	cp := findCheckpoint(act, a.CheckpointID)
	if cp == nil {
		return nil, fail(KindCheckpointNotFound, "Checkpoint %q is no longer defined in activity %q (the workflow changed); call next_activity(%q) to reload it", a.CheckpointID, p.Activity, p.Activity)
	}
	now := c.e.o.Now()
	elapsed := time.Duration(now.Unix()-p.PendingAt) * time.Second
	var row store.Checkpoint
	var haveRow bool
	if c.e.o.Humans {
		if row, haveRow, err = c.e.pendingRow(c, cp.ID); err != nil {
			return nil, err
		}
	}
	body := map[string]any{"checkpoint_id": cp.ID, "resolved": true}
	var resolution string
	switch {
	case a.OptionID != nil:
		opt, ok := cp.Option(*a.OptionID)
		if !ok {
			return nil, fail(KindInvalidOption, "Invalid option %q for checkpoint %q. Valid options: %s", *a.OptionID, cp.ID, optionIDs(cp))
		}
		if c.e.o.Humans {
			switch {
			case !haveRow || !row.Answered():
				return nil, fail(KindAwaitingHuman, "Checkpoint %q awaits a human answer. Finish what the activity asks, then end your turn now: Sortie shows the checkpoint to a human and resumes you with the option they choose", cp.ID)
			case row.Answer != opt.ID:
				return nil, fail(KindWrongOption, "Checkpoint %q was answered with %q by %s, not %q: respond with option_id %q", cp.ID, row.Answer, row.AnsweredBy, opt.ID, row.Answer)
			}
		} else if min := c.e.o.MinResponse; min > 0 && elapsed < min {
			return nil, fail(KindTooEarly, "Checkpoint response too fast (%s < %s minimum since the checkpoint was issued). Present the checkpoint to the user and respond with their choice", elapsed, min)
		}
		body["resolved_option"] = opt.ID
		if opt.Effect != nil {
			body["effect"] = opt.Effect
		}
		resolution = store.ResolvedOption
		c.detail = fmt.Sprintf("%s: %s", cp.ID, opt.ID)
		if haveRow && row.AnsweredBy != "" {
			c.detail += " (by " + row.AnsweredBy + ")"
		}
	case a.AutoAdvance != nil:
		if cp.Blocking {
			return nil, fail(KindModeNotAllowed, "Cannot auto-advance blocking checkpoint %q: it needs an option_id chosen by a human", cp.ID)
		}
		if cp.DefaultOption == "" || cp.AutoAdvanceMs <= 0 {
			return nil, fail(KindModeNotAllowed, "Cannot auto-advance checkpoint %q: it has no defaultOption and autoAdvanceMs", cp.ID)
		}
		opt, ok := cp.Option(cp.DefaultOption)
		if !ok {
			return nil, fail(KindInvalidOption, "Checkpoint %q's defaultOption %q is not one of its options", cp.ID, cp.DefaultOption)
		}
		if haveRow && row.Answered() && row.AnswerSource != store.AnswerAutoAdvance {
			return nil, fail(KindWrongOption, "Checkpoint %q was answered with %q by %s: respond with option_id %q", cp.ID, row.Answer, row.AnsweredBy, row.Answer)
		}
		need := time.Duration((cp.AutoAdvanceMs+999)/1000) * time.Second
		if elapsed < need {
			return nil, fail(KindTimerNotElapsed, "Auto-advance timer not elapsed for checkpoint %q: %s of %s have passed; wait %s more", cp.ID, elapsed, need, need-elapsed)
		}
		body["resolved_option"] = opt.ID
		body["auto_advanced"] = true
		if opt.Effect != nil {
			body["effect"] = opt.Effect
		}
		resolution = store.ResolvedAutoAdvance
		c.detail = fmt.Sprintf("%s: %s (auto-advance)", cp.ID, opt.ID)
	default:
		if cp.Condition == nil {
			return nil, fail(KindModeNotAllowed, "Cannot dismiss checkpoint %q with condition_not_met: it has no condition field", cp.ID)
		}
		body["dismissed"] = true
		resolution = store.ResolvedConditionNot
		c.detail = cp.ID + ": dismissed (condition not met)"
	}
	next := *p
	next.Pending = slices.DeleteFunc(slices.Clone(p.Pending), func(id string) bool { return id == cp.ID })
	if len(next.Pending) == 0 {
		next.PendingAt = 0
	}
	resolved, err := c.e.o.State.ResolveCheckpoint(c.ctx, p.SessionID, cp.ID, resolution, now)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, fail(KindStateUnavailable, "recording the response failed (%v); retry with the same session_token", err)
	}
	if err := c.issue(next); err != nil {
		return nil, err
	}
	body["remaining_checkpoints"] = next.Pending
	if h := c.e.o.Hooks.Resolved; err == nil && h != nil {
		caller := c.caller
		c.later(func() { h(caller, resolved) })
	}
	return c.withToken(body), nil
}
