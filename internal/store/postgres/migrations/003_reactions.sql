-- 003: reactions (internal/reactions) and self-review results, the twin of the SQLite
-- store's migration 006. reaction_watches holds the handed-off issues whose pull
-- requests Sortie watches, at most one per issue; reaction_states what Sortie
-- remembers of each reaction kind of an issue (the failure last seen, whether a run
-- was dispatched for it, the runs so far, an escalation), kept across hand-offs and
-- shared by every daemon on the database. runs.review_metadata is a run's self-review
-- result, JSON text ('' for none).

CREATE TABLE reaction_watches (
    issue_id         TEXT    COLLATE "C" PRIMARY KEY,
    identifier       TEXT    NOT NULL,
    workspace        TEXT    NOT NULL DEFAULT '',
    session_id       TEXT    NOT NULL DEFAULT '',
    branch           TEXT    NOT NULL DEFAULT '',
    pr_number        INTEGER NOT NULL DEFAULT 0 CHECK (pr_number >= 0), -- 0 until found
    handed_off_at_ms BIGINT  NOT NULL
);

CREATE TABLE reaction_states (
    issue_id      TEXT    COLLATE "C" NOT NULL,
    kind          TEXT    COLLATE "C" NOT NULL CHECK (kind IN ('ci', 'review')),
    fingerprint   TEXT    NOT NULL,                 -- '' only for a state escalated before any was seen
    dispatched    BOOLEAN NOT NULL DEFAULT false,
    attempts      INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    escalated     BOOLEAN NOT NULL DEFAULT false,
    updated_at_ms BIGINT  NOT NULL,
    PRIMARY KEY (issue_id, kind)
);

ALTER TABLE runs ADD COLUMN review_metadata TEXT NOT NULL DEFAULT '';
-- runs.reaction: the reaction kind (ci, review) that started the run, '' for none.
ALTER TABLE runs ADD COLUMN reaction TEXT NOT NULL DEFAULT '';
