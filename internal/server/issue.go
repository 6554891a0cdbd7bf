package server

import (
	"net/http"
	"time"

	"sortie/internal/orchestrator"
	"sortie/internal/store"
	"sortie/internal/workflow/checkpoint"
)

// Bounds of the issue detail.
const (
	issueRuns   = 20  // the newest runs listed
	issueEvents = 100 // the newest events of the latest run
)

// Issue statuses of the issue detail, in the order they are decided.
const (
	issueRunning       = "running"
	issueRetrying      = "retrying"
	issueAwaitingInput = "awaiting_input"
	issueHeld          = "held"
	issueIdle          = "idle" // known only from history
)

// issueBody is GET /api/v1/{identifier}.
type issueBody struct {
	Identifier string                 `json:"issue_identifier"`
	IssueID    string                 `json:"issue_id"`
	Status     string                 `json:"status"`
	Running    *runningJSON           `json:"running"`
	Retry      *retryJSON             `json:"retry"`
	Hold       *orchestrator.HeldView `json:"hold"`
	Workspace  workspaceJSON          `json:"workspace"`
	// LastError is the retry's error, or else the latest run's; "" when neither failed.
	LastError string    `json:"last_error"`
	Runs      []runJSON `json:"runs"`
	// RecentEvents are the newest events of the latest run, oldest first;
	// RecentEventsRunID names that run (null when the issue has no run yet).
	RecentEvents      []eventJSON `json:"recent_events"`
	RecentEventsRunID *int64      `json:"recent_events_run_id"`
	// Workflow is what structured workflows did for the issue: its checkpoint
	// decisions and its runs' activity paths (empty lists without workflows).
	Workflow issueWorkflowJSON `json:"workflow"`
}

type workspaceJSON struct {
	Path string `json:"path"`
}

// eventJSON is one stored event of a run.
type eventJSON struct {
	Time    time.Time `json:"time"`
	Type    string    `json:"type"`
	Message string    `json:"message"`
}

// handleIssue is GET /api/v1/{identifier}: what the scheduler and the history know of
// one issue. 404 issue_not_found when neither knows it.
func (s *Server) handleIssue(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("identifier")
	notFound := func() {
		writeError(w, http.StatusNotFound, codeIssueNotFound,
			"no issue "+clip(id)+" is running, retrying, held or in the run history")
	}
	if id == "" || len(id) > maxIdentifierLen {
		notFound()
		return
	}
	snap, err := s.snapshot(r.Context())
	if err != nil {
		s.snapshotFailed(w, r, err)
		return
	}
	now := s.snapshotTime(snap)
	out := issueBody{Identifier: id, Status: issueIdle, Runs: []runJSON{}, RecentEvents: []eventJSON{},
		Workflow: issueWorkflowJSON{Checkpoints: []decisionJSON{}, Runs: []activityPathJSON{}, RefusedAnswers: []checkpoint.RefusedAnswer{}}}
	known := false
	// Decide the status from the most to the least active; an issue is in at most one
	// of running and retrying, but may also be held.
	for i := range snap.Held {
		if h := snap.Held[i]; h.Identifier == id {
			known, out.Hold, out.IssueID = true, &h, h.IssueID
			out.Status = issueHeld
			if waitsForAnswer(h.Reason) {
				out.Status = issueAwaitingInput
			}
		}
	}
	for _, v := range snap.Retrying {
		if v.Identifier == id {
			rj := retryOf(v, now)
			known, out.Retry, out.IssueID, out.Status = true, &rj, v.IssueID, issueRetrying
			out.LastError = v.Error
		}
	}
	for _, v := range snap.Running {
		if v.Identifier == id {
			rj := runningOf(v, now)
			known, out.Running, out.IssueID, out.Status = true, &rj, v.IssueID, issueRunning
			out.Workspace.Path = v.Workspace
		}
	}

	if s.opts.Runs != nil {
		runs, err := s.opts.Runs.RunsForIdentifier(r.Context(), id, issueRuns)
		if err != nil {
			s.storeFailed(w, r, err)
			return
		}
		if len(runs) > 0 {
			known = true
			latest := runs[0]
			if out.IssueID == "" {
				out.IssueID = latest.IssueID
			}
			if out.Workspace.Path == "" {
				out.Workspace.Path = latest.Workspace
			}
			if out.LastError == "" && latest.Status != store.StatusRunning {
				out.LastError = latest.Error
			}
			out.RecentEventsRunID = &latest.ID
			events, err := s.opts.Runs.RunEvents(r.Context(), latest.ID, issueEvents)
			if err != nil {
				s.storeFailed(w, r, err)
				return
			}
			for _, e := range events {
				out.RecentEvents = append(out.RecentEvents, eventJSON{Time: e.Time, Type: e.Type, Message: e.Message})
			}
		}
		out.Runs = runsOf(runs, s.now())
		for i := range out.Runs {
			out.Runs[i].ReviewMetadata = reviewMetadataOf(runs[i].ReviewMetadata)
		}
		if wh, ok := s.opts.Runs.(WorkflowHistory); ok {
			out.Workflow, err = issueWorkflow(r.Context(), wh, out.IssueID, runs)
			if err != nil {
				s.storeFailed(w, r, err)
				return
			}
		}
		out.Workflow.RefusedAnswers = []checkpoint.RefusedAnswer{}
		if ra, ok := s.opts.Checkpoints.(RefusedAnswers); ok && out.IssueID != "" {
			if list := ra.RefusedAnswers(out.IssueID); len(list) > 0 {
				out.Workflow.RefusedAnswers = list
			}
		}
	}
	if !known {
		notFound()
		return
	}
	writeJSON(w, http.StatusOK, out)
}
