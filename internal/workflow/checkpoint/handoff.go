package checkpoint

import (
	"context"
	"fmt"

	"sortie/internal/workflow/engine"
)

// HandoffRefusal says why an issue may not be handed to humans now, or "" when it may:
// its run (runID) is about to hand it off (how says how, for the trace). It may when
// the issue's workflow sessions, and the session the agent was told to start (workflow,
// workflows.workflow of the run's configuration; not for an agent on an SSH host, which
// is not served the workflow tools), leave no gate (workflow.Gate) without a human's
// answer. The refusal is recorded in the trace of each session concerned. When the check
// cannot be made, the hand-off is refused too: a hold costs a human a look, a hand-off
// around a checkpoint costs the checkpoint. Without an engine, nothing is refused.
func (d *Desk) HandoffRefusal(ctx context.Context, issueID, identifier string, runID int64, workflow, host, how string) string {
	if d.eng == nil {
		return ""
	}
	want := workflow
	if host != "" {
		want = "" // an agent on an SSH host is not served the workflow tools (WorkflowHint)
	}
	bs, err := d.eng.HandoffBlockers(ctx, issueID, want)
	if err != nil {
		d.log.Error("the workflow's checkpoints could not be checked before a hand-off; not handing off", "issue_identifier", identifier, "error", err)
		return fmt.Sprintf("not handed off: the workflow's checkpoints could not be checked (%v); fix the cause and move the issue on yourself, or back to an active state", err)
	}
	if len(bs) == 0 {
		return ""
	}
	why := engine.DescribeBlockers(bs)
	d.log.Warn("hand-off refused: a blocking workflow checkpoint has no human answer", "issue_identifier", identifier, "how", how, "why", why)
	d.eng.TraceHandoffRefused(ctx, engine.Caller{IssueID: issueID, Identifier: identifier, RunID: runID}, bs, how)
	return why
}
