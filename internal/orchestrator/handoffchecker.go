package orchestrator

import (
	"context"

	"sortie/internal/workflow/engine"
)

// HandoffChecker is the workflow engine's side of the hand-off gate of the agent's own
// tracker moves (*engine.Engine): the gates of an issue's workflow sessions no human
// answered, and the trace entry of a hand-off refused for them. Only ToolService uses
// it; it goes with ToolService to internal/agenttools, and with it the orchestrator's
// last import of the workflow engine. The run's own hand-off gate is the checkpoint
// component's (Checkpoints.HandoffRefusal).
type HandoffChecker interface {
	HandoffBlockers(ctx context.Context, issueID, want string) ([]engine.Blocker, error)
	TraceHandoffRefused(ctx context.Context, c engine.Caller, bs []engine.Blocker, how string)
}

var _ HandoffChecker = (*engine.Engine)(nil)
