-- 006: reactions (internal/reactions) and self-review results. reaction_watches holds
-- the handed-off issues whose pull requests Sortie watches, at most one per issue;
-- reaction_states what Sortie remembers of each reaction kind of an issue (the
-- failure last seen, whether a run was dispatched for it, the runs so far, an
-- escalation), kept across hand-offs. runs.review_metadata is a run's self-review
-- result, JSON text ('' for none).

CREATE TABLE reaction_watches (
    issue_id         TEXT    PRIMARY KEY,
    identifier       TEXT    NOT NULL,
    workspace        TEXT    NOT NULL DEFAULT '',
    session_id       TEXT    NOT NULL DEFAULT '',
    branch           TEXT    NOT NULL DEFAULT '',
    pr_number        INTEGER NOT NULL DEFAULT 0 CHECK (pr_number >= 0), -- 0 until found
    handed_off_at_ms INTEGER NOT NULL
);

CREATE TABLE reaction_states (
    issue_id      TEXT    NOT NULL,
    kind          TEXT    NOT NULL CHECK (kind IN ('ci', 'review')),
    fingerprint   TEXT    NOT NULL,                 -- '' only for a state escalated before any was seen
    dispatched    INTEGER NOT NULL DEFAULT 0 CHECK (dispatched IN (0, 1)),
    attempts      INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    escalated     INTEGER NOT NULL DEFAULT 0 CHECK (escalated IN (0, 1)),
    updated_at_ms INTEGER NOT NULL,
    PRIMARY KEY (issue_id, kind)
);

ALTER TABLE runs ADD COLUMN review_metadata TEXT NOT NULL DEFAULT '';
-- runs.reaction: the reaction kind (ci, review) that started the run, '' for none.
ALTER TABLE runs ADD COLUMN reaction TEXT NOT NULL DEFAULT '';
