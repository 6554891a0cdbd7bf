package checkpoint

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"sortie/internal/config"
	"sortie/internal/store"
)

// CommentPrefix starts every checkpoint comment.
const CommentPrefix = "Sortie checkpoint:"

// Question is the hold message of an issue held at cp: its question and its options.
func Question(cp store.Checkpoint) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s\nOptions: ", cp.Name, cp.Message)
	for i, op := range cp.Options {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s (%s)", op.ID, op.Label)
	}
	return b.String()
}

// Question is the hold message of an issue held at cp (the function Question).
func (d *Desk) Question(cp store.Checkpoint) string { return Question(cp) }

// Comment is the tracker comment that asks a human to answer cp, a checkpoint of the
// issue identifier, under the configuration in force.
func (d *Desk) Comment(cp store.Checkpoint, identifier string) string {
	return comment(cp, identifier, d.dashboardURL(identifier), CommentsAnswer(d.opts.Config()))
}

// CommentsAnswer reports whether a "/sortie choose" comment can answer a checkpoint
// under the configuration in force (the function CommentsAnswer).
func (d *Desk) CommentsAnswer() bool { return CommentsAnswer(d.opts.Config()) }

// dashboardURL is where a human answers, "" when unknown.
func (d *Desk) dashboardURL(identifier string) string {
	if d.opts.DashboardURL == "" {
		return ""
	}
	return strings.TrimSuffix(d.opts.DashboardURL, "/") + "/issues/" + url.PathEscape(identifier)
}

// CommentsAnswer reports whether a "/sortie choose" comment on cfg's tracker can answer
// a checkpoint: never with the file tracker (AnswerRefusal), whose issues file anything
// on the machine may write.
func CommentsAnswer(cfg *config.Config) bool { return cfg.Tracker.Kind != "file" }

// comment is the tracker comment that asks a human to answer: with a "/sortie choose"
// reply when the tracker's comments can answer (byComment), else on the dashboard or
// through the API, which it names.
func comment(cp store.Checkpoint, identifier, link string, byComment bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s\n\n%s\n\nOptions:\n", CommentPrefix, cp.Name, cp.Message)
	for _, op := range cp.Options {
		fmt.Fprintf(&b, "- %s: %s", op.ID, op.Label)
		if op.Description != "" {
			fmt.Fprintf(&b, " (%s)", op.Description)
		}
		b.WriteByte('\n')
	}
	example := "<option>"
	if len(cp.Options) > 0 {
		example = cp.Options[0].ID
	}
	switch {
	case byComment:
		fmt.Fprintf(&b, "\nTo answer, reply with a comment whose first line is: /sortie choose <option>")
		if len(cp.Options) > 0 {
			fmt.Fprintf(&b, " (for example: /sortie choose %s)", example)
		}
		if link != "" {
			fmt.Fprintf(&b, "\nOr answer on the dashboard: %s", link)
		}
	default:
		b.WriteString("\nComments on this tracker do not answer checkpoints. To answer, ")
		if link != "" {
			fmt.Fprintf(&b, "choose an option on the dashboard: %s\nOr ", link)
		}
		fmt.Fprintf(&b, "send POST /api/v1/%s/checkpoints/%s with {\"option_id\": %q} and the operator token (Authorization: Bearer $(sortie status --token)).",
			url.PathEscape(identifier), url.PathEscape(cp.CheckpointID), example)
	}
	if at, ok := cp.AutoAdvanceAt(); ok {
		fmt.Fprintf(&b, "\nWithout an answer, Sortie chooses %s at %s.", cp.DefaultOption, at.UTC().Format(time.RFC3339))
	}
	return b.String()
}

// AnswerNote tells a resumed agent the answers to its pending checkpoints, and its
// newest session token; "" when there is nothing to say.
func (d *Desk) AnswerNote(ctx context.Context, issueID string) string {
	var answered []store.Checkpoint
	for _, c := range d.rows(issueID) {
		if c.Answered() {
			answered = append(answered, c)
		}
	}
	if len(answered) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("## Checkpoint answers\n\n")
	for _, c := range answered {
		who := c.AnsweredBy
		if c.AnswerSource == store.AnswerAutoAdvance {
			fmt.Fprintf(&b, "- Checkpoint %q (activity %s) auto-advanced to its default option %q: call respond_checkpoint(checkpoint_id=%q, auto_advance=true).\n",
				c.CheckpointID, c.Activity, c.Answer, c.CheckpointID)
			continue
		}
		fmt.Fprintf(&b, "- Checkpoint %q (activity %s) was answered by %s: option %q. Call respond_checkpoint(checkpoint_id=%q, option_id=%q).\n",
			c.CheckpointID, c.Activity, who, c.Answer, c.CheckpointID, c.Answer)
	}
	if tok := d.newestToken(ctx, answered[0].SessionID); tok != "" {
		fmt.Fprintf(&b, "\nYour newest workflow session_token is:\n%s\n", tok)
	}
	b.WriteString("\nThen continue the workflow from the checkpoint's activity, following the chosen option's effect.\n")
	return b.String()
}

// newestToken is the newest token of workflow session sid, "" when unknown.
func (d *Desk) newestToken(ctx context.Context, sid string) string {
	sessions, err := d.opts.Store.LoadWorkflowSessions(ctx)
	if err != nil {
		d.log.Warn("reading workflow sessions failed", "error", err)
		return ""
	}
	for _, s := range sessions {
		if s.SessionID == sid {
			return s.Token
		}
	}
	return ""
}

// WorkflowHint adds to a run's first prompt (rendered) the workflow workflows.workflow
// names (workflow), when the workflow tools are served to the run: not to agents on SSH
// hosts (host not ""), which cannot reach the daemon's agent socket.
func (d *Desk) WorkflowHint(workflow, host, rendered string) string {
	if workflow == "" || host != "" {
		return rendered
	}
	id := workflow
	return strings.TrimRight(rendered, " \t\r\n") + "\n\n## Structured workflow\n\n" +
		fmt.Sprintf("Work through this issue with the workflow %q of the workflow tools. If you have no workflow session for this issue yet, "+
			"call start_session(workflow_id=%q) and follow the bootstrap it describes; otherwise continue your session with your newest session_token. "+
			"When an activity has a checkpoint, read it with get_checkpoint and end your turn: a human answers it, and you are resumed with the answer.\n", id, id)
}
