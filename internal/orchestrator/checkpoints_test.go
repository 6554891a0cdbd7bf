package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"sortie/internal/config"
	"sortie/internal/store"
	"sortie/internal/store/sqlite"
	"sortie/internal/testkit/faketracker"
	"sortie/internal/tracker"
	"sortie/internal/workflow/checkpoint"
	"sortie/internal/workflow/engine"
)

// armOnFirstTurn makes the first turn of ident's first run end with checkpoint cp
// pending, as if its agent had entered the checkpoint's activity through the workflow
// tools, and records the session's newest token.
func armOnFirstTurn(t *testing.T, h *harness, ident string, cp store.Checkpoint) {
	t.Helper()
	var once sync.Once
	h.agent.afterTurn = func(id string, turn int) {
		if id != ident {
			return
		}
		once.Do(func() {
			ctx := context.Background()
			if err := h.st.SaveWorkflowSession(ctx, store.WorkflowSession{SessionID: cp.SessionID, Workflow: cp.Workflow,
				IssueID: cp.IssueID, Identifier: cp.Identifier, Token: "tok-" + cp.SessionID, UpdatedAt: h.clk.Now()}); err != nil {
				t.Errorf("SaveWorkflowSession: %v", err)
			}
			rows, err := h.st.ArmCheckpoints(ctx, cp.SessionID, []store.Checkpoint{cp})
			if err != nil {
				t.Errorf("ArmCheckpoints: %v", err)
				return
			}
			h.hooks.Armed(engine.Caller{IssueID: cp.IssueID, Identifier: cp.Identifier}, rows)
		})
	}
}

// awaitComment waits until a comment of issue id contains substr; comments are posted
// in the background.
func awaitComment(t *testing.T, h *harness, id, substr string) tracker.Issue {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	changed := h.trk.Watch(ctx)
	for {
		is, _ := h.trk.Issue(id)
		for _, c := range is.Comments {
			if strings.Contains(c.Body, substr) {
				return is
			}
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("no comment of %s contains %q: %+v", id, substr, is.Comments)
		}
	}
}

func approvePlan(id string) store.Checkpoint {
	return store.Checkpoint{SessionID: "sid-" + id, IssueID: id, Identifier: id, Workflow: "work-package", Activity: "approve-plan",
		CheckpointID: "approve-plan", Name: "Approve the plan", Message: "Is the plan in .sortie/plan.md good?",
		Options:  []store.CheckpointOption{{ID: "approve", Label: "Approve"}, {ID: "revise", Label: "Revise", Description: "say why in a comment"}},
		Blocking: true, IssuedAt: faketracker.Epoch}
}

func checkpointConfig(t *testing.T) *config.Config {
	return testConfig(t, func(c *config.Config) {
		c.Agent.MaxTurns = 3
		c.Tracker.HandoffState = "Human Review"
	})
}

// TestCheckpoint_UnansweredCheckpointParksTheIssueUntilAnAPIAnswerResumesIt walks the
// whole flow with an answer through AnswerCheckpoint (the API and dashboard's path).
func TestCheckpoint_UnansweredCheckpointParksTheIssueUntilAnAPIAnswerResumesIt(t *testing.T) {
	var alertsMu sync.Mutex
	var alerts []Alert
	alerted := make(chan struct{}, 16) // alerts go out off the loop's goroutine
	h := newHarness(t, checkpointConfig(t), harnessOptions{pollOnly: true, checkpoints: true,
		alert: func(_ context.Context, a Alert) error {
			alertsMu.Lock()
			alerts = append(alerts, a)
			alertsMu.Unlock()
			alerted <- struct{}{}
			return nil
		}})
	h.trk.Put(issue("CP-1", "Todo"))
	armOnFirstTurn(t, h, "CP-1", approvePlan("CP-1"))
	h.start()

	o := h.awaitStep(StepExit, "CP-1")
	held, ok := heldOf(o.Snapshot, "CP-1")
	if !ok || held.Reason != holdAwaiting {
		t.Fatalf("after the run: %s; want CP-1 held as awaiting_input", describe(o.Snapshot))
	}
	if !strings.Contains(held.Message, "Is the plan in .sortie/plan.md good?") || !strings.Contains(held.Message, "approve (Approve)") {
		t.Errorf("hold message = %q, want the question and the options", held.Message)
	}
	if len(o.Snapshot.Checkpoints) != 1 || o.Snapshot.Checkpoints[0].CheckpointID != "approve-plan" || o.Snapshot.Checkpoints[0].Answer != "" {
		t.Errorf("snapshot checkpoints = %+v, want the one unanswered approve-plan", o.Snapshot.Checkpoints)
	}
	if got := len(h.agent.promptsOf("CP-1")); got != 1 {
		t.Errorf("turns run = %d, want 1: the turn that left the checkpoint pending ends the run", got)
	}
	if got := h.trk.TransitionsOf("CP-1"); len(got) != 0 {
		t.Errorf("transitions = %q, want none: a run parked on a checkpoint is not handed off", got)
	}
	if st := h.statuses("CP-1"); len(st) != 1 || st[0] != store.StatusBlocked {
		t.Errorf("run statuses = %v, want [blocked]", st)
	}
	is := awaitComment(t, h, "CP-1", "Sortie checkpoint: Approve the plan")
	var asked bool
	for _, c := range is.Comments {
		if strings.Contains(c.Body, "Sortie checkpoint: Approve the plan") && strings.Contains(c.Body, "/sortie choose approve") &&
			strings.Contains(c.Body, "- revise: Revise (say why in a comment)") {
			asked = true
		}
	}
	if !asked {
		t.Errorf("tracker comments = %+v, want the checkpoint with its options and how to answer", is.Comments)
	}
	select {
	case <-alerted:
	case <-time.After(waitLimit):
		t.Fatal("no alert was sent for the parked issue")
	}
	alertsMu.Lock()
	if len(alerts) != 1 || alerts[0].Event != holdAwaiting || !strings.Contains(alerts[0].Message, "/sortie choose") {
		t.Errorf("alerts = %+v, want one awaiting_input alert saying how to answer", alerts)
	}
	alertsMu.Unlock()

	// Polls, including the one that sees the checkpoint comment's update, keep the hold.
	for range 2 {
		h.advance(config.DefaultPollingInterval)
		o = h.awaitStep(StepTick, "")
		if held, ok := heldOf(o.Snapshot, "CP-1"); !ok || held.Reason != holdAwaiting {
			t.Fatalf("a poll changed the hold: %s", describe(o.Snapshot))
		}
	}

	ctx := context.Background()
	var oe *checkpoint.OptionError
	if _, err := h.desk.AnswerCheckpoint(ctx, "CP-1", "approve-plan", "ship-it", "alice", store.AnswerAPI); !errors.As(err, &oe) || !strings.Contains(err.Error(), "approve, revise") {
		t.Fatalf("answer with an unknown option: %v, want an OptionError listing the options", err)
	}
	if _, err := h.desk.AnswerCheckpoint(ctx, "CP-1", "no-such", "approve", "alice", store.AnswerAPI); !errors.Is(err, checkpoint.ErrCheckpointNotFound) {
		t.Fatalf("answer to an unknown checkpoint: %v, want checkpoint.ErrCheckpointNotFound", err)
	}
	v, err := h.desk.AnswerCheckpoint(ctx, "cp-1", "approve-plan", "approve", "alice", store.AnswerAPI)
	if err != nil || v.Answer != "approve" || v.AnsweredBy != "alice" || v.AnswerSource != store.AnswerAPI {
		t.Fatalf("AnswerCheckpoint = %+v, %v", v, err)
	}
	if _, err := h.desk.AnswerCheckpoint(ctx, "CP-1", "approve-plan", "revise", "bob", store.AnswerAPI); !errors.Is(err, checkpoint.ErrCheckpointAnswered) {
		t.Fatalf("a second answer: %v, want checkpoint.ErrCheckpointAnswered", err)
	}

	// The answer resumes the agent's session at once, with a prompt naming it.
	h.awaitStep(StepAnswer, "CP-1")
	h.advance(0) // the continuation is due at once
	h.awaitStep(StepExit, "CP-1")
	prompts := h.agent.promptsOf("CP-1")
	if len(prompts) < 2 {
		t.Fatalf("prompts = %d, want a resumed run", len(prompts))
	}
	resumed := prompts[1]
	for _, want := range []string{`answered by alice: option "approve"`, `respond_checkpoint(checkpoint_id="approve-plan", option_id="approve")`, "tok-sid-CP-1"} {
		if !strings.Contains(resumed, want) {
			t.Errorf("resumed prompt lacks %q:\n%s", want, resumed)
		}
	}
	starts := h.agent.startsOf("CP-1")
	if runs := h.runs("CP-1"); len(starts) < 2 || starts[1].ResumeSessionID == "" || starts[1].ResumeSessionID != runs[len(runs)-1].SessionID {
		t.Errorf("the continuation did not resume the first run's agent session: %+v", starts)
	}
}

// TestCheckpoint_TrackerCommentAnswers covers "/sortie choose <option>" comments: an
// unknown option gets a reply, a valid one is recorded with its author and resumes.
func TestCheckpoint_TrackerCommentAnswers(t *testing.T) {
	h := newHarness(t, checkpointConfig(t), harnessOptions{pollOnly: true, checkpoints: true})
	h.trk.Put(issue("CP-2", "Todo"))
	armOnFirstTurn(t, h, "CP-2", approvePlan("CP-2"))
	h.start()
	h.awaitStep(StepExit, "CP-2")

	if err := h.trk.AddComment("CP-2", "carol", "/sortie choose maybe"); err != nil {
		t.Fatal(err)
	}
	h.advance(config.DefaultPollingInterval)
	o := h.awaitStep(StepTick, "")
	if held, ok := heldOf(o.Snapshot, "CP-2"); !ok || held.Reason != holdAwaiting {
		t.Fatalf("an invalid answer lifted the hold: %s", describe(o.Snapshot))
	}
	// Sortie's own checkpoint comment may land before or after this reply: the
	// comments are posted off the loop. The reply is what must name the options.
	is := awaitComment(t, h, "CP-2", `"maybe" is not an option`)
	for _, c := range is.Comments {
		if strings.Contains(c.Body, `"maybe" is not an option`) && (!strings.Contains(c.Body, "approve") || !strings.Contains(c.Body, "revise")) {
			t.Errorf("the reply %q does not name the valid options approve and revise", c.Body)
		}
	}

	if err := h.trk.AddComment("CP-2", "dave", "/sortie choose revise\nThe plan misses the migration."); err != nil {
		t.Fatal(err)
	}
	h.advance(config.DefaultPollingInterval)
	h.awaitStep(StepAnswer, "CP-2")
	h.advance(0)
	h.awaitStep(StepExit, "CP-2")
	rows, err := h.st.IssueCheckpoints(context.Background(), "CP-2", 10)
	if err != nil || len(rows) != 1 || rows[0].Answer != "revise" || rows[0].AnsweredBy != "dave" || rows[0].AnswerSource != store.AnswerTracker {
		t.Fatalf("stored checkpoint = %+v, %v; want revise by dave via tracker", rows, err)
	}
	if prompts := h.agent.promptsOf("CP-2"); len(prompts) < 2 || !strings.Contains(prompts[1], `answered by dave: option "revise"`) {
		t.Errorf("the resumed prompt does not name dave's answer: %q", prompts)
	}
}

// TestCheckpoint_NonBlockingAutoAdvancesOnTheDaemonTimer: nobody answers, and after
// autoAdvanceMs the default option is taken and the agent resumed.
func TestCheckpoint_NonBlockingAutoAdvancesOnTheDaemonTimer(t *testing.T) {
	h := newHarness(t, checkpointConfig(t), harnessOptions{pollOnly: true, checkpoints: true})
	h.trk.Put(issue("CP-3", "Todo"))
	cp := approvePlan("CP-3")
	cp.Blocking, cp.DefaultOption, cp.AutoAdvanceMS, cp.IssuedAt = false, "approve", 90_000, t0
	armOnFirstTurn(t, h, "CP-3", cp)
	h.start()
	o := h.awaitStep(StepExit, "CP-3")
	if _, ok := heldOf(o.Snapshot, "CP-3"); !ok {
		t.Fatalf("after the run: %s; want CP-3 held until the timer", describe(o.Snapshot))
	}
	if at := o.Snapshot.Checkpoints[0].AutoAdvanceAt; !at.Equal(t0.Add(90 * time.Second)) {
		t.Errorf("auto_advance_at = %v, want %v", at, t0.Add(90*time.Second))
	}
	h.advance(90 * time.Second)
	h.awaitStep(StepAnswer, "CP-3")
	h.advance(0)
	h.awaitStep(StepExit, "CP-3")
	rows, _ := h.st.IssueCheckpoints(context.Background(), "CP-3", 10)
	if len(rows) != 1 || rows[0].Answer != "approve" || rows[0].AnswerSource != store.AnswerAutoAdvance {
		t.Fatalf("stored checkpoint = %+v, want approve by the auto-advance timer", rows)
	}
	if prompts := h.agent.promptsOf("CP-3"); len(prompts) < 2 || !strings.Contains(prompts[1], "auto_advance=true") {
		t.Errorf("the resumed prompt does not ask for auto_advance: %q", prompts)
	}
}

// A "/sortie choose" comment without a readable time (a hand-edited issues file)
// counts when it comes after Sortie's checkpoint comment.
func TestCheckpoint_UntimedTrackerAnswerAfterTheQuestionCounts(t *testing.T) {
	h := newHarness(t, checkpointConfig(t), harnessOptions{pollOnly: true, checkpoints: true})
	h.trk.Put(issue("CP-4", "Todo"))
	armOnFirstTurn(t, h, "CP-4", approvePlan("CP-4"))
	h.start()
	h.awaitStep(StepExit, "CP-4")
	awaitComment(t, h, "CP-4", checkpoint.CommentPrefix)
	if err := h.trk.Update("CP-4", func(is *tracker.Issue) {
		is.Comments = append(is.Comments, tracker.Comment{ID: "hand-1", Author: "frank", Body: "/sortie choose approve"})
	}); err != nil {
		t.Fatal(err)
	}
	h.advance(config.DefaultPollingInterval)
	h.awaitStep(StepAnswer, "CP-4")
	rows, _ := h.st.IssueCheckpoints(context.Background(), "CP-4", 10)
	if len(rows) != 1 || rows[0].Answer != "approve" || rows[0].AnsweredBy != "frank" {
		t.Fatalf("stored checkpoint = %+v, want approve by frank", rows)
	}
}

// TestCheckpoint_TrackerAnswersAreReadForEveryAwaitingIssue: with more issues awaiting
// an answer than one tick reads comments of, the reads go round the held issues across
// polls, so the last of 25 (sorted by id) is heard too, and no tick reads more than
// checkpoint.MaxCommentReads issues' comments.
func TestCheckpoint_TrackerAnswersAreReadForEveryAwaitingIssue(t *testing.T) {
	const n = 25
	cfg := checkpointConfig(t)
	trk := faketracker.New(cfg.Tracker.ActiveStates...)
	var ids []string
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("AW-%02d", i)
		ids = append(ids, id)
		trk.Put(issue(id, "Todo"))
	}
	last := ids[n-1]
	seedStore(t, cfg.DBPath, func(ctx context.Context, st *sqlite.Store) {
		for _, id := range ids {
			is, _ := trk.Issue(id)
			cp := approvePlan(id)
			_, err := st.ArmCheckpoints(ctx, cp.SessionID, []store.Checkpoint{cp})
			must(t, err)
			must(t, st.SaveHold(ctx, store.Hold{IssueID: id, Identifier: id, Reason: holdAwaiting, Message: "approve the plan",
				State: is.State, IssueUpdatedAt: is.UpdatedAt, Since: t0.Add(-time.Hour)}))
		}
	})
	must(t, trk.AddComment(last, "erin", "/sortie choose approve"))

	h := newHarness(t, cfg, harnessOptions{pollOnly: true, checkpoints: true, trk: trk})
	h.start()
	h.awaitStep(StepTick, "")
	reads := trk.Calls(faketracker.OpFetchComments)
	for tick := 2; tick <= 3; tick++ {
		if reads > checkpoint.MaxCommentReads*(tick-1) {
			t.Fatalf("comment reads after %d ticks = %d, want at most %d per tick", tick-1, reads, checkpoint.MaxCommentReads)
		}
		h.advance(cfg.Polling.Interval)
		h.awaitStep(StepTick, "")
		reads = trk.Calls(faketracker.OpFetchComments)
	}
	rows, err := h.st.IssueCheckpoints(context.Background(), last, 10)
	if err != nil || len(rows) != 1 || rows[0].Answer != "approve" || rows[0].AnsweredBy != "erin" {
		t.Fatalf("%s's checkpoint after 3 ticks = %+v, %v; want erin's tracker answer approve recorded", last, rows, err)
	}
}

// TestCheckpoint_AnIssueThatMovesOnDropsItsWorkflowSessions: when an issue leaves the
// active states or is handed off, its workflow sessions end: their pending checkpoints
// are resolved as abandoned (answers given are kept, as the issue's history) and the
// sessions no longer bind the issue. When it comes back, its next run starts afresh and
// is not held on, or told about, the question of the abandoned session.
func TestCheckpoint_AnIssueThatMovesOnDropsItsWorkflowSessions(t *testing.T) {
	cases := []struct {
		name string
		// moveOn takes the issue, held at its checkpoint, out of the active states; it
		// returns the answer the abandoned checkpoint keeps.
		moveOn func(h *harness, id string) string
	}{
		{name: "left the active states while held", moveOn: func(h *harness, id string) string {
			h.setState(id, "Backlog")
			h.advance(h.cfg.Load().Polling.Interval)
			o := h.awaitStep(StepTick, "")
			if _, ok := heldOf(o.Snapshot, id); ok {
				h.t.Fatalf("after the issue left the active states: %s, want its hold forgotten", describe(o.Snapshot))
			}
			return ""
		}},
		{name: "handed off with an answer its agent never resolved", moveOn: func(h *harness, id string) string {
			if _, err := h.desk.AnswerCheckpoint(context.Background(), id, "approve-plan", "approve", "alice", store.AnswerAPI); err != nil {
				h.t.Fatal(err)
			}
			h.awaitStep(StepAnswer, id)
			h.advance(0) // the resumed run: the mock never calls respond_checkpoint
			h.awaitStep(StepExit, id)
			if got := h.trk.TransitionsOf(id); !slices.Equal(got, []string{"Human Review"}) {
				h.t.Fatalf("transitions = %q, want the handoff", got)
			}
			return "approve"
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			eng := &forgetter{}
			h := newHarness(t, checkpointConfig(t), harnessOptions{pollOnly: true, checkpoints: true, engine: eng})
			const id = "CP-5"
			h.trk.Put(issue(id, "Todo"))
			armOnFirstTurn(t, h, id, approvePlan(id))
			h.start()
			o := h.awaitStep(StepExit, id)
			if held, ok := heldOf(o.Snapshot, id); !ok || held.Reason != holdAwaiting {
				t.Fatalf("after the first run: %s, want %s held as awaiting_input", describe(o.Snapshot), id)
			}
			answer := c.moveOn(h, id)
			if got := eng.issues(); !slices.Contains(got, id) {
				t.Fatalf("the workflow engine was told to forget the sessions of %q, want %s's", got, id)
			}
			before := len(h.agent.promptsOf(id))

			if pending, err := h.st.PendingCheckpoints(ctx); err != nil || len(pending) != 0 {
				t.Fatalf("pending checkpoints = %+v, %v; want none", pending, err)
			}
			rows, err := h.st.IssueCheckpoints(ctx, id, 10)
			if err != nil || len(rows) != 1 || rows[0].Resolution != store.ResolvedAbandoned || rows[0].Answer != answer {
				t.Fatalf("checkpoints of %s = %+v, %v; want the one, resolved as abandoned, its answer %q kept", id, rows, err, answer)
			}
			sessions, err := h.st.LoadWorkflowSessions(ctx)
			if err != nil || len(sessions) != 0 {
				t.Fatalf("workflow sessions = %+v, %v; want none left to bind %s", sessions, err, id)
			}
			if snap, err := h.orch.Snapshot(ctx); err != nil || len(snap.Checkpoints) != 0 {
				t.Fatalf("snapshot checkpoints = %+v, %v; want none", snap.Checkpoints, err)
			}

			// The issue comes back: a fresh run, handed off, not held on the old question.
			h.setState(id, "Todo")
			h.advance(h.cfg.Load().Polling.Interval)
			o = h.awaitStep(StepExit, id)
			if held, ok := heldOf(o.Snapshot, id); ok {
				t.Fatalf("after the issue came back: %s (%s), want it run afresh, not held", describe(o.Snapshot), held.Message)
			}
			starts := h.agent.startsOf(id)
			if last := starts[len(starts)-1]; last.ResumeSessionID != "" {
				t.Errorf("the run after the issue came back resumed agent session %q, want a new one", last.ResumeSessionID)
			}
			for _, p := range h.agent.promptsOf(id)[before:] {
				if strings.Contains(p, "Checkpoint answers") {
					t.Fatalf("a prompt after the issue came back tells of the abandoned session's answers:\n%s", p)
				}
			}
			if st := h.statuses(id); st[len(st)-1] != store.StatusHandedOff {
				t.Fatalf("run statuses = %v, want the last handed off", st)
			}
		})
	}
}

// forgetter records the issues whose sessions the workflow engine is told to forget.
type forgetter struct {
	mu  sync.Mutex
	ids []string
}

func (f *forgetter) ForgetIssue(issueID string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ids = append(f.ids, issueID)
	return nil
}

func (f *forgetter) HandoffBlockers(context.Context, string, string) ([]engine.Blocker, error) {
	return nil, nil
}

func (f *forgetter) TraceHandoffRefused(context.Context, engine.Caller, []engine.Blocker, string) {}

func (f *forgetter) issues() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.ids)
}
