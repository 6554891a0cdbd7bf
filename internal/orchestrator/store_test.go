package orchestrator

import (
	"context"
	"errors"
	"testing"
	"time"

	"sortie/internal/store"
)

// hungStore is a store whose every call waits for its context: a PostgreSQL connection
// that stopped answering.
type hungStore struct{ Store }

func (hungStore) SaveRetry(ctx context.Context, _ store.Retry) error {
	<-ctx.Done()
	return ctx.Err()
}

func (hungStore) RunsForIssue(ctx context.Context, _ string, _ int) ([]store.Run, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestBoundedStore_AHungStoreFailsTheCall: a store call gets a deadline whatever the
// caller's context (here one that never ends, as the worker's detached ones), so a hung
// store fails the call instead of stalling the loop or a worker for good.
func TestBoundedStore_AHungStoreFailsTheCall(t *testing.T) {
	b := boundedStore{s: hungStore{}, timeout: time.Millisecond}
	if err := b.SaveRetry(context.WithoutCancel(t.Context()), store.Retry{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("SaveRetry on a hung store = %v, want the deadline exceeded", err)
	}
	if _, err := b.RunsForIssue(context.Background(), "1", 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("RunsForIssue on a hung store = %v, want the deadline exceeded", err)
	}
}
