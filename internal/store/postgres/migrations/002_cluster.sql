-- 002: several daemons on one database (docs/cluster.md). Every expiry is compared
-- with the database server's clock (sortie_now_ms), never a daemon's: the daemons'
-- clocks may disagree, the server's is one.
CREATE FUNCTION sortie_now_ms() RETURNS BIGINT LANGUAGE sql VOLATILE AS
    $$ SELECT (extract(epoch FROM clock_timestamp()) * 1000)::BIGINT $$;

-- One row per daemon that joined: its heartbeat. A daemon is alive while
-- expires_at_ms is in the future.
CREATE TABLE cluster_daemons (
    daemon_id     TEXT    PRIMARY KEY,
    host          TEXT    NOT NULL,
    pid           INTEGER NOT NULL,
    started_at_ms BIGINT  NOT NULL,
    expires_at_ms BIGINT  NOT NULL,
    max_agents    INTEGER NOT NULL DEFAULT 0,  -- its own agent.max_concurrent_agents
    running       INTEGER NOT NULL DEFAULT 0   -- agents it ran at its last renewal
);

-- The lease of each issue a daemon runs or retries: at most one per issue. A lease
-- is live while expires_at_ms is in the future; its daemon renews it.
CREATE TABLE cluster_claims (
    issue_id      TEXT    PRIMARY KEY,
    identifier    TEXT    NOT NULL DEFAULT '',
    daemon_id     TEXT    NOT NULL,
    state         TEXT    NOT NULL DEFAULT '',  -- lower-cased tracker state, for per-state caps
    running       BOOLEAN NOT NULL DEFAULT TRUE, -- an agent runs (false: a retry waits)
    claimed_at_ms BIGINT  NOT NULL,
    expires_at_ms BIGINT  NOT NULL
);
CREATE INDEX cluster_claims_daemon ON cluster_claims (daemon_id);

-- The tracker-polling lease (one row, name 'poller') and the candidate list its
-- holder polled last, which the other daemons dispatch from.
CREATE TABLE cluster_poller (
    name          TEXT    PRIMARY KEY,
    daemon_id     TEXT    NOT NULL,
    expires_at_ms BIGINT  NOT NULL,
    polled_at_ms  BIGINT  NOT NULL DEFAULT 0,
    candidates    JSONB,
    error         TEXT    NOT NULL DEFAULT ''
);
