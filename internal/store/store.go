// Package store owns everything a Sortie daemon must not lose across a restart, even
// a kill -9: run history (written when a run starts, not when it ends), the retry
// queue, issues held for a human, the last agent session of each issue, per-run event
// logs, the token spend derived from the runs, and the workflow tools' sessions, trace
// and checkpoints. It defines the Store interface and the types it speaks;
// implementations live in subpackages (sqlite now, postgres later). It makes no
// scheduling decisions: the orchestrator decides, the store remembers.
package store

import "context"

// Reader is the read side of a Store. The MCP sidecar and the dashboard need only this.
//
// Every method is safe for concurrent use. Lists are bounded by the caller's limit,
// which must be positive.
type Reader interface {
	WorkflowReader

	// RunsInProgress returns every run still in status running, oldest first. After a
	// restart these are runs of a daemon that died: the caller stops their process
	// groups and passes their ids to MarkInterrupted.
	RunsInProgress(ctx context.Context) ([]Run, error)
	// RecentRuns returns up to limit runs of all issues, newest first.
	RecentRuns(ctx context.Context, limit int) ([]Run, error)
	// RunsForIssue returns up to limit runs of one issue, newest first.
	RunsForIssue(ctx context.Context, issueID string, limit int) ([]Run, error)
	// RunsForIdentifier returns up to limit runs of the issue with this human-readable
	// identifier (e.g. PROJ-12), newest first: what an operator types, where the
	// tracker's id is unknown.
	RunsForIdentifier(ctx context.Context, identifier string, limit int) ([]Run, error)
	// ListRuns returns the runs f selects, newest (highest id) first: one page of run
	// history. Page on by passing the last id returned as the next f.Before. An invalid
	// filter (f.Validate) is an error.
	ListRuns(ctx context.Context, f RunFilter) ([]Run, error)
	// CountRuns counts the runs of each issue in one query (agent.max_sessions). Every
	// run counts, whatever its status, including running and interrupted ones: each
	// started an agent session. The map has an entry, possibly 0, for every id asked.
	CountRuns(ctx context.Context, issueIDs []string) (map[string]int, error)
	// IssueTotals sums the spend of each issue's runs in one query (per-issue budgets),
	// including the last recorded progress of runs still running. The map has an
	// entry, possibly zero, for every id asked.
	IssueTotals(ctx context.Context, issueIDs []string) (map[string]Totals, error)
	// AgentTotals sums the spend of every run (the dashboard's and metrics' totals).
	// It scans all runs: call it at startup and keep a running sum in memory.
	AgentTotals(ctx context.Context) (Totals, error)
	// RunEvents returns the newest limit events of a run in the order they happened
	// (oldest of them first), like tail. At most MaxEventsPerRun are kept.
	RunEvents(ctx context.Context, runID int64, limit int) ([]Event, error)
	// LoadRetries returns the retry queue ordered by due time, then issue id.
	LoadRetries(ctx context.Context) ([]Retry, error)
	// LoadSession returns the last agent session saved for an issue; ok is false when
	// there is none.
	LoadSession(ctx context.Context, issueID string) (s Session, ok bool, err error)
	// LoadHolds returns every held issue, oldest hold first.
	LoadHolds(ctx context.Context) ([]Hold, error)
	// Close releases the database and, for a daemon's store, its lock.
	Close() error
}

// Store is the daemon's persistent state. A daemon has exactly one, opened once at
// startup; the implementation guarantees no other daemon uses the same database at the
// same time (SQLite) or coordinates them (PostgreSQL).
//
// Writes are durable when the method returns, against a crash of the process. Methods
// that address a run by id return an error wrapping ErrNotFound when there is no such
// run; those that change a run in progress return one wrapping ErrRunNotRunning when it
// has already ended.
type Store interface {
	Reader
	WorkflowStore
	ReactionStore

	// StartRun records a run that is starting, in status running, and returns its id.
	// Call it before spawning the agent so a crash at any later moment leaves a row.
	// The identity fields of r (IssueID … WorkflowPath, StartedAt) and any Process
	// and SessionID already known are written; status, end and counters are not.
	StartRun(ctx context.Context, r Run) (id int64, err error)
	// UpdateRunProcess records the agent process of a running run as soon as it is
	// spawned, and again whenever it changes (each turn may be a new process; PID 0
	// between turns), so recovery knows which process group to stop.
	UpdateRunProcess(ctx context.Context, id int64, p Process) error
	// UpdateRunProgress records the cumulative progress of a running run. It is cheap
	// enough to call a few times a second per run. Counters never go backwards: a value
	// below the stored one is ignored, so a late update cannot lose spend. An empty
	// Model or SessionID leaves the stored one.
	UpdateRunProgress(ctx context.Context, id int64, p Progress) error
	// FinishRun ends a running run with a terminal status and its final progress
	// (merged like UpdateRunProgress), and records its review metadata. An invalid end
	// (RunEnd.Validate) is an error and changes nothing.
	FinishRun(ctx context.Context, id int64, end RunEnd) error
	// MarkInterrupted ends the given runs, if still running, as interrupted. Their end
	// time is the last time the dead daemon wrote to them. Ids of runs that already
	// ended or do not exist are ignored, so recovery can be repeated safely.
	MarkInterrupted(ctx context.Context, ids []int64) error

	// AppendEvents appends a batch of events to a run's log in one transaction and
	// trims the log to the newest MaxEventsPerRun in the same transaction. Messages
	// longer than MaxEventMessageBytes are truncated.
	AppendEvents(ctx context.Context, runID int64, events []Event) error
	// RecordProgress is UpdateRunProgress and AppendEvents in one transaction: a
	// running worker's periodic write, one commit instead of two. The events are
	// recorded only when the progress is (the run is running).
	RecordProgress(ctx context.Context, id int64, p Progress, events []Event) error
	// RecordProcessAndProgress is UpdateRunProcess and RecordProgress in one
	// transaction: a worker's write at its agent's first event, which names both the
	// process (that recovery stops) and the session (that a restart resumes).
	RecordProcessAndProgress(ctx context.Context, id int64, proc Process, p Progress, events []Event) error

	// SaveRetry inserts or replaces the retry entry of r.IssueID.
	SaveRetry(ctx context.Context, r Retry) error
	// DeleteRetry removes an issue's retry entry; removing a missing one is not an error.
	DeleteRetry(ctx context.Context, issueID string) error

	// SaveSession inserts or replaces the last agent session of s.IssueID, so a restart
	// can resume it.
	SaveSession(ctx context.Context, s Session) error
	// DeleteSession forgets an issue's session, e.g. when its workspace is removed and
	// the session can no longer be resumed. Deleting a missing one is not an error.
	DeleteSession(ctx context.Context, issueID string) error

	// SaveHold inserts or replaces the hold of h.IssueID.
	SaveHold(ctx context.Context, h Hold) error
	// DeleteHold lifts an issue's hold; lifting a missing one is not an error.
	DeleteHold(ctx context.Context, issueID string) error
}
