// Package cluster lets several Sortie daemons share one PostgreSQL store
// (docs/cluster.md). Each daemon joins with an identity and a heartbeat; it claims an
// issue with a lease row before it starts an agent on it, renews its leases while it
// runs or retries the issue, and releases them when it is done. The leases of a daemon
// that dies lapse after cluster.lease_ms, and the others then take over its runs
// (interrupted, resumed with their sessions) and its retries. One daemon at a time
// holds the polling lease and polls the tracker; the others dispatch from the list it
// publishes. LISTEN/NOTIFY tells every daemon at once of new work, freed slots and
// lifted holds. The tables are the store's (internal/store/postgres, migration 002);
// this package has a small pool of its own, so coordination never waits behind the
// store's writes.
package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"sortie/internal/orchestrator"
	"sortie/internal/store"
)

// channel is the LISTEN/NOTIFY channel; a payload is "<daemon id> <what>".
const channel = "sortie_cluster"

// claimLock is the transaction-level advisory lock that serialises claims and
// take-overs, so the caps are counted and a run is taken over by one daemon only.
const claimLock = 0x736f72746965 // "sortie"

// Options configure a daemon's membership.
type Options struct {
	// URL is the PostgreSQL URL (database_url); the store has migrated it already.
	URL string
	// Lease is cluster.lease_ms.
	Lease time.Duration
	// MaxAgents is this daemon's agent.max_concurrent_agents, shown to the others.
	MaxAgents int
	Logger    *slog.Logger
	// ID names this daemon; default host-pid-random, unique per start.
	ID string
}

// Cluster is one daemon's membership. It implements orchestrator.Cluster.
type Cluster struct {
	pool  *pgxpool.Pool
	id    string
	host  string
	lease time.Duration
	log   *slog.Logger

	view    atomic.Pointer[orchestrator.ClusterView]
	leading atomic.Bool
}

var _ orchestrator.Cluster = (*Cluster)(nil)

// Join connects, registers this daemon's heartbeat and returns its membership.
func Join(ctx context.Context, o Options) (*Cluster, error) {
	cfg, err := pgxpool.ParseConfig(o.URL)
	if err != nil {
		return nil, errors.New("cluster: database_url does not parse")
	}
	cfg.MaxConns = 4 // claims on the loop, renewals, take-overs and LISTEN
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("cluster: connecting: %w", err)
	}
	c := &Cluster{pool: pool, id: o.ID, lease: o.Lease, log: o.Logger}
	if c.log == nil {
		c.log = slog.Default()
	}
	c.host, _ = os.Hostname()
	if c.id == "" {
		var b [3]byte
		_, _ = rand.Read(b[:])
		c.id = fmt.Sprintf("%s-%d-%s", c.host, os.Getpid(), hex.EncodeToString(b[:]))
	}
	_, err = pool.Exec(ctx, `INSERT INTO cluster_daemons (daemon_id, host, pid, started_at_ms, expires_at_ms, max_agents)
		VALUES ($1, $2, $3, sortie_now_ms(), sortie_now_ms() + $4, $5)`,
		c.id, c.host, os.Getpid(), c.lease.Milliseconds(), o.MaxAgents)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("cluster: joining (is the database at schema 002? the store migrates it first): %w", err)
	}
	c.view.Store(&orchestrator.ClusterView{Self: c.id, At: time.Now()})
	return c, nil
}

// ID is this daemon's identity in the cluster.
func (c *Cluster) ID() string { return c.id }

// Close closes the cluster's pool. Call Leave first for a clean exit.
func (c *Cluster) Close() { c.pool.Close() }

// op bounds one coordination statement: a database that does not answer must not
// hold the loop.
func (c *Cluster) op(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, max(c.lease/3, time.Second))
}

// Claim implements orchestrator.Cluster.
func (c *Cluster) Claim(ctx context.Context, r orchestrator.ClaimRequest) (orchestrator.ClaimResult, error) {
	ctx, cancel := c.op(ctx)
	defer cancel()
	var res orchestrator.ClaimResult
	state := strings.ToLower(strings.TrimSpace(r.State))
	err := pgx.BeginFunc(ctx, c.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, claimLock); err != nil {
			return err
		}
		var owner string
		var live, held, orphan, stale bool
		var running, inState int
		// stale: the issue was handed off after the candidate list the claim comes
		// from was polled. The list still shows it in an active state; the next poll
		// will not. Without this, every daemon would claim it once more, only for its
		// worker's own read to find it gone.
		err := tx.QueryRow(ctx, `SELECT
			COALESCE((SELECT daemon_id FROM cluster_claims WHERE issue_id = $1 AND expires_at_ms > sortie_now_ms()), ''),
			EXISTS (SELECT 1 FROM holds WHERE issue_id = $1),
			EXISTS (SELECT 1 FROM runs WHERE issue_id = $1 AND status = 'running'),
			EXISTS (SELECT 1 FROM runs WHERE issue_id = $1 AND status = 'handed_off'
				AND ended_at_ms >= COALESCE((SELECT polled_at_ms FROM cluster_poller WHERE name = 'poller'), 0)),
			(SELECT COUNT(*) FROM cluster_claims WHERE running AND issue_id <> $1 AND expires_at_ms > sortie_now_ms()),
			(SELECT COUNT(*) FROM cluster_claims WHERE running AND issue_id <> $1 AND state = $2 AND expires_at_ms > sortie_now_ms())`,
			r.IssueID, state).Scan(&owner, &held, &orphan, &stale, &running, &inState)
		if err != nil {
			return err
		}
		live = owner != ""
		switch {
		case live && owner != c.id:
			res.Why = "daemon " + owner + " holds its lease"
			return nil
		case orphan:
			// A run of a daemon whose lease lapsed: taken over (Adopt) before anyone
			// starts another agent on the issue. Even when the lease is this daemon's
			// already: Adopt gives it the lease at once, and the run is marked
			// interrupted, and resumed with its session, only when the loop applies the
			// take-over; a claim in between would start the issue afresh.
			res.Why = "a stopped daemon's run of it waits to be taken over"
			return nil
		case !live && stale:
			res.Why = "handed off since the candidate list was polled"
			return nil
		case !live && held:
			res.Why = "held for a human"
			return nil
		case r.ClusterCap > 0 && running >= r.ClusterCap:
			res.Full, res.Why = true, fmt.Sprintf("the cluster runs %d agents (cluster.max_concurrent_agents)", running)
			return nil
		case r.StateCap >= 0 && inState >= r.StateCap:
			res.StateFull, res.Why = true, fmt.Sprintf("the cluster runs %d agents in state %s", inState, r.State)
			return nil
		}
		_, err = tx.Exec(ctx, `INSERT INTO cluster_claims (issue_id, identifier, daemon_id, state, running, claimed_at_ms, expires_at_ms)
			VALUES ($1, $2, $3, $4, TRUE, sortie_now_ms(), sortie_now_ms() + $5)
			ON CONFLICT (issue_id) DO UPDATE SET identifier = EXCLUDED.identifier, daemon_id = EXCLUDED.daemon_id,
				state = EXCLUDED.state, running = TRUE, claimed_at_ms = EXCLUDED.claimed_at_ms, expires_at_ms = EXCLUDED.expires_at_ms`,
			r.IssueID, r.Identifier, c.id, state, c.lease.Milliseconds())
		res.OK = err == nil
		return err
	})
	if err != nil {
		return orchestrator.ClaimResult{}, fmt.Errorf("cluster: claiming %s: %w", r.Identifier, err)
	}
	return res, nil
}

// Release implements orchestrator.Cluster.
func (c *Cluster) Release(ctx context.Context, issueID string) error {
	ctx, cancel := c.op(ctx)
	defer cancel()
	_, err := c.pool.Exec(ctx, `DELETE FROM cluster_claims WHERE issue_id = $1 AND daemon_id = $2`, issueID, c.id)
	return err
}

// Renew implements orchestrator.Cluster. It also keeps the polling lease when this
// daemon holds it, refreshes the view, and forgets daemons dead for a day.
func (c *Cluster) Renew(ctx context.Context, running []string) ([]string, error) {
	ctx, cancel := c.op(ctx)
	defer cancel()
	if running == nil {
		running = []string{}
	}
	var held []string
	err := pgx.BeginFunc(ctx, c.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE cluster_daemons SET expires_at_ms = sortie_now_ms() + $2, running = $3 WHERE daemon_id = $1`,
			c.id, c.lease.Milliseconds(), len(running))
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			// Forgotten (dead for a day, then back): join again.
			if _, err := tx.Exec(ctx, `INSERT INTO cluster_daemons (daemon_id, host, pid, started_at_ms, expires_at_ms, running)
				VALUES ($1, $2, $3, sortie_now_ms(), sortie_now_ms() + $4, $5)`, c.id, c.host, os.Getpid(), c.lease.Milliseconds(), len(running)); err != nil {
				return err
			}
		}
		rows, err := tx.Query(ctx, `UPDATE cluster_claims SET expires_at_ms = sortie_now_ms() + $2, running = (issue_id = ANY($3))
			WHERE daemon_id = $1 RETURNING issue_id`, c.id, c.lease.Milliseconds(), running)
		if err != nil {
			return err
		}
		held, err = pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE cluster_poller SET expires_at_ms = sortie_now_ms() + $2 WHERE name = 'poller' AND daemon_id = $1`,
			c.id, c.lease.Milliseconds()); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM cluster_daemons WHERE expires_at_ms < sortie_now_ms() - 86400000`)
		return err
	})
	if err != nil {
		c.setViewError(err)
		return nil, err
	}
	c.refreshView(ctx)
	return held, nil
}

// Adopt implements orchestrator.Cluster: in one transaction, under the claim lock, the
// running runs and the retries of issues no live lease covers become this daemon's.
func (c *Cluster) Adopt(ctx context.Context) ([]store.Run, []store.Retry, error) {
	ctx, cancel := c.op(ctx)
	defer cancel()
	var runs []store.Run
	var retries []store.Retry
	err := pgx.BeginFunc(ctx, c.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, claimLock); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT id, issue_id, identifier, attempt, agent_kind, workspace, ssh_host, workflow_path,
				started_at_ms, pid, pgid, remote_pgid, session_id, daemon_host, daemon_pid
			FROM runs r WHERE status = 'running' AND NOT EXISTS (SELECT 1 FROM cluster_claims c
				WHERE c.issue_id = r.issue_id AND c.expires_at_ms > sortie_now_ms()) ORDER BY id`)
		if err != nil {
			return err
		}
		runs, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Run, error) {
			var r store.Run
			var started int64
			err := row.Scan(&r.ID, &r.IssueID, &r.Identifier, &r.Attempt, &r.AgentKind, &r.Workspace, &r.SSHHost,
				&r.WorkflowPath, &started, &r.PID, &r.PGID, &r.RemotePGID, &r.SessionID, &r.DaemonHost, &r.DaemonPID)
			r.StartedAt, r.Status = time.UnixMilli(started).UTC(), store.StatusRunning
			return r, err
		})
		if err != nil {
			return err
		}
		rows, err = tx.Query(ctx, `SELECT issue_id, identifier, attempt, due_at_ms, kind, error, session_id, ssh_host
			FROM retries r WHERE NOT EXISTS (SELECT 1 FROM cluster_claims c
				WHERE c.issue_id = r.issue_id AND c.expires_at_ms > sortie_now_ms()) ORDER BY due_at_ms, issue_id`)
		if err != nil {
			return err
		}
		retries, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Retry, error) {
			var r store.Retry
			var due int64
			var kind string
			err := row.Scan(&r.IssueID, &r.Identifier, &r.Attempt, &due, &kind, &r.Error, &r.SessionID, &r.SSHHost)
			r.DueAt, r.Kind = time.UnixMilli(due).UTC(), store.RetryKind(kind)
			return r, err
		})
		if err != nil {
			return err
		}
		var ids, names []string
		seen := map[string]bool{}
		for _, r := range runs {
			if !seen[r.IssueID] {
				seen[r.IssueID] = true
				ids, names = append(ids, r.IssueID), append(names, r.Identifier)
			}
		}
		for _, r := range retries {
			if !seen[r.IssueID] {
				seen[r.IssueID] = true
				ids, names = append(ids, r.IssueID), append(names, r.Identifier)
			}
		}
		if len(ids) == 0 {
			return nil
		}
		_, err = tx.Exec(ctx, `INSERT INTO cluster_claims (issue_id, identifier, daemon_id, running, claimed_at_ms, expires_at_ms)
			SELECT i, n, $3, FALSE, sortie_now_ms(), sortie_now_ms() + $4 FROM unnest($1::text[], $2::text[]) AS t(i, n)
			ON CONFLICT (issue_id) DO UPDATE SET identifier = EXCLUDED.identifier, daemon_id = EXCLUDED.daemon_id,
				state = '', running = FALSE, claimed_at_ms = EXCLUDED.claimed_at_ms, expires_at_ms = EXCLUDED.expires_at_ms`,
			ids, names, c.id, c.lease.Milliseconds())
		return err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("cluster: taking over: %w", err)
	}
	return runs, retries, nil
}

// Leave implements orchestrator.Cluster.
func (c *Cluster) Leave(ctx context.Context) error {
	ctx, cancel := c.op(ctx)
	defer cancel()
	err := pgx.BeginFunc(ctx, c.pool, func(tx pgx.Tx) error {
		for _, q := range []string{
			`DELETE FROM cluster_claims WHERE daemon_id = $1`,
			`DELETE FROM cluster_poller WHERE daemon_id = $1`,
			`DELETE FROM cluster_daemons WHERE daemon_id = $1`,
		} {
			if _, err := tx.Exec(ctx, q, c.id); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		c.Changed(ctx, "release")
	}
	return err
}

// Changed implements orchestrator.Cluster: a NOTIFY the others act on at once. It is
// best effort: they poll anyway.
func (c *Cluster) Changed(ctx context.Context, what string) {
	ctx, cancel := c.op(ctx)
	defer cancel()
	if _, err := c.pool.Exec(ctx, `SELECT pg_notify($1, $2)`, channel, c.id+" "+what); err != nil {
		c.log.Debug("cluster: notify failed", "what", what, "error", err)
	}
}

// Listen calls onChange whenever another daemon notifies a change, until ctx ends,
// reconnecting after an error. Run it on its own goroutine.
func (c *Cluster) Listen(ctx context.Context, onChange func(what string)) {
	c.listen(ctx, onChange, nil)
}

// listen is Listen; ready, when not nil, is closed once the first LISTEN is in place.
func (c *Cluster) listen(ctx context.Context, onChange func(what string), ready chan struct{}) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := c.listenOnce(ctx, onChange, &ready)
		if ctx.Err() != nil {
			return
		}
		c.log.Warn("cluster: listening for the other daemons' changes failed; polling meanwhile", "error", err)
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return
		}
		backoff = min(2*backoff, c.lease)
	}
}

func (c *Cluster) listenOnce(ctx context.Context, onChange func(string), ready *chan struct{}) error {
	conn, err := c.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	// The connection carries a LISTEN: it never goes back to the pool.
	pc := conn.Hijack()
	defer pc.Close(context.Background())
	if _, err := pc.Exec(ctx, "LISTEN "+channel); err != nil {
		return err
	}
	if *ready != nil {
		close(*ready)
		*ready = nil
	}
	for {
		n, err := pc.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		from, what, _ := strings.Cut(n.Payload, " ")
		if from != c.id {
			onChange(what)
		}
	}
}

// View implements orchestrator.Cluster.
func (c *Cluster) View() orchestrator.ClusterView { return *c.view.Load() }

func (c *Cluster) setViewError(err error) {
	v := *c.view.Load()
	v.Error = err.Error()
	c.view.Store(&v)
}

// refreshView reads the daemons, leases and poller for snapshots.
func (c *Cluster) refreshView(ctx context.Context) {
	v := orchestrator.ClusterView{Self: c.id, At: time.Now()}
	err := func() error {
		rows, err := c.pool.Query(ctx, `SELECT daemon_id, host, pid, started_at_ms, expires_at_ms,
				expires_at_ms > sortie_now_ms(), running, max_agents
			FROM cluster_daemons WHERE expires_at_ms > sortie_now_ms() - 3600000 ORDER BY started_at_ms, daemon_id`)
		if err != nil {
			return err
		}
		v.Daemons, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (orchestrator.ClusterDaemon, error) {
			var d orchestrator.ClusterDaemon
			var started, expires int64
			err := row.Scan(&d.ID, &d.Host, &d.PID, &started, &expires, &d.Alive, &d.Running, &d.MaxAgents)
			d.Started, d.Expires = time.UnixMilli(started).UTC(), time.UnixMilli(expires).UTC()
			return d, err
		})
		if err != nil {
			return err
		}
		rows, err = c.pool.Query(ctx, `SELECT issue_id, identifier, daemon_id, running, expires_at_ms
			FROM cluster_claims WHERE expires_at_ms > sortie_now_ms() ORDER BY identifier, issue_id LIMIT 1000`)
		if err != nil {
			return err
		}
		v.Leases, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (orchestrator.ClusterLease, error) {
			var l orchestrator.ClusterLease
			var expires int64
			err := row.Scan(&l.IssueID, &l.Identifier, &l.Daemon, &l.Running, &expires)
			l.Expires = time.UnixMilli(expires).UTC()
			return l, err
		})
		if err != nil {
			return err
		}
		err = c.pool.QueryRow(ctx, `SELECT COALESCE((SELECT daemon_id FROM cluster_poller
			WHERE name = 'poller' AND expires_at_ms > sortie_now_ms()), '')`).Scan(&v.Leader)
		return err
	}()
	if err != nil {
		v.Error = "reading the cluster: " + err.Error()
	}
	c.view.Store(&v)
}
