package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"sortie/internal/agent"
	"sortie/internal/selfreview"
	"sortie/internal/store"
	"sortie/internal/workspace"
)

// selfReview runs the self-review loop (self_review:, docs/reactions.md#self-review)
// after the run's turns, before the hand-off: the diff and the verification commands,
// confined as hooks after an agent are, go back to the agent in review turns on the
// same session until it writes a pass verdict or max_iterations is reached. It runs
// only when the agent is done and the issue still active: not after blocked, a budget,
// a checkpoint, or a failure. done is false when the run ends here instead (cancelled,
// a failed turn): ex is then the run's exit.
func (w *worker) selfReview(ctx context.Context, ex *workerExit) (done bool) {
	cfg := w.cfg
	if !cfg.SelfReview.Enabled || w.mgr == nil || w.e.host != "" ||
		ex.softStop == "blocked" || ex.budgetStop != "" || ex.awaiting != nil || !isActive(cfg, ex.lastState) {
		return true
	}
	o := w.o
	wsIssue := workspace.Issue{ID: w.issue.ID, Identifier: w.issue.Identifier}
	var turnErr error
	res, err := selfreview.Run(ctx, selfreview.Params{
		Config:    cfg.SelfReview,
		Workspace: w.ws.Path,
		Task:      w.issue.Identifier + ": " + w.issue.Title,
		Run: func(ctx context.Context, name, script string, timeout time.Duration) (workspace.CommandResult, error) {
			return w.mgr.Verify(ctx, name, script, w.ws, wsIssue, timeout)
		},
		Turn: func(ctx context.Context, text string) error {
			w.flush(ctx, true)
			ex.turns++
			w.e.progress.mu.Lock()
			w.e.progress.turn = ex.turns
			w.e.progress.mu.Unlock()
			res, timedOut, err := w.turn(ctx, ex.turns, text, ex)
			switch {
			case ctx.Err() != nil:
				turnErr = ctx.Err()
			case w.budgetHit != "":
				ex.budgetStop = w.budgetHit
				turnErr = errors.New("stopped by a budget: " + w.budgetHit)
			case timedOut:
				turnErr = agent.Errorf(agent.ErrTurnTimeout, "self-review turn exceeded agent.turn_timeout_ms (%s)", cfg.Agent.TurnTimeout)
			case err != nil:
				turnErr = err
			case res.ExitReason != "" && res.ExitReason != agent.EventTurnCompleted:
				turnErr = agent.Errorf(agent.ErrTurnFailed, "self-review turn ended with %s", res.ExitReason)
			}
			if turnErr != nil {
				return turnErr
			}
			// Between turns, as between the run's own: a budget used up, or a
			// checkpoint only a human can answer, ends the loop.
			if why := w.budgetExceeded(*ex); why != "" {
				ex.budgetStop = why
				turnErr = errors.New("stopped by a budget: " + why)
			} else if cp, ok := o.awaitingCheckpoint(w.issue.ID); ok {
				ex.awaiting = &cp
				turnErr = errors.New("waiting for a human's answer to checkpoint " + cp.CheckpointID)
			}
			return turnErr
		},
		Stopped: func() bool {
			st, err := workspace.ReadStatus(w.ws.Path)
			if err == nil && st.Kind == workspace.StatusBlocked {
				ex.softStop = string(st.Value)
				return true
			}
			return false
		},
		Progress: func(i int) {
			w.e.progress.mu.Lock()
			w.e.progress.selfReview = i
			w.e.progress.mu.Unlock()
			o.log.Info("self-review", "issue_identifier", w.issue.Identifier, "iteration", i, "of", cfg.SelfReview.MaxIterations)
		},
	})
	w.e.progress.mu.Lock()
	w.e.progress.selfReview = 0
	w.e.progress.mu.Unlock()
	w.reviewStatus = res.Status()
	ex.reviewMetadata = w.boundedReviewMetadata(res)
	if werr := workspace.WriteFileAtomic(w.ws.Path, selfreview.SummaryFile, []byte(res.Summary())); werr != nil {
		o.log.Warn("writing the self-review summary failed", "issue_identifier", w.issue.Identifier, "error", werr)
	}
	o.report(Activity{Kind: ActivitySelfReview, IssueID: w.issue.ID, Identifier: w.issue.Identifier, RunID: w.runID,
		Result: w.reviewStatus, Message: fmt.Sprintf("%d iteration(s), verdict %s", res.TotalIterations, res.FinalVerdict)})
	if err == nil || ex.budgetStop != "" || ex.awaiting != nil {
		return true
	}
	switch {
	case ctx.Err() != nil:
		*ex = w.cancelled(*ex)
	case turnErr != nil:
		*ex = w.fail(*ex, turnErr)
	default:
		// The loop itself could not go on (a verification command could not be run):
		// the agent's work stands; hand it off with the result recorded.
		o.log.Warn("self-review ended early", "issue_identifier", w.issue.Identifier, "error", err)
		return true
	}
	return false
}

// boundedReviewMetadata is res as the run's review_metadata, within the store's
// bound: when the whole result is too large, the commands' output tails and the raw
// verdicts go first, then the iterations, keeping the outcome. Said when it shrinks.
func (w *worker) boundedReviewMetadata(res selfreview.Result) string {
	b, err := json.Marshal(res)
	if err == nil && len(b) <= store.MaxReviewMetadataBytes {
		return string(b)
	}
	full := len(b)
	lean := res
	lean.Iterations = make([]selfreview.Iteration, len(res.Iterations))
	for i, it := range res.Iterations {
		it.VerdictRaw = ""
		it.VerificationResults = slices.Clone(it.VerificationResults)
		for j := range it.VerificationResults {
			it.VerificationResults[j].OutputTail = ""
		}
		lean.Iterations[i] = it
	}
	if b, err = json.Marshal(lean); err != nil || len(b) > store.MaxReviewMetadataBytes {
		lean.Iterations = nil
		b, err = json.Marshal(lean)
	}
	if err != nil {
		w.o.log.Error("recording the self-review result failed", "issue_identifier", w.issue.Identifier, "error", err)
		return ""
	}
	w.o.log.Warn("the self-review result was too large for the run history; recorded without its command output",
		"issue_identifier", w.issue.Identifier, "bytes", full, "recorded", len(b))
	return string(b)
}
