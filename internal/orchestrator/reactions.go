package orchestrator

import (
	"context"
	"regexp"
	"strconv"
	"strings"

	"sortie/internal/config"
	"sortie/internal/tracker"
)

// Reactions watches the pull requests of handed-off issues and offers the reactions
// it decides on (internal/reactions: a CI failure or a change request going back to
// the agent). The scheduler runs a reaction under its own rules or defers it.
type Reactions interface {
	// Watch starts (or restarts) watching an issue a run just handed off. It must not
	// block: it is called on the loop.
	Watch(h HandOff)
	// Forget stops watching an issue; terminal: the issue is finished, forget its
	// reaction history too. It must not block.
	Forget(issueID string, terminal bool)
	// Due has a value when Next may have a reaction; the loop selects on it.
	Due() <-chan struct{}
	// Next takes the oldest reaction offered.
	Next() (Reaction, bool)
	// Dispatched records, once for every daemon and restart, that r's run starts now;
	// false: it must not start.
	Dispatched(ctx context.Context, r Reaction) bool
	// Deferred gives r back: it could not run now (why).
	Deferred(r Reaction, why string)
	// Ended says r's run ended without handing the issue off again; started is false
	// when the agent never got the failure (the run failed before its first turn), so
	// the dispatch is taken back. It must not block.
	Ended(r Reaction, started bool)
}

// HandOff is an issue a run handed to humans: what reactions need to find its pull
// request and resume its session.
type HandOff struct {
	IssueID, Identifier string
	Workspace           string
	SessionID           string
	Host                string // the SSH host the run used, "" for a local run
}

// Reaction is one reaction to run: the issue's session SessionID resumed, with Vars
// (ci_failure or review_comments) in its first prompt, and Section appended to that
// prompt when the template does not use them.
type Reaction struct {
	IssueID, Identifier string
	Kind                string // ci or review
	Fingerprint         string
	SessionID           string
	Workspace           string
	PR                  int64
	Vars                map[string]any
	Section             string
}

// react dispatches the reactions offered, or defers those that cannot run now.
func (o *Orchestrator) react(ctx context.Context) {
	cfg := o.opts.Config()
	for {
		r, ok := o.opts.Reactions.Next()
		if !ok {
			return
		}
		if why := o.dispatchReaction(ctx, cfg, r); why != "" {
			o.opts.Reactions.Deferred(r, why)
		}
	}
}

// dispatchReaction starts the run of reaction r when the issue's rules allow it, and
// says why not otherwise. A reaction is a run like any other: it needs a free slot,
// the issue's budgets and max_sessions, no hold, and (in a cluster) the issue's claim.
func (o *Orchestrator) dispatchReaction(ctx context.Context, cfg *config.Config, r Reaction) string {
	// A handed-off issue is no candidate: the figures its budgets are checked against
	// are read for it now (the loop forgets them at the next poll).
	o.loadBudgets(ctx, cfg, []string{r.IssueID})
	switch {
	case o.draining:
		return "shutting down"
	case o.running[r.IssueID] != nil:
		return "the issue is running"
	case o.retrying[r.IssueID] != nil:
		return "the issue waits for a retry"
	case o.holds[r.IssueID] != nil:
		return "the issue is held for a human (" + o.holds[r.IssueID].reason + ")"
	case o.overBudget(cfg, r.IssueID):
		return "the issue has used its budget"
	case o.globalSlots(cfg) <= 0:
		return "no free agent slot"
	}
	target := reactionState(cfg)
	if target == "" {
		return "no active state to move the issue back to"
	}
	if o.stateSlots(cfg, target) <= 0 {
		return "no free agent slot in state " + target
	}
	host, ok := o.pickHost(cfg, "")
	if !ok {
		return "no SSH host with a free slot"
	}
	if c := o.claim(ctx, cfg, r.IssueID, r.Identifier, target); !c.OK {
		return "not this daemon's to run: " + c.Why
	}
	if !o.opts.Reactions.Dispatched(ctx, r) {
		o.unclaim(ctx, r.IssueID)
		return ""
	}
	is := tracker.Issue{ID: r.IssueID, Identifier: r.Identifier, State: cfg.Tracker.HandoffState}
	o.log.Info("reacting to the handed-off issue's pull request", "issue_identifier", r.Identifier, "kind", r.Kind, "pr", r.PR)
	o.report(Activity{Kind: ActivityReaction, IssueID: r.IssueID, Identifier: r.Identifier, Result: r.Kind,
		Message: "pull request #" + strconv.FormatInt(r.PR, 10)})
	o.startRun(ctx, cfg, is, runStart{attempt: max(o.sessions[r.IssueID], 1), resume: r.SessionID, host: host, reaction: &r})
	return ""
}

// reactionState is the state a reaction run moves its handed-off issue back to:
// tracker.in_progress_state, else the first active state.
func reactionState(cfg *config.Config) string {
	if s := strings.TrimSpace(cfg.Tracker.InProgressState); s != "" {
		return s
	}
	if len(cfg.Tracker.ActiveStates) > 0 {
		return cfg.Tracker.ActiveStates[0]
	}
	return ""
}

// watchHandOff tells the reactions of a run that handed its issue off, and of a
// reaction run that ended otherwise.
func (o *Orchestrator) watchHandOff(e *runningEntry, ex workerExit) {
	if o.opts.Reactions == nil {
		return
	}
	if !ex.handedOff {
		if e.reaction != nil && ex.outcome != outcomeSkipped {
			o.opts.Reactions.Ended(*e.reaction, ex.turns > 0)
		}
		return
	}
	o.opts.Reactions.Watch(HandOff{IssueID: e.issue.ID, Identifier: e.issue.Identifier, Workspace: ex.workspace,
		SessionID: ex.sessionID, Host: e.host})
}

// reactionPrompt adds a reaction run's failure to its first prompt: the template's
// extra keys, and the section saying the same when the template uses none of them.
func reactionPrompt(cfg *config.Config, r *Reaction, rendered string) string {
	if r == nil {
		return rendered
	}
	for k := range r.Vars {
		if templateUses(cfg.Prompt, k) {
			return rendered
		}
	}
	return rendered + "\n\n" + r.Section
}

// templateUses reports whether the prompt template refers to the variable key inside
// an action ({{ .key }}, {% if key %}), not merely names it in its text: a template
// that only mentions ci_failure in prose still gets the section.
func templateUses(tmpl, key string) bool {
	re, err := regexp.Compile(`\{[{%][^}]*\b` + regexp.QuoteMeta(key) + `\b`)
	return err == nil && re.MatchString(tmpl)
}
