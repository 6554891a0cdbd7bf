package orchestrator

import (
	"context"

	"sortie/internal/store"
)

// Store is the part of store.Store the orchestrator uses.
type Store interface {
	StartRun(ctx context.Context, r store.Run) (int64, error)
	UpdateRunProcess(ctx context.Context, id int64, p store.Process) error
	UpdateRunProgress(ctx context.Context, id int64, p store.Progress) error
	FinishRun(ctx context.Context, id int64, end store.RunEnd) error
	RunsInProgress(ctx context.Context) ([]store.Run, error)
	RunsForIssue(ctx context.Context, issueID string, limit int) ([]store.Run, error)
	RunsForIdentifier(ctx context.Context, identifier string, limit int) ([]store.Run, error)
	MarkInterrupted(ctx context.Context, ids []int64) error
	CountRuns(ctx context.Context, issueIDs []string) (map[string]int, error)
	IssueTotals(ctx context.Context, issueIDs []string) (map[string]store.Totals, error)
	RecordProgress(ctx context.Context, id int64, p store.Progress, events []store.Event) error
	RecordProcessAndProgress(ctx context.Context, id int64, proc store.Process, p store.Progress, events []store.Event) error

	SaveRetry(ctx context.Context, r store.Retry) error
	DeleteRetry(ctx context.Context, issueID string) error
	LoadRetries(ctx context.Context) ([]store.Retry, error)

	SaveHold(ctx context.Context, h store.Hold) error
	DeleteHold(ctx context.Context, issueID string) error
	LoadHolds(ctx context.Context) ([]store.Hold, error)
}
