-- 004: the remote process group of a run's agent on an SSH host, so that a daemon
-- restarted after a crash can stop it there before the issue resumes (0: none known).
ALTER TABLE runs ADD COLUMN remote_pgid INTEGER NOT NULL DEFAULT 0;
