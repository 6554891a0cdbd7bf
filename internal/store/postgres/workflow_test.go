package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"sortie/internal/store"
	"sortie/internal/store/storetest"
)

// TestCheckpoints_ConcurrentWritersTakeTurns: two daemons on one database answering
// and re-arming the checkpoints of one session at once behave as if they took turns,
// as SQLite's single writer makes them: one answer wins and the others conflict; every
// re-arming succeeds and leaves one pending issuance carrying that answer.
func TestCheckpoints_ConcurrentWritersTakeTurns(t *testing.T) {
	ctx := context.Background()
	a, url := openTemp(t)
	b, err := Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	daemons := []*Store{a, b}
	storetest.Arm(t, a, "s", storetest.NewCheckpoint("s", "plan", "approve", t0))

	const writers = 8
	run := func(write func(i int, s *Store) error) []error {
		var wg sync.WaitGroup
		errs := make([]error, writers)
		start := make(chan struct{})
		for i := range writers {
			wg.Go(func() {
				<-start
				errs[i] = write(i, daemons[i%2])
			})
		}
		close(start)
		wg.Wait()
		return errs
	}

	errs := run(func(i int, s *Store) error {
		_, err := s.AnswerCheckpoint(ctx, storetest.NewAnswer("s", "approve", fmt.Sprint("option-", i), t0.Add(time.Second)))
		return err
	})
	won := -1
	for i, err := range errs {
		switch {
		case err == nil && won >= 0:
			t.Errorf("answers %d and %d both succeeded, want one", won, i)
		case err == nil:
			won = i
		case !errors.Is(err, store.ErrConflict):
			t.Errorf("answer %d: %v, want success or ErrConflict", i, err)
		}
	}
	if won < 0 {
		t.Fatal("no answer succeeded")
	}

	errs = run(func(i int, s *Store) error {
		_, err := s.ArmCheckpoints(ctx, "s", []store.Checkpoint{storetest.NewCheckpoint("s", "plan", "approve", t0.Add(time.Minute))})
		return err
	})
	for i, err := range errs {
		if err != nil {
			t.Errorf("re-arming %d: %v", i, err)
		}
	}
	pending, err := a.PendingCheckpoints(ctx)
	if err != nil || len(pending) != 1 || pending[0].Answer != fmt.Sprint("option-", won) {
		t.Fatalf("pending after concurrent re-arming = %+v, %v; want one row carrying answer option-%d", pending, err, won)
	}
	history, _ := a.IssueCheckpoints(ctx, "i-s", 100)
	if len(history) != writers+1 {
		t.Errorf("issuances = %d, want the first and one per re-arming: %d", len(history), writers+1)
	}
}
