package cluster

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"sortie/internal/orchestrator"
	"sortie/internal/store"
	"sortie/internal/store/postgres"
	"sortie/internal/testkit/pgtest"
	"sortie/internal/tracker"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// testLease is long enough that no lease lapses by itself during a test: the tests
// make leases lapse on purpose (lapse), so nothing waits on the clock.
const testLease = time.Minute

// db is a migrated database of its own for t, with the store on it.
func db(t testing.TB) (string, *postgres.Store) {
	t.Helper()
	url := pgtest.Shared(t).NewDatabase(t)
	st, err := postgres.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return url, st
}

func join(t testing.TB, url, id string) *Cluster {
	t.Helper()
	c, err := Join(context.Background(), Options{URL: url, Lease: testLease, MaxAgents: 4, ID: id})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// lapse makes every lease and the heartbeat of daemon c expire now, as if it had died
// a lease ago.
func lapse(t *testing.T, c *Cluster) {
	t.Helper()
	ctx := context.Background()
	for _, q := range []string{
		`UPDATE cluster_claims SET expires_at_ms = sortie_now_ms() - 1 WHERE daemon_id = $1`,
		`UPDATE cluster_daemons SET expires_at_ms = sortie_now_ms() - 1 WHERE daemon_id = $1`,
		`UPDATE cluster_poller SET expires_at_ms = sortie_now_ms() - 1 WHERE daemon_id = $1`,
	} {
		if _, err := c.pool.Exec(ctx, q, c.id); err != nil {
			t.Fatal(err)
		}
	}
}

func claim(t *testing.T, c *Cluster, issueID string) orchestrator.ClaimResult {
	t.Helper()
	r, err := c.Claim(context.Background(), orchestrator.ClaimRequest{IssueID: issueID, Identifier: "C-" + issueID, State: "Todo", StateCap: -1})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestClaim_OneDaemonPerIssueUntilReleased(t *testing.T) {
	url, _ := db(t)
	a, b := join(t, url, "a"), join(t, url, "b")
	if r := claim(t, a, "1"); !r.OK {
		t.Fatalf("a's first claim: %+v", r)
	}
	if r := claim(t, a, "1"); !r.OK {
		t.Fatalf("a claiming its own issue again (a retry starting): %+v", r)
	}
	if r := claim(t, b, "1"); r.OK || r.Why != "daemon a holds its lease" {
		t.Fatalf("b's claim of a's issue: %+v, want refused naming a", r)
	}
	if err := b.Release(context.Background(), "1"); err != nil {
		t.Fatal(err)
	}
	if r := claim(t, b, "1"); r.OK {
		t.Fatal("b's release of a's lease released it")
	}
	if err := a.Release(context.Background(), "1"); err != nil {
		t.Fatal(err)
	}
	if r := claim(t, b, "1"); !r.OK {
		t.Fatalf("b's claim after a released: %+v", r)
	}
}

func TestClaim_RefusedWhileHeldForAHuman(t *testing.T) {
	url, st := db(t)
	a := join(t, url, "a")
	ctx := context.Background()
	if err := st.SaveHold(ctx, store.Hold{IssueID: "1", Identifier: "C-1", Reason: "blocked", Since: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if r := claim(t, a, "1"); r.OK || r.Why != "held for a human" {
		t.Fatalf("claim of a held issue: %+v", r)
	}
	if err := st.DeleteHold(ctx, "1"); err != nil {
		t.Fatal(err)
	}
	if r := claim(t, a, "1"); !r.OK {
		t.Fatalf("claim after the hold was lifted: %+v", r)
	}
}

// An issue handed off after the published candidate list was polled is still active
// in that list; it is not claimed again until a newer poll.
func TestClaim_NotAgainFromAListOlderThanItsHandOff(t *testing.T) {
	url, st := db(t)
	a, b := join(t, url, "a"), join(t, url, "b")
	ctx := context.Background()
	ft := &fakeTracker{list: []tracker.Issue{{ID: "1", Identifier: "C-1", Title: "one", State: "Todo"}}}
	ta := a.Tracker(ft, func() time.Duration { return time.Minute })
	if _, err := ta.FetchCandidateIssues(ctx); err != nil {
		t.Fatal(err)
	}
	if r := claim(t, a, "1"); !r.OK {
		t.Fatalf("first claim: %+v", r)
	}
	id, err := st.StartRun(ctx, store.Run{IssueID: "1", Identifier: "C-1", Attempt: 1, AgentKind: "mock", StartedAt: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.FinishRun(ctx, id, store.RunEnd{Status: store.StatusHandedOff, EndedAt: time.Now().Add(time.Second)}); err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctx, "1"); err != nil {
		t.Fatal(err)
	}
	if r := claim(t, b, "1"); r.OK || r.Why != "handed off since the candidate list was polled" {
		t.Fatalf("claim from the list polled before the hand-off: %+v", r)
	}
	// A poll after the hand-off (a human moved it back to Todo, say) makes it claimable.
	if _, err := a.pool.Exec(ctx, `UPDATE cluster_poller SET polled_at_ms = sortie_now_ms() + 2000`); err != nil {
		t.Fatal(err)
	}
	if r := claim(t, b, "1"); !r.OK {
		t.Fatalf("claim from a list polled after the hand-off: %+v", r)
	}
}

func TestClaim_CapsHoldAcrossDaemons(t *testing.T) {
	url, _ := db(t)
	a, b := join(t, url, "a"), join(t, url, "b")
	ctx := context.Background()
	req := func(id, state string, clusterCap, stateCap int) orchestrator.ClaimRequest {
		return orchestrator.ClaimRequest{IssueID: id, Identifier: "C-" + id, State: state, ClusterCap: clusterCap, StateCap: stateCap}
	}
	mustClaim := func(c *Cluster, r orchestrator.ClaimRequest) orchestrator.ClaimResult {
		t.Helper()
		res, err := c.Claim(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if r := mustClaim(a, req("1", "Todo", 3, -1)); !r.OK {
		t.Fatal(r)
	}
	if r := mustClaim(b, req("2", "In Progress", 3, 1)); !r.OK {
		t.Fatal(r)
	}
	// The state cap counts the other daemon's agent in that state.
	if r := mustClaim(a, req("3", "in progress", 3, 1)); r.OK || !r.StateFull {
		t.Fatalf("a second agent in a state capped at 1: %+v", r)
	}
	if r := mustClaim(a, req("3", "Todo", 3, -1)); !r.OK {
		t.Fatal(r)
	}
	// Three agents run in the cluster: the cap of 3 refuses a fourth, on either daemon.
	if r := mustClaim(b, req("4", "Todo", 3, -1)); r.OK || !r.Full {
		t.Fatalf("a fourth agent under a cluster cap of 3: %+v", r)
	}
	// An issue waiting for a retry keeps its lease but no slot.
	if _, err := a.Renew(ctx, []string{"1"}); err != nil {
		t.Fatal(err)
	}
	if r := mustClaim(b, req("4", "Todo", 3, -1)); !r.OK {
		t.Fatalf("after a's issue 3 went to wait for a retry: %+v", r)
	}
	if r := mustClaim(b, req("3", "Todo", 0, -1)); r.OK {
		t.Fatal("b claimed issue 3, whose retry a holds")
	}
}

// Many claims at once from three daemons: every issue goes to exactly one of them.
func TestClaim_ConcurrentDaemonsNeverShareAnIssue(t *testing.T) {
	url, _ := db(t)
	cs := []*Cluster{join(t, url, "a"), join(t, url, "b"), join(t, url, "c")}
	const issues = 40
	var mu sync.Mutex
	owners := map[string][]string{}
	var wg sync.WaitGroup
	for _, c := range cs {
		for g := range 3 {
			wg.Go(func() {
				for i := range issues {
					id := fmt.Sprint((i + g*7) % issues)
					r, err := c.Claim(context.Background(), orchestrator.ClaimRequest{IssueID: id, Identifier: id, State: "Todo", StateCap: -1})
					if err != nil {
						t.Error(err)
						return
					}
					if r.OK {
						mu.Lock()
						if !slices.Contains(owners[id], c.id) {
							owners[id] = append(owners[id], c.id)
						}
						mu.Unlock()
					}
				}
			})
		}
	}
	wg.Wait()
	if len(owners) != issues {
		t.Errorf("%d issues claimed, want %d", len(owners), issues)
	}
	for id, o := range owners {
		if len(o) != 1 {
			t.Errorf("issue %s was claimed by %v", id, o)
		}
	}
}

// A daemon whose leases lapsed: another takes over its running run and its retry, in
// one step, and the dead daemon's renewal then says it holds neither.
func TestAdopt_TakesOverADeadDaemonsRunsAndRetries(t *testing.T) {
	url, st := db(t)
	a, b := join(t, url, "a"), join(t, url, "b")
	ctx := context.Background()
	for _, id := range []string{"1", "2", "3"} {
		if r := claim(t, a, id); !r.OK {
			t.Fatal(r)
		}
	}
	run := store.Run{IssueID: "1", Identifier: "C-1", Attempt: 1, AgentKind: "mock", Workspace: "/ws/C-1", StartedAt: time.Now()}
	run.SessionID = "sess-1"
	runID, err := st.StartRun(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SaveRetry(ctx, store.Retry{IssueID: "2", Identifier: "C-2", Attempt: 2, DueAt: time.Now(), Kind: store.RetryFailure}); err != nil {
		t.Fatal(err)
	}
	// Alive, a's work is not b's to take.
	if runs, retries, err := b.Adopt(ctx); err != nil || len(runs) != 0 || len(retries) != 0 {
		t.Fatalf("adopting from a live daemon: %v %v %v", runs, retries, err)
	}
	// Nor may b start another agent on a's issue.
	if r := claim(t, b, "1"); r.OK {
		t.Fatal("b claimed a's running issue")
	}
	lapse(t, a)
	// Lapsed, but its run is not taken over yet: no claim until it is.
	if r := claim(t, b, "1"); r.OK || r.Why != "a stopped daemon's run of it waits to be taken over" {
		t.Fatalf("claim of a dead daemon's running issue before the take-over: %+v", r)
	}
	runs, retries, err := b.Adopt(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 || runs[0].ID != runID || runs[0].SessionID != "sess-1" || runs[0].Workspace != "/ws/C-1" {
		t.Fatalf("adopted runs %+v, want run %d with its session", runs, runID)
	}
	if len(retries) != 1 || retries[0].IssueID != "2" || retries[0].Attempt != 2 {
		t.Fatalf("adopted retries %+v, want C-2's", retries)
	}
	// The lease is b's now, but until b marks the run interrupted (and resumes it with
	// its session) no dispatch of b's may start the issue afresh.
	if r := claim(t, b, "1"); r.OK || r.Why != "a stopped daemon's run of it waits to be taken over" {
		t.Fatalf("claim of a taken-over issue whose run is still running: %+v", r)
	}
	if err := st.MarkInterrupted(ctx, []int64{runID}); err != nil {
		t.Fatal(err)
	}
	if r := claim(t, b, "1"); !r.OK {
		t.Fatalf("claim once the taken-over run is marked interrupted: %+v", r)
	}
	// Taken over once: a third daemon finds nothing.
	c := join(t, url, "c")
	if runs, retries, err := c.Adopt(ctx); err != nil || len(runs) != 0 || len(retries) != 0 {
		t.Fatalf("a second take-over: %v %v %v", runs, retries, err)
	}
	// Issue 3 (a's lapsed claim, nothing running): anyone may claim it now.
	if r := claim(t, c, "3"); !r.OK {
		t.Fatalf("claim of a lapsed lease: %+v", r)
	}
	// a comes back (it was only paused): it holds none of them any more.
	held, err := a.Renew(ctx, []string{"1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(held) != 0 {
		t.Errorf("a's renewal after the take-over holds %v, want nothing", held)
	}
	held, err = b.Renew(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(held)
	if !slices.Equal(held, []string{"1", "2"}) {
		t.Errorf("b holds %v, want [1 2]", held)
	}
}

func TestLeave_ReleasesEverythingAtOnce(t *testing.T) {
	url, st := db(t)
	a, b := join(t, url, "a"), join(t, url, "b")
	ctx := context.Background()
	if r := claim(t, a, "1"); !r.OK {
		t.Fatal(r)
	}
	if err := st.SaveRetry(ctx, store.Retry{IssueID: "1", Identifier: "C-1", Attempt: 1, DueAt: time.Now(), Kind: store.RetryResume, SessionID: "s"}); err != nil {
		t.Fatal(err)
	}
	if err := a.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	_, retries, err := b.Adopt(ctx)
	if err != nil || len(retries) != 1 || retries[0].SessionID != "s" {
		t.Fatalf("after a left, b adopts %+v (%v), want its resume retry", retries, err)
	}
}

func TestView_ShowsDaemonsLeasesAndThePoller(t *testing.T) {
	url, _ := db(t)
	a, b := join(t, url, "a"), join(t, url, "b")
	ctx := context.Background()
	if r := claim(t, b, "7"); !r.OK {
		t.Fatal(r)
	}
	if _, err := a.lead(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Renew(ctx, nil); err != nil {
		t.Fatal(err)
	}
	v := a.View()
	if v.Self != "a" || v.Leader != "a" || v.Error != "" {
		t.Errorf("view %+v", v)
	}
	if len(v.Daemons) != 2 || !v.Daemons[0].Alive || v.Daemons[1].MaxAgents != 4 {
		t.Errorf("daemons %+v", v.Daemons)
	}
	if len(v.Leases) != 1 || v.Leases[0].Daemon != "b" || v.Leases[0].Identifier != "C-7" || !v.Leases[0].Running {
		t.Errorf("leases %+v", v.Leases)
	}
}

// fakeTracker counts candidate polls.
type fakeTracker struct {
	tracker.Tracker
	mu    sync.Mutex
	polls int
	list  []tracker.Issue
}

func (f *fakeTracker) FetchCandidateIssues(context.Context) ([]tracker.Issue, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.polls++
	return f.list, nil
}

func TestTracker_OneDaemonPollsTheOthersReadItsList(t *testing.T) {
	url, _ := db(t)
	a, b := join(t, url, "a"), join(t, url, "b")
	ctx := context.Background()
	prio := 2
	ft := &fakeTracker{list: []tracker.Issue{{ID: "1", Identifier: "C-1", Title: "one", State: "Todo", Priority: &prio, Labels: []string{"x"}}}}
	interval := func() time.Duration { return time.Minute }
	ta, tb := a.Tracker(ft, interval), b.Tracker(ft, interval)
	got, err := ta.FetchCandidateIssues(ctx)
	if err != nil || len(got) != 1 {
		t.Fatalf("the poller's poll: %v %v", got, err)
	}
	got, err = tb.FetchCandidateIssues(ctx)
	if err != nil || len(got) != 1 || got[0].Identifier != "C-1" || *got[0].Priority != 2 || got[0].Labels[0] != "x" {
		t.Fatalf("the follower's list: %+v %v", got, err)
	}
	if ft.polls != 1 {
		t.Errorf("the tracker was polled %d times, want once: only the poller polls", ft.polls)
	}
	// The poller dies: the next daemon to poll takes the polling lease.
	lapse(t, a)
	if _, err := tb.FetchCandidateIssues(ctx); err != nil {
		t.Fatal(err)
	}
	if ft.polls != 2 || !b.leading.Load() {
		t.Errorf("after the poller's lease lapsed: %d polls, b leading %v", ft.polls, b.leading.Load())
	}
	if _, ok := tracker.As[*fakeTracker](ta); !ok {
		t.Error("the polling tracker does not unwrap to the tracker it wraps")
	}
}

func TestListen_HearsTheOthersChanges(t *testing.T) {
	url, _ := db(t)
	a, b := join(t, url, "a"), join(t, url, "b")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	heard := make(chan string, 4)
	ready := make(chan struct{})
	go b.listen(ctx, func(what string) { heard <- what }, ready)
	<-ready
	b.Changed(ctx, "own") // its own changes are not news to it
	a.Changed(ctx, "release")
	if got := <-heard; got != "release" {
		t.Errorf("b heard %q, want a's release", got)
	}
}
