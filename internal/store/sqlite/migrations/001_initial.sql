-- 001: the initial schema. Times are integer milliseconds since the Unix epoch, UTC
-- (columns end in _ms). Text columns that may be absent are NOT NULL DEFAULT '' so
-- readers never meet NULL.

-- One row per run, inserted when the run starts (status running) and updated as it
-- goes, so a crash at any moment leaves the row behind.
CREATE TABLE runs (
    id                INTEGER PRIMARY KEY AUTOINCREMENT, -- never reused
    issue_id          TEXT    NOT NULL,
    identifier        TEXT    NOT NULL,
    attempt           INTEGER NOT NULL CHECK (attempt >= 1),
    agent_kind        TEXT    NOT NULL,
    workspace         TEXT    NOT NULL DEFAULT '',
    ssh_host          TEXT    NOT NULL DEFAULT '',
    workflow_path     TEXT    NOT NULL DEFAULT '',
    status            TEXT    NOT NULL DEFAULT 'running' CHECK (status IN
                          ('running', 'succeeded', 'handed_off', 'blocked', 'budget_exhausted',
                           'failed', 'timed_out', 'stalled', 'cancelled', 'interrupted')),
    started_at_ms     INTEGER NOT NULL,
    ended_at_ms       INTEGER,                           -- NULL while running
    updated_at_ms     INTEGER NOT NULL,                  -- last write, by the store's clock
    error             TEXT    NOT NULL DEFAULT '',
    pid               INTEGER NOT NULL DEFAULT 0,
    pgid              INTEGER NOT NULL DEFAULT 0,
    cli_version       TEXT    NOT NULL DEFAULT '',
    session_id        TEXT    NOT NULL DEFAULT '',
    model             TEXT    NOT NULL DEFAULT '',
    turns             INTEGER NOT NULL DEFAULT 0,
    input_tokens      INTEGER NOT NULL DEFAULT 0,
    output_tokens     INTEGER NOT NULL DEFAULT 0,
    total_tokens      INTEGER NOT NULL DEFAULT 0,
    cache_read_tokens INTEGER NOT NULL DEFAULT 0,
    cost_usd          REAL    NOT NULL DEFAULT 0,
    daemon_host       TEXT    NOT NULL DEFAULT '',       -- the daemon that started the run
    daemon_pid        INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX runs_issue ON runs (issue_id, id);
CREATE INDEX runs_running ON runs (id) WHERE status = 'running';

-- The retry queue: at most one entry per issue.
CREATE TABLE retries (
    issue_id   TEXT    PRIMARY KEY,
    identifier TEXT    NOT NULL,
    attempt    INTEGER NOT NULL CHECK (attempt >= 1),
    due_at_ms  INTEGER NOT NULL,
    kind       TEXT    NOT NULL CHECK (kind IN ('continuation', 'failure', 'resume')),
    error      TEXT    NOT NULL DEFAULT '',
    session_id TEXT    NOT NULL DEFAULT '',
    ssh_host   TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX retries_due ON retries (due_at_ms, issue_id);

-- Issues held for a human: at most one hold per issue.
CREATE TABLE holds (
    issue_id         TEXT    PRIMARY KEY,
    identifier       TEXT    NOT NULL,
    reason           TEXT    NOT NULL,
    message          TEXT    NOT NULL DEFAULT '',
    state            TEXT    NOT NULL DEFAULT '',
    issue_updated_at TEXT    NOT NULL DEFAULT '',        -- the tracker's value, verbatim
    since_ms         INTEGER NOT NULL
);

-- The last agent session of each issue, for resume after a restart.
CREATE TABLE sessions (
    issue_id      TEXT    PRIMARY KEY,
    session_id    TEXT    NOT NULL,
    agent_kind    TEXT    NOT NULL,
    workspace     TEXT    NOT NULL DEFAULT '',
    updated_at_ms INTEGER NOT NULL
);

-- The newest events of each run (the store trims to a fixed number per run).
CREATE TABLE run_events (
    id      INTEGER PRIMARY KEY, -- rowid: increases with insertion order
    run_id  INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    time_ms INTEGER NOT NULL,
    type    TEXT    NOT NULL,
    message TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX run_events_run ON run_events (run_id, id);
