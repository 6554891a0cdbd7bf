-- 005: runs_running (001) is dropped: runs_status (002) finds the running runs as
-- well, in the same order, and every run's start and end wrote both.
DROP INDEX IF EXISTS runs_running;
