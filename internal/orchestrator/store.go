package orchestrator

import (
	"context"
	"time"

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

// DefaultStoreTimeout bounds one store call of the orchestrator's (Options.StoreTimeout).
const DefaultStoreTimeout = 30 * time.Second

// boundedStore gives every call a deadline, whatever context the caller passes: a
// store that stops answering (a hung PostgreSQL connection) fails the call after
// timeout instead of stalling the loop, or a worker's event reader after its turn was
// cancelled, for good. The callers' contexts are often detached from shutdown on
// purpose (a run's end is recorded after the daemon was told to stop), never from
// this bound.
type boundedStore struct {
	s       Store
	timeout time.Duration
}

// bounded calls f with ctx bounded by timeout.
func bounded[T any](ctx context.Context, timeout time.Duration, f func(context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return f(ctx)
}

// bounded0 is bounded for a call that returns only an error.
func bounded0(ctx context.Context, timeout time.Duration, f func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return f(ctx)
}

func (b boundedStore) StartRun(ctx context.Context, r store.Run) (int64, error) {
	return bounded(ctx, b.timeout, func(ctx context.Context) (int64, error) { return b.s.StartRun(ctx, r) })
}

func (b boundedStore) UpdateRunProcess(ctx context.Context, id int64, p store.Process) error {
	return bounded0(ctx, b.timeout, func(ctx context.Context) error { return b.s.UpdateRunProcess(ctx, id, p) })
}

func (b boundedStore) UpdateRunProgress(ctx context.Context, id int64, p store.Progress) error {
	return bounded0(ctx, b.timeout, func(ctx context.Context) error { return b.s.UpdateRunProgress(ctx, id, p) })
}

func (b boundedStore) FinishRun(ctx context.Context, id int64, end store.RunEnd) error {
	return bounded0(ctx, b.timeout, func(ctx context.Context) error { return b.s.FinishRun(ctx, id, end) })
}

func (b boundedStore) RunsInProgress(ctx context.Context) ([]store.Run, error) {
	return bounded(ctx, b.timeout, func(ctx context.Context) ([]store.Run, error) { return b.s.RunsInProgress(ctx) })
}

func (b boundedStore) RunsForIssue(ctx context.Context, issueID string, limit int) ([]store.Run, error) {
	return bounded(ctx, b.timeout, func(ctx context.Context) ([]store.Run, error) { return b.s.RunsForIssue(ctx, issueID, limit) })
}

func (b boundedStore) RunsForIdentifier(ctx context.Context, identifier string, limit int) ([]store.Run, error) {
	return bounded(ctx, b.timeout, func(ctx context.Context) ([]store.Run, error) { return b.s.RunsForIdentifier(ctx, identifier, limit) })
}

func (b boundedStore) MarkInterrupted(ctx context.Context, ids []int64) error {
	return bounded0(ctx, b.timeout, func(ctx context.Context) error { return b.s.MarkInterrupted(ctx, ids) })
}

func (b boundedStore) CountRuns(ctx context.Context, issueIDs []string) (map[string]int, error) {
	return bounded(ctx, b.timeout, func(ctx context.Context) (map[string]int, error) { return b.s.CountRuns(ctx, issueIDs) })
}

func (b boundedStore) IssueTotals(ctx context.Context, issueIDs []string) (map[string]store.Totals, error) {
	return bounded(ctx, b.timeout, func(ctx context.Context) (map[string]store.Totals, error) { return b.s.IssueTotals(ctx, issueIDs) })
}

func (b boundedStore) RecordProgress(ctx context.Context, id int64, p store.Progress, events []store.Event) error {
	return bounded0(ctx, b.timeout, func(ctx context.Context) error { return b.s.RecordProgress(ctx, id, p, events) })
}

func (b boundedStore) RecordProcessAndProgress(ctx context.Context, id int64, proc store.Process, p store.Progress, events []store.Event) error {
	return bounded0(ctx, b.timeout, func(ctx context.Context) error { return b.s.RecordProcessAndProgress(ctx, id, proc, p, events) })
}

func (b boundedStore) SaveRetry(ctx context.Context, r store.Retry) error {
	return bounded0(ctx, b.timeout, func(ctx context.Context) error { return b.s.SaveRetry(ctx, r) })
}

func (b boundedStore) DeleteRetry(ctx context.Context, issueID string) error {
	return bounded0(ctx, b.timeout, func(ctx context.Context) error { return b.s.DeleteRetry(ctx, issueID) })
}

func (b boundedStore) LoadRetries(ctx context.Context) ([]store.Retry, error) {
	return bounded(ctx, b.timeout, func(ctx context.Context) ([]store.Retry, error) { return b.s.LoadRetries(ctx) })
}

func (b boundedStore) SaveHold(ctx context.Context, h store.Hold) error {
	return bounded0(ctx, b.timeout, func(ctx context.Context) error { return b.s.SaveHold(ctx, h) })
}

func (b boundedStore) DeleteHold(ctx context.Context, issueID string) error {
	return bounded0(ctx, b.timeout, func(ctx context.Context) error { return b.s.DeleteHold(ctx, issueID) })
}

func (b boundedStore) LoadHolds(ctx context.Context) ([]store.Hold, error) {
	return bounded(ctx, b.timeout, func(ctx context.Context) ([]store.Hold, error) { return b.s.LoadHolds(ctx) })
}
