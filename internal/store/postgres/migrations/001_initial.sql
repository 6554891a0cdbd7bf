-- 001: the whole schema, the PostgreSQL twin of the SQLite store's migrations 001 to 004.
-- Times are BIGINT milliseconds since the Unix epoch, UTC (columns end in _ms), as in
-- SQLite, so both backends sort and subtract them alike. Text columns that may be
-- absent are NOT NULL DEFAULT '' so readers never meet NULL. Ids come from identity
-- columns, whose sequences never hand out a number twice. Key columns that lists are
-- ordered by use the "C" collation: byte order, as SQLite sorts, whatever the
-- database's locale.

-- One row per run, inserted when the run starts (status running) and updated as it
-- goes, so a crash at any moment leaves the row behind.
CREATE TABLE runs (
    id                BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
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
    started_at_ms     BIGINT  NOT NULL,
    ended_at_ms       BIGINT,                            -- NULL while running
    updated_at_ms     BIGINT  NOT NULL,                  -- last write, by the store's clock
    error             TEXT    NOT NULL DEFAULT '',
    pid               INTEGER NOT NULL DEFAULT 0,
    pgid              INTEGER NOT NULL DEFAULT 0,
    remote_pgid       INTEGER NOT NULL DEFAULT 0,        -- on ssh_host; 0: none known
    cli_version       TEXT    NOT NULL DEFAULT '',
    session_id        TEXT    NOT NULL DEFAULT '',
    model             TEXT    NOT NULL DEFAULT '',
    turns             INTEGER NOT NULL DEFAULT 0,
    input_tokens      BIGINT  NOT NULL DEFAULT 0,
    output_tokens     BIGINT  NOT NULL DEFAULT 0,
    total_tokens      BIGINT  NOT NULL DEFAULT 0,
    cache_read_tokens BIGINT  NOT NULL DEFAULT 0,
    cost_usd          DOUBLE PRECISION NOT NULL DEFAULT 0,
    daemon_host       TEXT    NOT NULL DEFAULT '',       -- the daemon that started the run
    daemon_pid        INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX runs_issue ON runs (issue_id, id);
CREATE INDEX runs_running ON runs (id) WHERE status = 'running';
-- The run-history page (ListRuns, RunsForIdentifier): runs of one issue by its
-- identifier, and runs in one status, each newest first.
CREATE INDEX runs_identifier ON runs (identifier, id);
CREATE INDEX runs_status ON runs (status, id);

-- The retry queue: at most one entry per issue.
CREATE TABLE retries (
    issue_id   TEXT    COLLATE "C" PRIMARY KEY,
    identifier TEXT    NOT NULL,
    attempt    INTEGER NOT NULL CHECK (attempt >= 1),
    due_at_ms  BIGINT  NOT NULL,
    kind       TEXT    NOT NULL CHECK (kind IN ('continuation', 'failure', 'resume')),
    error      TEXT    NOT NULL DEFAULT '',
    session_id TEXT    NOT NULL DEFAULT '',
    ssh_host   TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX retries_due ON retries (due_at_ms, issue_id);

-- Issues held for a human: at most one hold per issue.
CREATE TABLE holds (
    issue_id         TEXT   COLLATE "C" PRIMARY KEY,
    identifier       TEXT   NOT NULL,
    reason           TEXT   NOT NULL,
    message          TEXT   NOT NULL DEFAULT '',
    state            TEXT   NOT NULL DEFAULT '',
    issue_updated_at TEXT   NOT NULL DEFAULT '',         -- the tracker's value, verbatim
    since_ms         BIGINT NOT NULL
);

-- The last agent session of each issue, for resume after a restart.
CREATE TABLE sessions (
    issue_id      TEXT   PRIMARY KEY,
    session_id    TEXT   NOT NULL,
    agent_kind    TEXT   NOT NULL,
    workspace     TEXT   NOT NULL DEFAULT '',
    updated_at_ms BIGINT NOT NULL
);

-- The newest events of each run (the store trims to a fixed number per run).
CREATE TABLE run_events (
    id      BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, -- increases with insertion order
    run_id  BIGINT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    time_ms BIGINT NOT NULL,
    type    TEXT   NOT NULL,
    message TEXT   NOT NULL DEFAULT ''
);
CREATE INDEX run_events_run ON run_events (run_id, id);

-- The workflow tools' records (spec/workflow-tools-api.md): each session's newest
-- token, the trace of its tool calls, and the checkpoints issued to it. Lists
-- (warnings, options) are JSON arrays.

-- One row per workflow session: the newest token issued, so a restarted daemon accepts
-- exactly that token. issue_id and identifier are empty in standalone mode.
CREATE TABLE workflow_sessions (
    session_id    TEXT   COLLATE "C" PRIMARY KEY,
    workflow      TEXT   NOT NULL,
    issue_id      TEXT   NOT NULL DEFAULT '',
    identifier    TEXT   NOT NULL DEFAULT '',
    token         TEXT   NOT NULL,
    updated_at_ms BIGINT NOT NULL
);

-- One row per workflow tool call, the newest of each session only (the store trims to
-- a fixed number per session). Rows outlive their session: they are the history of the
-- issue's runs. run_id is 0 in standalone mode.
CREATE TABLE workflow_trace (
    id          BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY, -- trace ids leave the store
    session_id  TEXT    NOT NULL,
    span_id     TEXT    NOT NULL,
    issue_id    TEXT    NOT NULL DEFAULT '',
    run_id      BIGINT  NOT NULL DEFAULT 0,
    tool        TEXT    NOT NULL,
    ts_ms       BIGINT  NOT NULL,
    duration_ms BIGINT  NOT NULL DEFAULT 0,
    ok          BOOLEAN NOT NULL,
    workflow    TEXT    NOT NULL DEFAULT '',
    activity    TEXT    NOT NULL DEFAULT '',
    agent_id    TEXT    NOT NULL DEFAULT '',
    error       TEXT    NOT NULL DEFAULT '',
    warnings    JSONB   NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(warnings) = 'array'), -- of strings
    detail      TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX workflow_trace_session ON workflow_trace (session_id, id);
CREATE INDEX workflow_trace_run ON workflow_trace (run_id, id);

-- One row per issuance of a checkpoint to a session. Pending while resolution is empty;
-- re-arming supersedes the pending row and inserts a new one, so rows are never
-- reopened. Resolved rows are kept: they are the issue's checkpoint decisions.
CREATE TABLE checkpoints (
    id              BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id      TEXT    COLLATE "C" NOT NULL,
    issue_id        TEXT    NOT NULL DEFAULT '',
    identifier      TEXT    NOT NULL DEFAULT '',
    run_id          BIGINT  NOT NULL DEFAULT 0,
    workflow        TEXT    NOT NULL,
    activity        TEXT    NOT NULL,
    checkpoint_id   TEXT    NOT NULL,
    name            TEXT    NOT NULL DEFAULT '',
    message         TEXT    NOT NULL DEFAULT '',
    options         JSONB   NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(options) = 'array'), -- of {id, label, description}
    blocking        BOOLEAN NOT NULL DEFAULT false,
    default_option  TEXT    NOT NULL DEFAULT '',
    auto_advance_ms BIGINT  NOT NULL DEFAULT 0,
    conditional     BOOLEAN NOT NULL DEFAULT false,
    issued_at_ms    BIGINT  NOT NULL,
    answer          TEXT    NOT NULL DEFAULT '',   -- the option chosen; '' until answered
    answered_by     TEXT    NOT NULL DEFAULT '',
    answer_source   TEXT    NOT NULL DEFAULT '',
    answered_at_ms  BIGINT,                        -- NULL until answered
    resolution      TEXT    NOT NULL DEFAULT '',   -- '' while pending
    resolved_at_ms  BIGINT                         -- NULL while pending
);
-- At most one pending issuance of a checkpoint per session, so an answer names exactly
-- one row; it is also the index of the pending lookups.
CREATE UNIQUE INDEX checkpoints_pending ON checkpoints (session_id, checkpoint_id) WHERE resolution = '';
CREATE INDEX checkpoints_issue ON checkpoints (issue_id, id);
