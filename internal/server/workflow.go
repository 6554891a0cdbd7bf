package server

import (
	"context"
	"time"

	"sortie/internal/store"
	"sortie/internal/workflow/checkpoint"
	"sortie/internal/workflow/engine"
)

// The issue detail's workflow block: what a structured workflow did for the issue,
// from the store's workflow records (docs/workflows.md).

// WorkflowHistory is the part of store.Reader the issue detail reads for structured
// workflows. It is optional: when Options.Runs also has these methods (a store.Reader
// does), GET /api/v1/{identifier} fills its workflow block.
type WorkflowHistory interface {
	// IssueCheckpoints returns the newest checkpoints of an issue, oldest first.
	IssueCheckpoints(ctx context.Context, issueID string, limit int) ([]store.Checkpoint, error)
	// RunTraceEvents returns the newest workflow tool calls of a run, oldest first.
	RunTraceEvents(ctx context.Context, runID int64, limit int) ([]store.TraceEvent, error)
}

var _ WorkflowHistory = store.Reader(nil)

// Bounds of the workflow block.
const (
	issueDecisions  = 50  // the newest checkpoints listed
	pathRuns        = 10  // the newest runs whose activity path is read
	pathTraceEvents = 500 // the newest workflow tool calls read per run
	pathActivities  = 50  // the last activities kept per path
)

// issueWorkflowJSON is the workflow block of GET /api/v1/{identifier}.
type issueWorkflowJSON struct {
	// Checkpoints are the issue's checkpoint decisions, oldest first.
	Checkpoints []decisionJSON `json:"checkpoints"`
	// Runs are the activity paths of the newest runs that used a workflow, newest
	// run first.
	Runs []activityPathJSON `json:"runs"`
	// RefusedAnswers are the newest "/sortie choose" tracker comments that did not
	// answer a checkpoint because their author may not, oldest first.
	RefusedAnswers []checkpoint.RefusedAnswer `json:"refused_answers"`
}

// RefusedAnswers is implemented by a CheckpointAnswerer that remembers the tracker
// answers it refused (*checkpoint.Desk).
type RefusedAnswers interface {
	RefusedAnswers(issueID string) []checkpoint.RefusedAnswer
}

// The issue page finds it by a type assertion: keep the Desk's method in step.
var _ RefusedAnswers = (*checkpoint.Desk)(nil)

// decisionJSON is one issuance of a checkpoint: who answered what, and how the
// agent resolved it.
type decisionJSON struct {
	RunID        int64      `json:"run_id"`
	Workflow     string     `json:"workflow"`
	Activity     string     `json:"activity"`
	CheckpointID string     `json:"checkpoint_id"`
	Name         string     `json:"name"`
	IssuedAt     time.Time  `json:"issued_at"`
	Answer       string     `json:"answer"`
	AnsweredBy   string     `json:"answered_by"`
	Source       string     `json:"source"`
	AnsweredAt   *time.Time `json:"answered_at"`
	// Resolution is how the agent's respond_checkpoint cleared it (option,
	// auto_advance, condition_not_met, superseded), or abandoned when the issue left
	// the active states or was handed off first; "" while pending.
	Resolution string     `json:"resolution"`
	ResolvedAt *time.Time `json:"resolved_at"`
}

// activityPathJSON is the sequence of activities a run's agent entered.
type activityPathJSON struct {
	RunID      int64    `json:"run_id"`
	Workflow   string   `json:"workflow"`
	Activities []string `json:"activities"`
	// Truncated says older activities of the run were left out.
	Truncated bool `json:"truncated"`
}

// issueWorkflow reads the workflow block of the issue issueID whose newest runs are
// runs. It is empty when h is nil.
func issueWorkflow(ctx context.Context, h WorkflowHistory, issueID string, runs []store.Run) (issueWorkflowJSON, error) {
	out := issueWorkflowJSON{Checkpoints: []decisionJSON{}, Runs: []activityPathJSON{}}
	if h == nil {
		return out, nil
	}
	if issueID != "" {
		cps, err := h.IssueCheckpoints(ctx, issueID, issueDecisions)
		if err != nil {
			return out, err
		}
		for _, c := range cps {
			out.Checkpoints = append(out.Checkpoints, decisionJSON{
				RunID: c.RunID, Workflow: c.Workflow, Activity: c.Activity, CheckpointID: c.CheckpointID, Name: c.Name,
				IssuedAt: c.IssuedAt, Answer: c.Answer, AnsweredBy: c.AnsweredBy, Source: c.AnswerSource,
				AnsweredAt: optTime(c.AnsweredAt), Resolution: c.Resolution, ResolvedAt: optTime(c.ResolvedAt),
			})
		}
	}
	for _, r := range runs[:min(len(runs), pathRuns)] {
		events, err := h.RunTraceEvents(ctx, r.ID, pathTraceEvents)
		if err != nil {
			return out, err
		}
		if p, ok := activityPath(r.ID, events, len(events) >= pathTraceEvents); ok {
			out.Runs = append(out.Runs, p)
		}
	}
	return out, nil
}

// activityPath is the activities entered by the successful next_activity calls among
// events, keeping the last pathActivities. ok is false when the run entered none.
// cut says events may not reach back to the run's start.
func activityPath(runID int64, events []store.TraceEvent, cut bool) (activityPathJSON, bool) {
	p := activityPathJSON{RunID: runID, Activities: []string{}, Truncated: cut}
	for _, e := range events {
		if e.Tool != engine.ToolNextActivity || !e.OK || e.Activity == "" {
			continue
		}
		p.Activities = append(p.Activities, e.Activity)
		p.Workflow = e.Workflow
	}
	if n := len(p.Activities); n > pathActivities {
		p.Activities = p.Activities[n-pathActivities:]
		p.Truncated = true
	}
	return p, len(p.Activities) > 0
}
