package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"sortie/internal/tracker"
)

// minPollGap is the least time between two of the poller's own polls of the tracker:
// refreshes the other daemons cause (a slot freed, a hold lifted) are answered from
// its last poll inside it, so they do not multiply the tracker's requests.
const minPollGap = time.Second

// Tracker wraps t, the tracker of this daemon's configuration, so that one daemon of
// the cluster at a time polls it for candidates: the one holding the polling lease,
// which publishes what it found. The others dispatch from that list; their claims and
// their workers' own reads of an issue before it starts keep a stale list harmless.
// interval is polling.interval in force: a list older than three of them and a lease
// counts as no list. Every other call goes to t.
func (c *Cluster) Tracker(t tracker.Tracker, interval func() time.Duration) tracker.Tracker {
	return &pollingTracker{Tracker: t, c: c, interval: interval}
}

type pollingTracker struct {
	tracker.Tracker
	c        *Cluster
	interval func() time.Duration

	mu       sync.Mutex
	polledAt time.Time
	last     []tracker.Issue
}

// Unwrap returns the wrapped tracker (tracker.As).
func (p *pollingTracker) Unwrap() tracker.Tracker { return p.Tracker }

// Watch passes on the wrapped tracker's change notifications (tracker.Watcher), if it
// has them: every daemon refreshes at a change, and the poller's poll tells the rest.
func (p *pollingTracker) Watch(ctx context.Context) <-chan struct{} {
	if w, ok := p.Tracker.(tracker.Watcher); ok {
		return w.Watch(ctx)
	}
	ch := make(chan struct{})
	go func() { <-ctx.Done(); close(ch) }()
	return ch
}

// FetchCandidateIssues polls the tracker when this daemon holds (or takes) the polling
// lease and publishes the result; otherwise it returns the poller's last list.
func (p *pollingTracker) FetchCandidateIssues(ctx context.Context) ([]tracker.Issue, error) {
	lead, err := p.c.lead(ctx)
	if err != nil {
		return nil, fmt.Errorf("cluster: asking for the polling lease: %w", err)
	}
	if !lead {
		return p.c.candidates(ctx, 3*p.interval()+p.c.lease)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.polledAt.IsZero() && time.Since(p.polledAt) < minPollGap {
		return cloneIssues(p.last), nil
	}
	start := time.Now()
	issues, err := p.Tracker.FetchCandidateIssues(ctx)
	if err != nil {
		p.c.publish(ctx, nil, 0, err)
		return nil, err
	}
	p.polledAt, p.last = start, cloneIssues(issues)
	if err := p.c.publish(ctx, issues, time.Since(start), nil); err != nil {
		p.c.log.Warn("cluster: publishing the candidate list failed; the other daemons wait for the next poll", "error", err)
	} else {
		p.c.Changed(ctx, "poll")
	}
	return issues, nil
}

func cloneIssues(in []tracker.Issue) []tracker.Issue {
	out := make([]tracker.Issue, len(in))
	for i, is := range in {
		out[i] = is.Clone()
	}
	return out
}

// lead takes or keeps the polling lease; it reports whether this daemon holds it.
func (c *Cluster) lead(ctx context.Context) (bool, error) {
	ctx, cancel := c.op(ctx)
	defer cancel()
	var holder string
	err := c.pool.QueryRow(ctx, `INSERT INTO cluster_poller (name, daemon_id, expires_at_ms)
		VALUES ('poller', $1, sortie_now_ms() + $2)
		ON CONFLICT (name) DO UPDATE SET daemon_id = EXCLUDED.daemon_id, expires_at_ms = EXCLUDED.expires_at_ms
			WHERE cluster_poller.daemon_id = $1 OR cluster_poller.expires_at_ms <= sortie_now_ms()
		RETURNING daemon_id`, c.id, c.lease.Milliseconds()).Scan(&holder)
	if err == pgx.ErrNoRows {
		c.leading.Store(false)
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if !c.leading.Swap(true) {
		c.log.Info("cluster: this daemon polls the tracker for the cluster now")
	}
	return true, nil
}

// publish stores the poller's candidate list, or the error its poll met. took is how
// long the poll took: the list is dated from the poll's start (by the database's
// clock), so that an issue handed off while it was read counts as handed off after it.
func (c *Cluster) publish(ctx context.Context, issues []tracker.Issue, took time.Duration, pollErr error) error {
	ctx, cancel := c.op(ctx)
	defer cancel()
	if pollErr != nil {
		_, err := c.pool.Exec(ctx, `UPDATE cluster_poller SET error = $2 WHERE name = 'poller' AND daemon_id = $1`, c.id, pollErr.Error())
		return err
	}
	if issues == nil {
		issues = []tracker.Issue{}
	}
	b, err := json.Marshal(issues)
	if err != nil {
		return err
	}
	_, err = c.pool.Exec(ctx, `UPDATE cluster_poller SET candidates = $2, polled_at_ms = sortie_now_ms() - $3, error = ''
		WHERE name = 'poller' AND daemon_id = $1`, c.id, b, took.Milliseconds())
	return err
}

// candidates returns the poller's last list, or an error when there is none younger
// than maxAge: then this daemon dispatches nothing rather than from a list that old.
func (c *Cluster) candidates(ctx context.Context, maxAge time.Duration) ([]tracker.Issue, error) {
	ctx, cancel := c.op(ctx)
	defer cancel()
	var b []byte
	var holder, pollErr string
	var age int64
	err := c.pool.QueryRow(ctx, `SELECT daemon_id, candidates, sortie_now_ms() - polled_at_ms, error
		FROM cluster_poller WHERE name = 'poller'`).Scan(&holder, &b, &age, &pollErr)
	if err == pgx.ErrNoRows {
		return nil, fmt.Errorf("cluster: no daemon has polled the tracker yet")
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: reading the candidate list: %w", err)
	}
	if pollErr != "" {
		return nil, fmt.Errorf("cluster: the polling daemon %s: %s", holder, pollErr)
	}
	if b == nil || time.Duration(age)*time.Millisecond > maxAge {
		return nil, fmt.Errorf("cluster: the polling daemon %s has not published a candidate list for %s", holder,
			(time.Duration(age) * time.Millisecond).Round(time.Second))
	}
	var issues []tracker.Issue
	if err := json.Unmarshal(b, &issues); err != nil {
		return nil, fmt.Errorf("cluster: the published candidate list does not parse: %w", err)
	}
	return issues, nil
}
