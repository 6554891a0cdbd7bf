// Package checkpoint is the daemon's side of structured-workflow checkpoints
// (docs/workflows.md, "Checkpoints and humans"): one component, the Desk, that knows
// every checkpoint waiting for a human and everything about answering one.
//
// The workflow engine (internal/workflow/engine) arms a checkpoint when the agent enters
// its activity; when the agent's turn ends with a checkpoint still unanswered, the
// orchestrator stops the run and holds the issue as awaiting_input, with the tracker
// comment and the hold message the Desk writes. A human answers on the dashboard,
// through the API (Desk.AnswerCheckpoint) or with a "/sortie choose <option>" tracker
// comment (Desk.ReadAnswers, which refuses comments of those who may not answer); the
// answer is stored, the Desk tells the orchestrator's loop (Desk.Answered,
// Desk.NextAnswered), and the loop lifts the hold and resumes the agent's session with
// the note the Desk writes (Desk.AnswerNote). Non-blocking checkpoints are answered with
// their default option by the Desk's own timer after autoAdvanceMs.
//
// The Desk also owns the hand-off gate (Desk.HandoffRefusal), the end of an issue's
// workflow sessions (Desk.EndIssue), the recovery of pending checkpoints at start-up
// (Desk.Recover) and, in a cluster, their sync from the shared store (Desk.ReadShared).
//
// # Lifetime
//
// New starts nothing; the Desk's timers are armed by the engine's hooks, by Recover and
// by ReadShared. Close stops every timer, cancels the store write of an auto-advance
// already under way and waits for it: after Close nothing the Desk started runs. An
// answer never blocks on, and never starts a goroutine for, the loop: the answered
// issues are kept in a set, and Answered is a wake-up channel of capacity one.
//
// # Wiring
//
// The engine calls the Desk (its Armed and Resolved hooks), and the Desk calls the engine
// (ForgetIssue, the hand-off gate): one of the two must exist before the other. New
// takes a function that builds the engine given the Desk's hooks, and calls it once,
// before it returns. So both are complete when New returns, in one construction order,
// with no pointer patched in afterwards and no hook that can fire into a half-built
// Desk. The other way round (an engine given an interface the Desk implements) would
// need the Desk built first without its engine, and then a setter.
//
// The orchestrator does not import this package: it talks to the Desk through an
// interface of its own (orchestrator.Checkpoints) in terms of store types and plain
// values, so that it does not depend on the workflow engine.
package checkpoint
