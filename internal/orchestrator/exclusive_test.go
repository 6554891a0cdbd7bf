package orchestrator

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"sortie/internal/config"
	"sortie/internal/store"
)

// turnLogAgent is an agent program for the mock adapter (agent.command: sh <script>)
// that speaks the child protocol and proves, from the workspace itself, that no two
// turns ever overlapped there: each turn takes a lock directory in the workspace (an
// atomic mkdir; failing to take it means another turn is in progress, recorded in the
// overlaps file outside every workspace) and appends "start"/"end" lines with its run
// id to .turn-log. It asks for human review in its second turn in a workspace, or in
// its first for issues whose identifier starts with EXR-.
const turnLogAgent = `# $1..: the mock adapter's turn file (unused)
if ! mkdir .turn-lock 2>/dev/null; then
	echo "overlap in $PWD: run $SORTIE_RUN_ID" >> '%[1]s'
fi
case "$SORTIE_ISSUE_IDENTIFIER" in
EXR-*) echo needs-human-review > .sortie/status ;;
*) grep -q '^start' .turn-log 2>/dev/null && echo needs-human-review > .sortie/status ;;
esac
echo "start $SORTIE_RUN_ID" >> .turn-log
echo '{"type":"session_started"}'
echo '{"type":"usage","input_tokens":10,"output_tokens":5}'
echo '{"type":"result","outcome":"success"}'
echo "end $SORTIE_RUN_ID" >> .turn-log
rmdir .turn-lock
`

// checkTurnLog reads a workspace's .turn-log and checks that its turns were strictly
// sequential: start r, end r, start r', end r', ... It returns the run ids in order.
func checkTurnLog(t *testing.T, ws string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(ws, ".turn-log"))
	if err != nil {
		t.Fatalf("reading the turn log: %v", err)
	}
	var runs []string
	open := ""
	for i, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		what, run, _ := strings.Cut(line, " ")
		switch {
		case what == "start" && open == "":
			open = run
			runs = append(runs, run)
		case what == "end" && open == run:
			open = ""
		default:
			t.Fatalf("%s line %d: %q with run %q open: want strictly alternating start/end of one run (two turns overlapped)\n%s",
				ws, i+1, line, open, data)
		}
	}
	if open != "" {
		t.Fatalf("%s: turn of run %s never ended", ws, open)
	}
	return runs
}

// exclusiveIssue names issue i of the exclusivity test: every fourth one (EXC-) gets a
// continuation session before its agent asks for review, the others (EXR-) ask for
// review in their first session.
func exclusiveIssue(i int) (identifier string, sessions int) {
	if i%4 == 0 {
		return fmt.Sprintf("EXC-%03d", i), 2
	}
	return fmt.Sprintf("EXR-%03d", i), 1
}

// TestExclusive_TwoAgentsNeverRunOneIssue drives 200 issues on 8 slots — a quarter of
// them through a first run and a continuation, all ending held for review — while other
// goroutines hammer Refresh and Snapshot. After every loop step no issue may be running
// twice or be in two of running, retrying and held; afterwards every workspace's own log
// must show its turns one after another.
func TestExclusive_TwoAgentsNeverRunOneIssue(t *testing.T) {
	// 250 runs: enough for every interleaving of exits, retries, polls and refreshes to
	// occur many times, few enough for the SQLite writer under -race.
	const issues, slots = 200, 8
	dir := t.TempDir()
	overlaps := filepath.Join(dir, "overlaps")
	script := filepath.Join(dir, "agent.sh")
	if err := os.WriteFile(script, []byte(fmt.Sprintf(turnLogAgent, overlaps)), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t, func(c *config.Config) {
		c.Agent.MaxConcurrentAgents = slots
		c.Agent.StallTimeout = 0 // fake time races ahead of the agents here
		c.Agent.Command = "sh " + script
	})
	// No stall checks: they would be loop steps on every clock move.
	// Reported however the test ends, even if Run never returns.
	t.Cleanup(func() {
		if data, err := os.ReadFile(overlaps); err == nil {
			t.Errorf("turns overlapped in a workspace, want never:\n%s", data)
		}
	})
	h := newHarness(t, cfg, harnessOptions{exitWhenIdle: true, dropObs: true, stallCheck: 24 * time.Hour, flush: time.Hour})
	for i := range issues {
		ident, _ := exclusiveIssue(i)
		is := issue(ident, "Todo")
		if i%3 == 0 {
			is.Priority = prio(i % 4)
		}
		h.trk.Put(is)
	}
	var peak int
	h.invariants = append(h.invariants, func(o Observation) string {
		peak = max(peak, len(o.Snapshot.Running))
		if len(o.Snapshot.Running) > slots {
			return fmt.Sprintf("%d running, want at most %d", len(o.Snapshot.Running), slots)
		}
		return ""
	})
	h.start()

	// Helpers run until Run returns. One moves the fake clock after every loop step: a
	// second while agents run (their exits wake it again), to the next timer when none
	// does (a retry, or the next poll, which always exists). Three others call Refresh
	// and Snapshot after every step that is not itself a poll, so their calls race with
	// exits, retries and ticks without feeding on themselves.
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-h.obs.wake():
				step := h.obs.latest()
				if len(step.Snapshot.Running) > 0 {
					h.clk.Advance(time.Second)
				} else if d, ok := h.clk.NextDue(); ok {
					h.clk.Advance(d)
				}
			case <-h.exited:
				return
			}
		}
	}()
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-h.obs.wake():
					if s := h.obs.latest().Step; s == StepTick || s == StepRefresh || s == StepStallCheck {
						continue
					}
					h.orch.Refresh()
					h.orch.Refresh()
					ctx, cancel := context.WithTimeout(context.Background(), time.Second)
					h.orch.Snapshot(ctx) // fails once Run has returned; that is fine
					cancel()
				case <-h.exited:
					return
				}
			}
		}()
	}
	err := h.wait()
	wg.Wait()
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	h.checkInvariants()

	for i := range issues {
		id, sessions := exclusiveIssue(i)
		runs := h.runs(id)
		if len(runs) != sessions {
			t.Fatalf("%s: %d runs, want %d", id, len(runs), sessions)
		}
		for _, r := range runs {
			if r.Status != store.StatusSucceeded {
				t.Fatalf("%s: run %d ended %s (%s), want succeeded", id, r.ID, r.Status, r.Error)
			}
		}
		if sessions == 2 && (runs[1].SessionID == "" || runs[1].SessionID != runs[0].SessionID) {
			t.Fatalf("%s: continuation ran in session %q (attempt %d), want the first run's %q resumed",
				id, runs[1].SessionID, runs[1].Attempt, runs[0].SessionID)
		}
		logged := checkTurnLog(t, workspacePath(t, cfg, id))
		var want []string
		for _, r := range runs {
			want = append(want, fmt.Sprint(r.ID))
		}
		if strings.Join(logged, ",") != strings.Join(want, ",") {
			t.Fatalf("%s: turns logged by runs %v, want %v", id, logged, want)
		}
	}
	if held := len(h.obs.latest().Snapshot.Held); held != issues {
		t.Fatalf("held issues at the end = %d, want all %d", held, issues)
	}
	if peak != slots {
		t.Fatalf("peak running = %d, want %d: the slots were never all used, so the test proved little", peak, slots)
	}
}
