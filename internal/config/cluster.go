package config

import (
	"fmt"
	"net/url"
	"strings"
	"time"
)

// ClusterConfig is `database_url` and the `cluster:` section: several daemons sharing
// one PostgreSQL database (docs/cluster.md). Zero DatabaseURL: one daemon on SQLite.
type ClusterConfig struct {
	// DatabaseURL is the PostgreSQL connection URL (postgres://…), $VAR references
	// resolved; SORTIE_DATABASE_URL overrides it. It holds a password: never log it
	// (Redacted).
	DatabaseURL string
	// Lease is how long a daemon's claims and its heartbeat last without renewal
	// (cluster.lease_ms, default 30 s): how long the others wait before they take
	// over the runs of a daemon that died.
	Lease time.Duration
	// MaxConcurrentAgents caps the agents of all daemons together
	// (cluster.max_concurrent_agents); 0: only each daemon's own cap.
	MaxConcurrentAgents int
}

// Enabled reports whether the store is PostgreSQL shared with other daemons.
func (c ClusterConfig) Enabled() bool { return c.DatabaseURL != "" }

// Redacted is DatabaseURL with its password replaced, for messages.
func (c ClusterConfig) Redacted() string { return RedactURL(c.DatabaseURL) }

// RedactURL replaces the password of a URL, in its user part or a password= or
// sslpassword= parameter, with xxxxx; a string that does not parse as a URL is
// replaced whole, since it cannot be told where its password is.
func RedactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" {
		return "(unparseable URL)"
	}
	if q := u.Query(); q.Has("password") || q.Has("sslpassword") {
		for _, k := range []string{"password", "sslpassword"} {
			if q.Has(k) {
				q.Set(k, "xxxxx")
			}
		}
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

// The bounds of cluster.lease_ms: shorter leases are renewed too often for a database
// round trip to be safe; longer ones leave a dead daemon's issues waiting too long.
const (
	DefaultClusterLease = 30 * time.Second
	minClusterLeaseMS   = 1000
	maxClusterLeaseMS   = 10 * 60 * 1000
)

// readDatabaseURL reads database_url. The URL is checked for its shape only; `sortie
// validate` and start-up check that the driver accepts it.
func (b *builder) readDatabaseURL(cfg *Config, _, raw map[string]any) {
	const field = "database_url"
	v, ok := raw[field]
	if !ok || v == nil {
		return
	}
	s, isStr := v.(string)
	if !isStr {
		// Not gotValue: a mistyped URL may still hold a password.
		b.errorf(field, "must be a string (a postgres:// URL)")
		return
	}
	s = strings.TrimSpace(s)
	if b.sources[field] == "" && strings.Contains(s, "$") {
		out, missing := expandEnv(s, b.env)
		b.reportMissing(field, missing)
		s = strings.TrimSpace(out)
	}
	if s != "" {
		if err := checkDatabaseURL(s); err != nil {
			b.errorf(field, "%v", err)
		} else {
			cfg.Cluster.DatabaseURL = s
		}
	}
}

// checkDatabaseURL checks the shape of a PostgreSQL URL without printing it: its
// password must never reach a log.
func checkDatabaseURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("is not a valid URL (want postgres://user:password@host:5432/database)")
	}
	if u.Scheme != "postgres" && u.Scheme != "postgresql" {
		return fmt.Errorf("must be a postgres:// or postgresql:// URL (got scheme %q); for SQLite use db_path", u.Scheme)
	}
	if u.Host == "" && u.Query().Get("host") == "" {
		return fmt.Errorf("names no host (want postgres://user:password@host:5432/database)")
	}
	return nil
}
