package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"sortie/internal/agent"
	"sortie/internal/agent/cgroup"
	"sortie/internal/agentsock"
	"sortie/internal/config"
	"sortie/internal/confine"
	"sortie/internal/prompt"
	"sortie/internal/selfreview"
	"sortie/internal/store"
	"sortie/internal/tracker"
	"sortie/internal/workspace"
)

// startWorker claims issue as running and starts its worker goroutine.
func (o *Orchestrator) startWorker(ctx context.Context, cfg *config.Config, is tracker.Issue, attempt, failures int, resume, host string) {
	o.startRun(ctx, cfg, is, runStart{attempt: attempt, failures: failures, resume: resume, host: host})
}

// runStart is how a run starts: its attempt, the consecutive failures before it, the
// session it resumes, its SSH host, and the reaction it runs for (nil for none).
type runStart struct {
	attempt, failures int
	resume, host      string
	reaction          *Reaction
}

// startRun claims issue as running and starts its worker goroutine.
func (o *Orchestrator) startRun(ctx context.Context, cfg *config.Config, is tracker.Issue, rs runStart) {
	attempt, host, resume := rs.attempt, rs.host, rs.resume
	wctx, cancel := context.WithCancel(ctx)
	e := &runningEntry{
		issue:          is,
		attempt:        attempt,
		failures:       rs.failures,
		startedAt:      o.clk.Now(),
		host:           host,
		cancel:         cancel,
		resumeFrom:     resume,
		reaction:       rs.reaction,
		spentBefore:    o.spent[is.ID],
		sessionsBefore: o.sessions[is.ID],
		progress:       &progress{progressData: progressData{maxTurns: cfg.Agent.MaxTurns}},
	}
	o.running[is.ID] = e
	if host != "" {
		o.hostLoad[host]++
	}
	o.log.Info("dispatching", "issue_identifier", is.Identifier, "state", is.State, "attempt", attempt,
		"resume_session", resume, "host", host)
	o.report(Activity{Kind: ActivityDispatch, IssueID: is.ID, Identifier: is.Identifier, Attempt: attempt})
	// The run keeps the adapters in force now to its end, as it keeps cfg: a hot reload
	// does not move a session to another agent adapter or tracker.
	ad := o.adapters.Load()
	o.workers.Add(1)
	go func() {
		defer o.workers.Done()
		// The worker gets its own copy of the issue: the loop keeps updating e.issue.
		ex := o.runWorker(wctx, cfg, ad, e, is)
		// Release wctx: until it is cancelled it stays registered with workCtx (and
		// keeps whatever registered with it), one per run, for the daemon's lifetime.
		cancel()
		ex.issueID, ex.entry = is.ID, e
		o.exits <- ex // buffered; the loop drains exits until every worker has exited
	}()
}

// worker is the state of one run, owned by its goroutine.
type worker struct {
	o     *Orchestrator
	cfg   *config.Config
	ad    *Adapters // the tracker and agent of this run, in force when it started
	e     *runningEntry
	issue tracker.Issue
	runID int64
	ws    workspace.Workspace
	sess  *agent.Session
	log   []store.Event // recent notable events not yet written
	// flushAt is when onEvent next writes the run's progress. Zero at first: the
	// first event is written at once, as it carries the session id, which a restart
	// needs to resume the run and which must not wait for the end of a long turn.
	flushAt time.Time
	ext     *workspace.Prepared    // the session's agent extensions; nil before it starts
	state   *workspace.StateWriter // .sortie/state.json; nil without extensions
	started time.Time              // when the session started, for state.json

	// stopTurn ends the running turn (its context) when a budget is crossed mid-turn;
	// nil between turns. budgetHit says which budget, once crossed. Both belong to the
	// worker goroutine, on which the adapter delivers events.
	stopTurn  context.CancelFunc
	budgetHit string

	cgroup   *cgroup.Group // the run's cgroup (Options.Cgroups), nil without one
	confined bool          // the run's agent runs under Landlock
	// cgroupEmptied: the run's cgroup was emptied and removed, so nothing the agent
	// started is left running (closeCgroup).
	cgroupEmptied bool
	// mgr is the run's workspace manager (nil when it could not be built);
	// reviewStatus the self-review's status for after_run, "" when none ran.
	mgr          *workspace.Manager
	reviewStatus string
	// peers binds the run's capability token to the run's processes (peers.go); nil
	// when the run has no token.
	peers *runPeers
}

// stateChanged records new token usage in .sortie/state.json (coalesced).
func (w *worker) stateChanged() {
	w.writeState(false)
}

// writeState writes .sortie/state.json for the sortie_status tool: the session's
// progress now. Unless force, token-usage updates are coalesced (workspace.StateWriter).
func (w *worker) writeState(force bool) {
	if w.state == nil {
		return
	}
	err := w.state.Write(w.o.clk.Now(), force, func() workspace.State {
		p := w.e.progress.snapshot()
		st := workspace.State{IssueID: w.issue.ID, IssueIdentifier: w.issue.Identifier, RunID: w.runID,
			SessionID: p.sessionID, TurnNumber: p.turn, MaxTurns: max(w.cfg.Agent.MaxTurns, 1),
			SessionStartedAt: w.started.UTC().Format(time.RFC3339Nano), Tokens: p.usage, CostUSD: p.costUSD}
		if w.e.attempt > 0 {
			a := w.e.attempt
			st.Attempt = &a
		}
		return st
	})
	if err != nil {
		w.o.log.Warn("writing .sortie/state.json failed", "issue_identifier", w.issue.Identifier, "error", err)
	}
}

// runWorker runs one attempt: revalidate → workspace → run row → session → turns →
// stop → handoff → after_run. It never touches loop state; it reports through e.progress
// and its return value. A panic is turned into a failed exit.
func (o *Orchestrator) runWorker(ctx context.Context, cfg *config.Config, ad *Adapters, e *runningEntry, is tracker.Issue) (ex workerExit) {
	w := &worker{o: o, cfg: cfg, ad: ad, e: e, issue: is}
	defer func() {
		if r := recover(); r != nil {
			o.log.Error("worker panicked; recording the run as failed", "issue_identifier", is.Identifier, "panic", r)
			ex.outcome, ex.err = outcomeFailed, fmt.Errorf("internal error: %v", r)
			w.finish(ex)
		}
	}()
	return w.run(ctx)
}

func (w *worker) run(ctx context.Context) workerExit {
	o, cfg := w.o, w.cfg
	ex := workerExit{lastState: w.issue.State, updatedAt: w.issue.UpdatedAt}

	// Revalidate: the candidate may be a poll old, and the prompt wants the full issue.
	is, err := w.ad.Tracker.FetchIssueByID(ctx, w.issue.ID)
	if err != nil {
		if tracker.KindOf(err) == tracker.ErrNotFound {
			ex.outcome = outcomeSkipped
			return ex
		}
		if ctx.Err() != nil {
			ex.outcome, ex.notStarted = outcomeCancelled, true // stopped by the loop; no run row yet
			return ex
		}
		ex.outcome, ex.err = outcomeFailed, fmt.Errorf("fetching issue before dispatch: %w", err)
		return ex
	}
	ex.lastState, ex.updatedAt = is.State, is.UpdatedAt
	if r := w.e.reaction; r != nil && !isActive(cfg, is.State) && tracker.StateIn(is.State, []string{cfg.Tracker.HandoffState}) &&
		!tracker.StateIn(is.State, cfg.Tracker.TerminalStates) {
		// A reaction takes the handed-off issue back from the humans' state: moved
		// back to work, then handed off again when the run ends.
		target := reactionState(cfg)
		if err := w.ad.Tracker.TransitionIssue(ctx, is.ID, target); err != nil {
			if ctx.Err() != nil {
				ex.outcome, ex.notStarted = outcomeCancelled, true
				return ex
			}
			ex.outcome, ex.err = outcomeFailed, fmt.Errorf("moving the handed-off issue back to %q for a %s reaction: %w", target, r.Kind, err)
			return ex
		}
		is.State = target
		ex.lastState = target
		w.setState(target)
	}
	if !isActive(cfg, is.State) || tracker.StateIn(is.State, cfg.Tracker.TerminalStates) {
		ex.outcome = outcomeSkipped
		return ex
	}
	w.issue = is

	mgr, mgrErr := o.workspacesOn(cfg, w.e.host)
	w.mgr = mgr
	wsPath := ""
	if key, err := workspace.Key(is.Identifier); err == nil && mgrErr == nil {
		wsPath = filepath.Join(mgr.Root(), key)
	}
	// Every attempt that gets this far has a run row, written before anything slow, so
	// a crash at any later moment leaves a record behind.
	w.runID, err = o.opts.Store.StartRun(ctx, store.Run{
		IssueID: is.ID, Identifier: is.Identifier, Attempt: w.e.attempt + 1,
		AgentKind: cfg.Agent.Kind, Workspace: wsPath, StartedAt: o.clk.Now(), SSHHost: w.e.host,
		WorkflowPath: cfg.Path, Process: store.Process{CLIVersion: w.ad.AgentVersion}, Reaction: w.reactionKind(),
	})
	if err != nil {
		ex.outcome, ex.err = outcomeFailed, fmt.Errorf("recording the run: %w", err)
		return ex
	}
	w.e.progress.mu.Lock()
	w.e.progress.runID = w.runID
	w.e.progress.mu.Unlock()
	if mgrErr != nil {
		return w.fail(ex, fmt.Errorf("workspace: %w", mgrErr))
	}

	w.transitionInProgress(ctx)
	if cfg.Tracker.Comments.OnDispatch {
		o.comment(is, "dispatch", dispatchComment(cfg.Agent.Kind, w.e.attempt, w.runID))
	}

	wsIssue := workspace.Issue{ID: is.ID, Identifier: is.Identifier}
	w.ws, err = mgr.Prepare(ctx, wsIssue, w.e.attempt)
	if w.ws.Path != "" {
		// after_run runs on every exit path once the workspace exists, including a
		// failed before_run.
		defer func() {
			if err := mgr.AfterRun(ctx, w.ws, wsIssue, w.hookExtraEnv()); err != nil {
				o.log.Warn("after_run hook failed", "issue_identifier", is.Identifier, "error", err)
			}
		}()
	}
	if err != nil {
		if ctx.Err() != nil {
			return w.cancelled(ex)
		}
		return w.fail(ex, err)
	}
	ex.workspace = w.ws.Path
	w.e.progress.mu.Lock()
	w.e.progress.workspace = w.ws.Path
	w.e.progress.mu.Unlock()

	ex = w.session(ctx, ex)
	if ex.outcome == outcomeNormal {
		w.handoff(ctx, &ex)
		if (ex.softStop != "" || ex.handoffRefused != "") && !ex.handedOff {
			w.refreshForHold(ctx, &ex)
		}
	}
	w.finish(ex)
	return ex
}

// refreshForHold re-reads the issue when the run ends in a hold, so the hold's baseline
// (state and update time) includes the run's own tracker changes, such as the
// in-progress transition: only a later change — a human's — lifts it.
func (w *worker) refreshForHold(ctx context.Context, ex *workerExit) {
	is, err := w.ad.Tracker.FetchIssueByID(ctx, w.issue.ID)
	if err != nil {
		w.o.log.Warn("re-reading the issue for its hold failed", "issue_identifier", w.issue.Identifier, "error", err)
		return
	}
	ex.lastState, ex.updatedAt = is.State, is.UpdatedAt
}

// session starts the agent session, runs the turns and stops the session.
func (w *worker) session(ctx context.Context, ex workerExit) workerExit {
	o, cfg := w.o, w.cfg
	tmpl, err := o.template(cfg)
	if err != nil {
		return w.fail(ex, err)
	}
	w.ext, err = o.opts.Extensions.Prepare(workspace.Session{
		Workspace: w.ws.Path, WorkflowPath: cfg.Path, WorkflowDir: cfg.Dir,
		AgentKind: cfg.Agent.Kind, AgentBlock: cfg.Block(cfg.Agent.Kind),
		IssueID: w.issue.ID, Identifier: w.issue.Identifier, RunID: w.runID,
		Attempt: w.e.attempt, ResumeFrom: w.e.resumeFrom, Remote: w.e.host != "",
		Bind: func() agentsock.Binding { w.peers = w.newPeers(); return w.peers },
	})
	if err != nil {
		return w.fail(ex, err)
	}
	defer w.ext.Close() // the session's token dies with it
	mcpPath, mcpServers := w.ext.MCPConfig, w.ext.Servers
	w.state, w.started = w.ext.StateWriter(w.ws.Path), o.clk.Now()
	env := w.agentEnv()
	w.openCgroup()
	ctx = w.bindPeers(ctx)
	confinement, cleanup, err := w.confinement(cfg, env)
	if err != nil {
		w.closeCgroup()
		return w.fail(ex, err)
	}
	// After the session's own stop, deferred below: what the agent left running is
	// killed with its cgroup, then its temporary directory goes.
	defer func() {
		w.closeCgroup()
		cleanup()
	}()
	if confinement != nil {
		env = confine.Env(env, confinement.Policy.Write[1])
	}
	sess, err := w.ad.Agent.StartSession(ctx, agent.StartParams{
		Workspace:                w.ws.Path,
		ResumeSessionID:          w.e.resumeFrom,
		MCPConfigPath:            mcpPath,
		MCPServers:               mcpServers,
		Env:                      env,
		SSHHost:                  w.e.host,
		SSHStrictHostKeyChecking: cfg.Worker.SSHStrictHostKeyChecking,
		Confine:                  confinement,
		RunAs:                    w.runAs(),
		Supervise:                w.supervision(),
	})
	if err != nil {
		if ctx.Err() != nil {
			return w.cancelled(ex)
		}
		return w.fail(ex, err)
	}
	w.sess = sess
	w.setSession(sess.ID)
	// .sortie/state.json is first written as the first turn starts, a moment from
	// now: the agent is what reads it, and none runs before then.
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopTimeout(cfg))
		defer cancel()
		if err := w.ad.Agent.StopSession(stopCtx, sess); err != nil {
			o.log.Warn("stopping the agent session failed", "issue_identifier", w.issue.Identifier, "error", err)
		}
		w.stopLeftovers()
	}()

	maxTurns := max(cfg.Agent.MaxTurns, 1)
	for turn := 1; turn <= maxTurns; turn++ {
		if turn > 1 {
			// The previous turn's end, written now that another turn follows; the
			// run's end (finish) carries the last turn's, in the same transaction.
			w.flush(ctx, true)
		}
		ex.turns = turn
		w.e.progress.mu.Lock()
		w.e.progress.turn = turn
		w.e.progress.mu.Unlock()

		data := prompt.Data{
			Issue:   w.issue,
			Attempt: w.e.attempt,
			Run:     prompt.Run{TurnNumber: turn, MaxTurns: maxTurns, IsContinuation: turn > 1},
		}
		if turn == 1 && w.e.reaction != nil {
			data.Extra = w.e.reaction.Vars
		}
		rendered, err := tmpl.Render(data)
		if err != nil {
			return w.fail(ex, err)
		}
		if turn == 1 {
			rendered = reactionPrompt(cfg, w.e.reaction, rendered)
		}
		if turn == 1 && w.e.resumeFrom == "" {
			// A resumed session already knows its workflow.
			rendered = o.workflowHint(cfg, w.e.host, rendered)
		}
		text := prompt.TurnPrompt(rendered, turn, w.ext.Tools)
		if note := o.answerNote(ctx, w.issue.ID); note != "" {
			text += "\n\n" + note
		}
		res, timedOut, err := w.turn(ctx, turn, text, &ex)
		if ctx.Err() != nil {
			return w.cancelled(ex)
		}
		if w.budgetHit != "" {
			// Stopped mid-turn by a budget (onEvent): a normal end, held by the budget.
			ex.budgetStop = w.budgetHit
			break
		}
		if timedOut {
			return w.fail(ex, agent.Errorf(agent.ErrTurnTimeout, "turn %d exceeded agent.turn_timeout_ms (%s)", turn, cfg.Agent.TurnTimeout))
		}
		if err != nil {
			return w.fail(ex, err)
		}
		if res.ExitReason != "" && res.ExitReason != agent.EventTurnCompleted {
			return w.fail(ex, agent.Errorf(agent.ErrTurnFailed, "turn %d ended with %s", turn, res.ExitReason))
		}

		// .sortie/status is read after every completed turn, before the tracker refresh.
		st, err := workspace.ReadStatus(w.ws.Path)
		if err != nil {
			o.log.Warn("reading .sortie/status failed; treating it as absent", "issue_identifier", w.issue.Identifier, "error", err)
		}
		switch st.Kind {
		case workspace.StatusBlocked, workspace.StatusNeedsHumanReview:
			ex.softStop = string(st.Value)
		case workspace.StatusUnknown:
			o.log.Warn("ignoring unrecognised .sortie/status value", "issue_identifier", w.issue.Identifier, "value", st.Value)
		}
		if cp, ok := o.awaitingCheckpoint(w.issue.ID); ok {
			// The agent ended its turn on a checkpoint only a human can answer.
			ex.awaiting = &cp
			break
		}
		if ex.softStop == "" {
			if why := w.budgetExceeded(ex); why != "" {
				ex.budgetStop = why
			}
		}

		states, err := w.ad.Tracker.FetchIssueStatesByIDs(ctx, []string{w.issue.ID})
		if err != nil {
			if ctx.Err() != nil {
				// The loop stopped us between turns; the failed request is its doing.
				return w.cancelled(ex)
			}
			if ex.softStop != "" || ex.budgetStop != "" {
				break // the agent is done either way; the handoff decision copes
			}
			return w.fail(ex, fmt.Errorf("refreshing issue state after turn %d: %w", turn, err))
		}
		if s, ok := states[w.issue.ID]; ok {
			ex.lastState = s
			w.issue.State = s
		}
		if ex.softStop != "" || ex.budgetStop != "" || !isActive(cfg, ex.lastState) {
			break
		}
	}
	if !w.selfReview(ctx, &ex) {
		return ex
	}
	ex.outcome = outcomeNormal
	w.e.progress.mu.Lock()
	w.e.progress.finishing = true
	w.e.progress.mu.Unlock()
	return ex
}

// reactionKind is the reaction this run answers, "" for none.
func (w *worker) reactionKind() string {
	if w.e.reaction == nil {
		return ""
	}
	return w.e.reaction.Kind
}

// turn runs one agent turn on the run's session with prompt text: timedOut says
// agent.turn_timeout_ms ended it. The turn's usage is absorbed into ex and reported.
func (w *worker) turn(ctx context.Context, turn int, text string, ex *workerExit) (res agent.TurnResult, timedOut bool, err error) {
	o, cfg := w.o, w.cfg
	w.writeState(true)

	turnCtx, cancel := ctx, context.CancelFunc(func() {})
	if cfg.Agent.TurnTimeout > 0 {
		turnCtx, cancel = context.WithTimeout(ctx, cfg.Agent.TurnTimeout)
	}
	turnCtx, w.stopTurn = context.WithCancel(turnCtx)
	turnStart := o.clk.Now()
	w.agentStarting(turnStart)
	res, err = w.ad.Agent.RunTurn(turnCtx, w.sess, agent.TurnParams{
		Prompt: text, TurnNumber: turn, OnEvent: w.onEvent,
	})
	timedOut = errors.Is(turnCtx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
	w.stopTurn()
	w.stopTurn = nil
	cancel()
	turnResult := string(res.ExitReason)
	switch {
	case timedOut:
		turnResult = string(agent.ErrTurnTimeout)
	case turnResult == "" && err != nil:
		turnResult = string(agent.EventTurnFailed)
	}
	o.report(Activity{Kind: ActivityTurn, IssueID: w.issue.ID, Identifier: w.issue.Identifier, RunID: w.runID,
		Result: turnResult, Duration: o.clk.Now().Sub(turnStart), Attempt: w.e.attempt})
	w.absorbResult(res, ex)
	if w.state != nil && w.state.Pending {
		w.writeState(true)
	}
	return res, timedOut, err
}

// handoff moves the issue to tracker.handoff_state after a normal exit when the agent
// asked for review or simply used its turns, and the issue is still active. A terminal
// state seen at that moment wins; blocked never hands off.
func (w *worker) handoff(ctx context.Context, ex *workerExit) {
	cfg := w.cfg
	if w.refuseHandoff(ctx, ex) {
		return
	}
	if ex.softStop == "blocked" || ex.budgetStop != "" || ex.awaiting != nil || cfg.Tracker.HandoffState == "" {
		return
	}
	if tracker.StateIn(ex.lastState, cfg.Tracker.TerminalStates) || !isActive(cfg, ex.lastState) {
		return
	}
	if err := w.ad.Tracker.TransitionIssue(ctx, w.issue.ID, cfg.Tracker.HandoffState); err != nil {
		w.o.log.Warn("handoff transition failed", "issue_identifier", w.issue.Identifier,
			"handoff_state", cfg.Tracker.HandoffState, "error", err)
		w.o.report(Activity{Kind: ActivityHandoff, IssueID: w.issue.ID, Identifier: w.issue.Identifier, RunID: w.runID,
			Result: "error", Message: err.Error()})
		return
	}
	w.o.report(Activity{Kind: ActivityHandoff, IssueID: w.issue.ID, Identifier: w.issue.Identifier, RunID: w.runID,
		Result: "success", Message: cfg.Tracker.HandoffState})
	ex.handedOff = true
	ex.lastState = cfg.Tracker.HandoffState
	w.setState(cfg.Tracker.HandoffState)
	// Logged once the run's exit is handled ("run finished and handed off").
}

// transitionInProgress moves the issue to tracker.in_progress_state when configured and
// not already there. Failure is logged, never fatal.
func (w *worker) transitionInProgress(ctx context.Context) {
	target := w.cfg.Tracker.InProgressState
	if target == "" || strings.EqualFold(strings.TrimSpace(w.issue.State), strings.TrimSpace(target)) {
		return
	}
	if err := w.ad.Tracker.TransitionIssue(ctx, w.issue.ID, target); err != nil {
		w.o.log.Warn("in-progress transition failed", "issue_identifier", w.issue.Identifier, "error", err)
		return
	}
	w.issue.State = target
	w.setState(target)
}

// checkBudget enforces agent.max_tokens and agent.max_cost_usd within a turn, on every
// event that reports usage: the turn that crosses one is stopped at once (gracefully,
// then its process tree), not at its end, which may be a turn_timeout later. Crossing
// agent.budget_warn_ratio of one alerts the operator, once per issue.
func (w *worker) checkBudget(usage agent.Usage, costUSD float64) {
	cfg := w.cfg
	if !hasSpendBudget(cfg) || w.budgetHit != "" {
		return
	}
	s := w.e.spentBefore.add(usage, costUSD)
	if why := s.exceeded(cfg); why != "" {
		w.budgetHit = why
		w.o.log.Warn("budget crossed during a turn; stopping the agent", "issue_identifier", w.issue.Identifier, "why", why)
		if w.stopTurn != nil {
			w.stopTurn()
		}
		return
	}
	if why := s.nearing(cfg); why != "" && w.o.budgetWarned(w.issue.ID) {
		w.o.log.Warn("issue budget nearly used up", "issue_identifier", w.issue.Identifier, "why", why)
		w.o.alert(Alert{Event: "budget_warning", Severity: "warning", Issue: w.issue,
			Title: w.issue.Identifier + " has nearly used up its budget", Message: why})
	}
}

// agentStarting restarts the stall clock when an agent turn is about to start: the
// agent is silent for agent.stall_timeout_ms from then, not from the dispatch, so that a
// slow after_create hook (a large clone) or tracker call between turns never counts as
// the agent's silence.
func (w *worker) agentStarting(now time.Time) {
	p := w.e.progress
	p.mu.Lock()
	p.turnStartedAt = now
	p.mu.Unlock()
}

// budgetExceeded reports why the issue's token or cost budget is used up, or "".
func (w *worker) budgetExceeded(ex workerExit) string {
	return w.e.spentBefore.add(ex.usage, ex.costUSD).exceeded(w.cfg)
}

func (w *worker) onEvent(ev agent.Event) {
	now := w.o.clk.Now()
	p := w.e.progress
	p.mu.Lock()
	p.lastEventAt = now
	p.lastEvent = ev.Type
	if ev.Message != "" {
		p.lastMessage = truncate(ev.Message, 200)
	}
	var proc *store.Process // a new agent process, to record
	if (ev.PID != 0 && ev.PID != p.pid) || (ev.RemotePGID != 0 && ev.RemotePGID != p.remotePGID) {
		if ev.PID != 0 {
			p.pid = ev.PID
		}
		if ev.RemotePGID != 0 {
			p.remotePGID = ev.RemotePGID
		}
		proc = w.process(p.pid, p.remotePGID)
	}
	if ev.SessionID != "" {
		p.sessionID = ev.SessionID
	}
	var delta agent.Usage
	switch ev.Type {
	case agent.EventTokenUsage:
		prev := p.usage
		p.usage = maxUsage(p.usage, ev.Usage)
		delta = usageDelta(prev, p.usage)
		if !ev.Revision {
			p.apiRequests++
		}
		if ev.Model != "" {
			p.model = ev.Model
		}
		defer w.stateChanged()
	case agent.EventToolResult:
		p.toolCalls++
	}
	if ev.CostUSD > p.costUSD {
		p.costUSD = ev.CostUSD
	}
	model := p.model
	usage, cost := p.usage, p.costUSD
	p.mu.Unlock()
	if ev.Type == agent.EventTokenUsage || ev.CostUSD > 0 {
		w.checkBudget(usage, cost)
	}
	evCopy := ev
	w.o.report(Activity{Kind: ActivityAgentEvent, Time: now, IssueID: w.issue.ID, Identifier: w.issue.Identifier,
		RunID: w.runID, Event: &evCopy, Delta: delta, Model: model})

	if notable(ev.Type) {
		// Keep the newest eventLogBuffer events: let the slice run to twice that and
		// then slide the newest half down, one copy per eventLogBuffer events instead
		// of one per event.
		if len(w.log) >= 2*eventLogBuffer {
			w.log = w.log[:copy(w.log, w.log[len(w.log)-eventLogBuffer:])]
		}
		w.log = append(w.log, store.Event{Time: now, Type: string(ev.Type), Message: truncate(eventText(ev), 500)})
	}
	switch {
	case now.After(w.flushAt):
		// The first event is both: the process recovery stops and the session a
		// restart resumes, written in one transaction.
		w.flushWith(context.Background(), false, proc)
	case proc != nil:
		w.recordProcess(*proc)
	}
}

// eventLogBuffer bounds the events a worker keeps between flushes; older ones are
// dropped from the log (never from the counters).
const eventLogBuffer = 64

func notable(t agent.EventType) bool {
	switch t {
	case agent.EventTokenUsage, agent.EventOtherMessage:
		return false
	}
	return true
}

func eventText(ev agent.Event) string {
	if ev.Type == agent.EventToolResult {
		s := ev.ToolName + " " + strconv.FormatInt(ev.ToolDurationMS, 10) + "ms"
		if ev.ToolError {
			s += " error"
		}
		if ev.Message != "" {
			s += ": " + ev.Message
		}
		return s
	}
	return ev.Message
}

// flush writes the run's progress and buffered events to the store, in one
// transaction, at most once per ProgressFlushInterval unless forced.
func (w *worker) flush(ctx context.Context, force bool) { w.flushWith(ctx, force, nil) }

// flushWith is flush, recording proc (when not nil) in the same transaction. onEvent
// calls it with a process only when the progress is due, and records the process on
// its own otherwise.
func (w *worker) flushWith(ctx context.Context, force bool, proc *store.Process) {
	now := w.o.clk.Now()
	if !force && now.Before(w.flushAt) {
		return
	}
	w.flushAt = now.Add(w.o.opts.ProgressFlushInterval)
	if w.runID == 0 {
		return
	}
	p := w.e.progress.snapshot()
	ctx = context.WithoutCancel(ctx)
	var err error
	if proc != nil {
		err = w.o.opts.Store.RecordProcessAndProgress(ctx, w.runID, *proc, progressRecord(p), w.pendingEvents())
	} else {
		err = w.o.opts.Store.RecordProgress(ctx, w.runID, progressRecord(p), w.pendingEvents())
	}
	if err != nil {
		w.o.log.Warn("recording run progress failed", "issue_identifier", w.issue.Identifier, "error", err)
	}
	w.log = w.log[:0]
}

// pendingEvents are the newest eventLogBuffer events not yet written.
func (w *worker) pendingEvents() []store.Event {
	return w.log[max(len(w.log)-eventLogBuffer, 0):]
}

// process is the run's agent process record.
func (w *worker) process(pid, remotePGID int) *store.Process {
	// Agents run in their own process group, so the group id is the leader's pid.
	return &store.Process{PID: pid, PGID: pid, RemotePGID: remotePGID, CLIVersion: w.ad.AgentVersion}
}

func (w *worker) recordProcess(proc store.Process) {
	if w.runID == 0 {
		return
	}
	if err := w.o.opts.Store.UpdateRunProcess(context.Background(), w.runID, proc); err != nil {
		w.o.log.Warn("recording the agent process failed", "issue_identifier", w.issue.Identifier, "error", err)
	}
}

// setState records a tracker state the worker moved the issue to, for snapshots.
func (w *worker) setState(state string) {
	p := w.e.progress
	p.mu.Lock()
	p.state = state
	p.mu.Unlock()
}

func (w *worker) setSession(id string) {
	p := w.e.progress
	p.mu.Lock()
	p.sessionID = id
	p.mu.Unlock()
}

func (w *worker) absorbResult(res agent.TurnResult, ex *workerExit) {
	p := w.e.progress
	p.mu.Lock()
	p.usage = maxUsage(p.usage, res.Usage)
	if res.CostUSD > p.costUSD {
		p.costUSD = res.CostUSD
	}
	if res.SessionID != "" {
		p.sessionID = res.SessionID
	}
	ex.usage, ex.costUSD, ex.sessionID = p.usage, p.costUSD, p.sessionID
	p.mu.Unlock()
}

func (w *worker) fail(ex workerExit, err error) workerExit {
	ex.outcome, ex.err = outcomeFailed, err
	w.finish(ex)
	return ex
}

func (w *worker) cancelled(ex workerExit) workerExit {
	ex.outcome = outcomeCancelled
	w.finish(ex)
	return ex
}

// finish records the run's end. It is called once per run that has a row.
func (w *worker) finish(ex workerExit) {
	if w.runID == 0 {
		return
	}
	p := w.e.progress.snapshot()
	stop := stopNone
	if ex.outcome == outcomeCancelled {
		// Only a cancelled run reads why: the loop wrote e.stop before cancelling the
		// context this worker saw end. Otherwise a stop arriving as the run ends on its
		// own (a shutdown, a poll) would be a data race.
		stop = w.e.stop
	}
	status, msg := runStatus(ex, stop)
	rec := progressRecord(p)
	rec.Turns = ex.turns
	w.o.report(Activity{Kind: ActivityRunFinished, IssueID: w.issue.ID, Identifier: w.issue.Identifier, RunID: w.runID,
		Result: string(status), Message: msg, Duration: w.o.clk.Now().Sub(w.e.startedAt), Attempt: w.e.attempt,
		CostUSD: p.costUSD, Model: p.model})
	// The end carries the progress and the events still buffered: one write.
	if err := w.o.opts.Store.FinishRun(context.Background(), w.runID, store.RunEnd{
		Status: status, Error: msg, EndedAt: w.o.clk.Now(), Progress: rec, Events: w.pendingEvents(),
		ReviewMetadata: ex.reviewMetadata,
	}); err != nil {
		w.o.log.Error("recording the end of the run failed", "issue_identifier", w.issue.Identifier, "error", err)
	}
	w.log = w.log[:0]
	w.runID = 0
}

// runStatus is the run-history status and message for an exit.
func runStatus(ex workerExit, stop stopReason) (store.RunStatus, string) {
	switch ex.outcome {
	case outcomeFailed:
		if agent.KindOf(ex.err) == agent.ErrTurnTimeout {
			return store.StatusTimedOut, ex.err.Error()
		}
		return store.StatusFailed, ex.err.Error()
	case outcomeCancelled:
		if stop == stopStall {
			return store.StatusStalled, "stalled: no agent event within agent.stall_timeout_ms"
		}
		if stop == stopShutdown {
			return store.StatusInterrupted, "daemon shut down"
		}
		return store.StatusCancelled, "stopped: issue " + string(stop)
	}
	switch {
	case ex.awaiting != nil:
		return store.StatusBlocked, "waiting for a human's answer to workflow checkpoint " + ex.awaiting.CheckpointID
	case ex.softStop == "blocked":
		return store.StatusBlocked, "agent signalled blocked"
	case ex.budgetStop != "":
		return store.StatusBudgetExhausted, ex.budgetStop
	case ex.handedOff:
		return store.StatusHandedOff, ""
	}
	return store.StatusSucceeded, ""
}

func (w *worker) agentEnv() []string {
	extra := map[string]string{
		"SORTIE_ISSUE_ID":         w.issue.ID,
		"SORTIE_ISSUE_IDENTIFIER": w.issue.Identifier,
		"SORTIE_WORKSPACE":        w.ws.Path,
		"SORTIE_ATTEMPT":          strconv.Itoa(w.e.attempt),
		"SORTIE_RUN_ID":           strconv.FormatInt(w.runID, 10),
	}
	if w.e.host != "" {
		extra["SORTIE_SSH_HOST"] = w.e.host
	}
	env := agentEnvFor(w.cfg, w.o.opts.Environ, extra)
	if w.e.host != "" {
		return env // the remote user's own
	}
	return w.o.opts.RunAs.Env(env)
}

func (w *worker) hookExtraEnv() map[string]string {
	extra := map[string]string{}
	if w.e.host != "" {
		extra["SORTIE_SSH_HOST"] = w.e.host
	}
	// The self-review's outcome (docs/reactions.md#self-review): disabled when none
	// ran, else passed, cap_reached or error; its summary in .sortie/.
	if w.reviewStatus == "" {
		extra["SORTIE_SELF_REVIEW_STATUS"] = "disabled"
	} else {
		extra["SORTIE_SELF_REVIEW_STATUS"] = w.reviewStatus
		extra["SORTIE_SELF_REVIEW_SUMMARY_PATH"] = filepath.Join(w.ws.Path, workspace.SortieDir, selfreview.SummaryFile)
	}
	return extra
}

func stopTimeout(cfg *config.Config) time.Duration {
	if cfg.Agent.ReadTimeout > 0 {
		return max(cfg.Agent.ReadTimeout, 10*time.Second)
	}
	return 10 * time.Second
}

func maxUsage(a, b agent.Usage) agent.Usage {
	return agent.Usage{Input: max(a.Input, b.Input), Output: max(a.Output, b.Output),
		Total: max(a.Total, b.Total), CacheRead: max(a.CacheRead, b.CacheRead)}
}

// progressRecord is the store's form of a run's progress.
func progressRecord(p progressData) store.Progress {
	return store.Progress{Turns: p.turn, Tokens: toStoreTokens(p.usage), CostUSD: p.costUSD, Model: p.model,
		SessionID: p.sessionID}
}

func toStoreTokens(u agent.Usage) store.Tokens {
	return store.Tokens{Input: u.Input, Output: u.Output, Total: u.Total, CacheRead: u.CacheRead}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// workspaces builds the workspace manager for cfg, for local runs and removals.
func (o *Orchestrator) workspaces(cfg *config.Config) (*workspace.Manager, error) {
	return o.workspacesOn(cfg, "")
}

// workspacesOn builds the workspace manager for cfg for a run whose agent runs on host
// ("" for a local one): its hooks are confined as that agent is (confineHook).
func (o *Orchestrator) workspacesOn(cfg *config.Config, host string) (*workspace.Manager, error) {
	pass, drop := hookEnvLists(cfg, o.opts.Environ)
	return workspace.New(workspace.Config{
		Root: cfg.Workspace.Root,
		Hooks: workspace.Hooks{AfterCreate: cfg.Hooks.AfterCreate, BeforeRun: cfg.Hooks.BeforeRun,
			AfterRun: cfg.Hooks.AfterRun, BeforeRemove: cfg.Hooks.BeforeRemove},
		HookTimeout: cfg.Hooks.Timeout,
		BaseEnv:     o.opts.Environ,
		PassEnv:     pass,
		DropEnv:     drop,
		Logger:      o.log,
		RunAs:       o.opts.RunAs,
		ConfineHook: o.confineHook(cfg, host),
		LegacyOwner: o.legacyWorkspaceOwner,
	})
}
