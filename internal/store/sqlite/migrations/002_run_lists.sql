-- 002: indexes for the run-history page (ListRuns, RunsForIdentifier): runs of one
-- issue by its identifier, and runs in one status, each newest first.
CREATE INDEX runs_identifier ON runs (identifier, id);
CREATE INDEX runs_status ON runs (status, id);
