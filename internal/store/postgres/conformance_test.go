package postgres

import (
	"context"
	"os"
	"testing"

	"sortie/internal/store"
	"sortie/internal/store/storetest"
	"sortie/internal/testkit/pgtest"
)

// One throwaway cluster serves the whole test binary; each test has databases of its
// own (pgtest.Server.NewDatabase).
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// openTemp opens a store on a new, empty database and closes it when t ends.
func openTemp(t testing.TB) (*Store, string) {
	t.Helper()
	url := pgtest.Shared(t).NewDatabase(t)
	s, err := Open(context.Background(), url)
	if err != nil {
		t.Fatalf("Open(%s): %v", url, err)
	}
	t.Cleanup(func() { s.Close() })
	return s, url
}

func TestStoreContract(t *testing.T) {
	storetest.Test(t, func(t *testing.T) store.Store {
		s, _ := openTemp(t)
		return s
	})
}

func TestTraceEvents_TrimmedPerSession(t *testing.T) {
	s, _ := openTemp(t)
	storetest.TraceTrim(t, s, func(sessionID string, n int) {
		// One statement: appending n events through the store one by one would be slow.
		_, err := s.pool.Exec(context.Background(), `INSERT INTO workflow_trace (session_id, span_id, tool, ts_ms, ok, detail)
			SELECT $1, 'span', 'get_skill', 0, true, g.i::text FROM generate_series(0, $2 - 1) AS g (i) ORDER BY g.i`, sessionID, n)
		if err != nil {
			t.Fatal(err)
		}
	})
}

func TestOpen_ReopenKeepsData(t *testing.T) {
	url := pgtest.Shared(t).NewDatabase(t)
	storetest.Reopen(t, func(t *testing.T) store.Store {
		s, err := Open(context.Background(), url)
		if err != nil {
			t.Fatalf("Open(%s): %v", url, err)
		}
		return s
	})
}
