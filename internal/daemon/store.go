package daemon

import (
	"context"
	"fmt"
	"log/slog"

	"sortie/internal/cluster"
	"sortie/internal/config"
	"sortie/internal/store"
	"sortie/internal/store/postgres"
	"sortie/internal/store/sqlite"
)

// daemonStore is what the daemon needs of its store, whichever the backend.
type daemonStore interface {
	store.Store
	Ping(ctx context.Context) error
}

// openDaemonStore opens the daemon's store: PostgreSQL with database_url, shared with other
// daemons (docs/cluster.md), else the SQLite file at db_path, this daemon's alone.
func openDaemonStore(ctx context.Context, cfg *config.Config) (daemonStore, string, error) {
	if cfg.Cluster.Enabled() {
		st, err := postgres.Open(ctx, cfg.Cluster.DatabaseURL)
		if err != nil {
			return nil, "", err
		}
		return st, cfg.Cluster.Redacted(), nil
	}
	st, err := sqlite.Open(ctx, cfg.DBPath)
	if err != nil {
		return nil, "", err
	}
	return st, cfg.DBPath, nil
}

// OpenStoreReader opens the daemon's store for reading, as `sortie status` does when
// no daemon answers: the SQLite file read-only, or the PostgreSQL database.
func OpenStoreReader(ctx context.Context, cfg *config.Config) (store.Reader, error) {
	if cfg.Cluster.Enabled() {
		return postgres.Open(ctx, cfg.Cluster.DatabaseURL)
	}
	return sqlite.OpenReadOnly(ctx, cfg.DBPath)
}

// joinCluster makes this daemon a member of the cluster of its database_url; nil
// without one.
func joinCluster(ctx context.Context, cfg *config.Config, log *slog.Logger) (*cluster.Cluster, error) {
	if !cfg.Cluster.Enabled() {
		return nil, nil
	}
	c, err := cluster.Join(ctx, cluster.Options{URL: cfg.Cluster.DatabaseURL, Lease: cfg.Cluster.Lease,
		MaxAgents: cfg.Agent.MaxConcurrentAgents, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("joining the cluster on %s: %w", cfg.Cluster.Redacted(), err)
	}
	log.Info("joined the cluster", "daemon_id", c.ID(), "database", cfg.Cluster.Redacted(), "lease", cfg.Cluster.Lease.String())
	return c, nil
}
