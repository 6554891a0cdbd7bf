package pgtest

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

// TestStart_AnswersQueries: the throwaway cluster takes connections on its port.
func TestStart_AnswersQueries(t *testing.T) {
	s := Start(t)
	psql, err := exec.LookPath("psql")
	if err != nil {
		t.Skipf("skipped: no psql client to ask the server with: %v", err)
	}
	out, err := exec.Command(psql, "-X", "-A", "-t", "-d", s.URL("postgres"), "-c", "SELECT 40 + 2").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "42" {
		t.Fatalf("psql: %q, %v", out, err)
	}
}

// TestNewDatabase_IsolatesTests: two databases of the shared cluster do not see each
// other's tables, and each is dropped when its test ends.
func TestNewDatabase_IsolatesTests(t *testing.T) {
	ctx := context.Background()
	s := Shared(t)
	if again := Shared(t); again != s {
		t.Fatalf("Shared started a second cluster (port %d, then %d)", s.Port, again.Port)
	}
	var first string
	t.Run("first", func(t *testing.T) {
		first = s.NewDatabase(t)
		conn := connect(t, first)
		if _, err := conn.Exec(ctx, `CREATE TABLE mine (x int)`); err != nil {
			t.Fatal(err)
		}
	})
	second := s.NewDatabase(t)
	if second == first {
		t.Fatalf("NewDatabase returned %s twice", first)
	}
	var n int
	if err := connect(t, second).QueryRow(ctx, `SELECT COUNT(*) FROM pg_tables WHERE tablename = 'mine'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("tables named mine in the second database = %d (%v), want 0", n, err)
	}
	name := first[strings.LastIndex(first, "/")+1 : strings.Index(first, "?")]
	if err := connect(t, s.URL("postgres")).QueryRow(ctx, `SELECT COUNT(*) FROM pg_database WHERE datname = $1`, name).Scan(&n); err != nil || n != 0 {
		t.Fatalf("databases named %s after its test = %d (%v), want it dropped", name, n, err)
	}
}

func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}
