package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"sortie/internal/agent/mock"
	"sortie/internal/agent/sandbox"
	"sortie/internal/agent/supervise"
	"sortie/internal/agentsock"
)

// TestMain lets this test binary be what the daemon starts for a local agent: the
// daemon's own executable runs `supervise` (and `confine`, when agents are confined),
// and the mock adapter re-executes it as the agent, as cmd/sortie's main does.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "confine" {
		os.Exit(sandbox.Main(os.Args[2:], os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == "supervise" {
		os.Exit(supervise.Main(os.Args[2:], os.Stderr))
	}
	if mock.IsChild() {
		os.Exit(mock.ChildMain())
	}
	// Under -race every child would otherwise sleep a second before exiting
	// (GORACE atexit_sleep_ms defaults to 1000).
	os.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	os.Exit(m.Run())
}

// leakWorkflow is a daemon's WORKFLOW.md: the file tracker, the mock agent, one turn
// that succeeds and hands the issue off to Review, unconfined (the test binary is no
// `sortie confine`), SQLite next to it.
const leakWorkflow = `---
tracker:
  kind: file
  path: issues.json
  active_states: [Todo]
  handoff_state: Review
  terminal_states: [Done]
polling:
  interval_ms: 60000
workspace:
  root: ./ws
agent:
  kind: mock
  max_turns: 1
  sandbox: {mode: off}
  env: [GORACE] # TestMain's: without it a child built with -race sleeps a second at exit
db_path: ./sortie.db
mock:
  delay_ms: 0
  script: [success]
  status: needs-human-review
---
Work on {{ .issue.identifier }}.
`

// signalHandler is a slog handler that closes seen when a record with message msg is
// logged, and keeps every record's message for a failure's report.
type signalHandler struct {
	msg  string
	seen chan struct{}
	log  chan string
}

func (h *signalHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *signalHandler) Handle(_ context.Context, r slog.Record) error {
	select {
	case h.log <- r.Message:
	default:
	}
	if r.Message == h.msg {
		select {
		case <-h.seen:
		default:
			close(h.seen)
		}
	}
	return nil
}
func (h *signalHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *signalHandler) WithGroup(string) slog.Handler      { return h }

// freePort is a TCP port on loopback that nothing listened on a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// runOnce builds a daemon in a new directory holding one Todo issue and runs it with
// ExitWhenIdle: its agent hands the issue off, nothing is left to do, and Run returns
// by itself, closing every part. Its context is still live then, so a part left to its
// context's end instead of closed shows as a leak (goleak.Find, with ignore, before the
// context ends), and the issue must be in Review.
func runOnce(t *testing.T, i int, ignore goleak.Option) {
	t.Helper()
	// A short directory: the agent socket's path must fit a sockaddr_un.
	dir, err := os.MkdirTemp("", "sd")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	id := fmt.Sprintf("LEAK-%d", i)
	writeFile(t, dir, "issues.json", `[{"id": "1", "identifier": "`+id+`", "title": "leak", "state": "Todo"}]`)
	wf := writeFile(t, dir, "WORKFLOW.md", leakWorkflow)

	h := &signalHandler{msg: "run finished and handed off", seen: make(chan struct{}), log: make(chan string, 256)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d, err := New(ctx, Options{WorkflowPath: wf, Host: "127.0.0.1", Port: freePort(t), Version: testVersion,
		ExitWhenIdle: true, Logger: slog.New(h), Stderr: io.Discard})
	if err != nil {
		t.Fatalf("iteration %d: New: %v", i, err)
	}
	ran := make(chan error, 1)
	go func() { ran <- d.Run(ctx) }()
	select {
	case err := <-ran:
		if err != nil {
			t.Fatalf("iteration %d: Run: %v; log: %s", i, err, drain(h.log))
		}
	case <-time.After(time.Minute): // a failure guard, not a wait
		cancel()
		<-ran
		t.Fatalf("iteration %d: Run did not end by itself within a minute; log: %s", i, drain(h.log))
	}
	select {
	case <-h.seen:
	default:
		t.Fatalf("iteration %d: Run ended without handing the issue off; log: %s", i, drain(h.log))
	}
	var issues []struct{ Identifier, State string }
	b, err := os.ReadFile(filepath.Join(dir, "issues.json"))
	if err == nil {
		err = json.Unmarshal(b, &issues)
	}
	if err != nil || len(issues) != 1 || issues[0].State != "Review" {
		t.Fatalf("iteration %d: issues.json after the run: %s (%v), want %s in Review", i, b, err, id)
	}
	if err := goleak.Find(ignore); err != nil {
		t.Fatalf("iteration %d: goroutines left after Run returned, its context still live: %v", i, err)
	}
}

func drain(log chan string) string {
	var lines []string
	for {
		select {
		case l := <-log:
			lines = append(lines, l)
		default:
			return strings.Join(lines, " | ")
		}
	}
}

// TestDaemon_StartsAndStopsWithoutLeaking builds, runs and stops a daemon 100 times,
// each dispatching an issue to the mock agent, serving HTTP and watching WORKFLOW.md,
// and finds no goroutine left behind: every part stops, and is waited for, when the
// daemon closes.
func TestDaemon_StartsAndStopsWithoutLeaking(t *testing.T) {
	n := 100
	if testing.Short() {
		n = 10
	}
	ignore := goleak.IgnoreCurrent()
	for i := 1; i <= n; i++ {
		runOnce(t, i, ignore)
	}
	if err := goleak.Find(ignore); err != nil {
		t.Fatal(err)
	}
}

// TestNew_ClosesWhatItBuiltWhenAPartFails: a daemon whose last part fails (the port
// chosen for its server is taken) closes what it built before: the agent socket is
// removed, the watcher and the rest stop, and no goroutine is left.
func TestNew_ClosesWhatItBuiltWhenAPartFails(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	dir, err := os.MkdirTemp("", "sd")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	writeFile(t, dir, "issues.json", `[]`)
	wf := writeFile(t, dir, "WORKFLOW.md", leakWorkflow)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	d, err := New(t.Context(), Options{WorkflowPath: wf, Host: "127.0.0.1", Port: busy.Addr().(*net.TCPAddr).Port,
		Version: testVersion, Logger: slog.New(slog.DiscardHandler)})
	if err == nil || d != nil || !strings.Contains(err.Error(), "choose another server.port or --port") {
		t.Fatalf("New with a busy port = %v, %v; want the server's error", d, err)
	}
	if _, err := os.Stat(agentsock.SocketPath(filepath.Join(dir, "sortie.db"))); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the agent socket after a failed New: %v, want it removed", err)
	}
	if err := goleak.Find(ignore); err != nil {
		t.Fatal(err)
	}
}
