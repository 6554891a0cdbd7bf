-- 003: the workflow tools' records (spec/workflow-tools-api.md): each session's newest
-- token, the trace of its tool calls, and the checkpoints issued to it. Times are
-- integer milliseconds since the Unix epoch, UTC, as in 001. Lists (warnings,
-- options) are JSON arrays in TEXT columns.

-- One row per workflow session: the newest token issued, so a restarted daemon accepts
-- exactly that token. issue_id and identifier are empty in standalone mode.
CREATE TABLE workflow_sessions (
    session_id    TEXT    PRIMARY KEY,
    workflow      TEXT    NOT NULL,
    issue_id      TEXT    NOT NULL DEFAULT '',
    identifier    TEXT    NOT NULL DEFAULT '',
    token         TEXT    NOT NULL,
    updated_at_ms INTEGER NOT NULL
);

-- One row per workflow tool call, the newest of each session only (the store trims to
-- a fixed number per session). Rows outlive their session: they are the history of the
-- issue's runs. run_id is 0 in standalone mode.
CREATE TABLE workflow_trace (
    id          INTEGER PRIMARY KEY AUTOINCREMENT, -- never reused: trace ids leave the store
    session_id  TEXT    NOT NULL,
    span_id     TEXT    NOT NULL,
    issue_id    TEXT    NOT NULL DEFAULT '',
    run_id      INTEGER NOT NULL DEFAULT 0,
    tool        TEXT    NOT NULL,
    ts_ms       INTEGER NOT NULL,
    duration_ms INTEGER NOT NULL DEFAULT 0,
    ok          INTEGER NOT NULL CHECK (ok IN (0, 1)),
    workflow    TEXT    NOT NULL DEFAULT '',
    activity    TEXT    NOT NULL DEFAULT '',
    agent_id    TEXT    NOT NULL DEFAULT '',
    error       TEXT    NOT NULL DEFAULT '',
    warnings    TEXT    NOT NULL DEFAULT '[]',     -- JSON array of strings
    detail      TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX workflow_trace_session ON workflow_trace (session_id, id);
CREATE INDEX workflow_trace_run ON workflow_trace (run_id, id);

-- One row per issuance of a checkpoint to a session. Pending while resolution is empty;
-- re-arming supersedes the pending row and inserts a new one, so rows are never
-- reopened. Resolved rows are kept: they are the issue's checkpoint decisions.
CREATE TABLE checkpoints (
    id              INTEGER PRIMARY KEY AUTOINCREMENT, -- never reused
    session_id      TEXT    NOT NULL,
    issue_id        TEXT    NOT NULL DEFAULT '',
    identifier      TEXT    NOT NULL DEFAULT '',
    run_id          INTEGER NOT NULL DEFAULT 0,
    workflow        TEXT    NOT NULL,
    activity        TEXT    NOT NULL,
    checkpoint_id   TEXT    NOT NULL,
    name            TEXT    NOT NULL DEFAULT '',
    message         TEXT    NOT NULL DEFAULT '',
    options         TEXT    NOT NULL DEFAULT '[]', -- JSON array of {id, label, description}
    blocking        INTEGER NOT NULL DEFAULT 0 CHECK (blocking IN (0, 1)),
    default_option  TEXT    NOT NULL DEFAULT '',
    auto_advance_ms INTEGER NOT NULL DEFAULT 0,
    conditional     INTEGER NOT NULL DEFAULT 0 CHECK (conditional IN (0, 1)),
    issued_at_ms    INTEGER NOT NULL,
    answer          TEXT    NOT NULL DEFAULT '',   -- the option chosen; '' until answered
    answered_by     TEXT    NOT NULL DEFAULT '',
    answer_source   TEXT    NOT NULL DEFAULT '',
    answered_at_ms  INTEGER,                       -- NULL until answered
    resolution      TEXT    NOT NULL DEFAULT '',   -- '' while pending
    resolved_at_ms  INTEGER                        -- NULL while pending
);
-- At most one pending issuance of a checkpoint per session, so an answer names exactly
-- one row; it is also the index of the pending lookups.
CREATE UNIQUE INDEX checkpoints_pending ON checkpoints (session_id, checkpoint_id) WHERE resolution = '';
CREATE INDEX checkpoints_issue ON checkpoints (issue_id, id);
