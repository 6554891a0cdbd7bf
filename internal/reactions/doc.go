// Package reactions watches the pull requests of handed-off issues and decides when
// one goes back to its agent: a failing check on the pull request's head (CI) or a
// human's change request (review). It never runs an agent itself: a Watcher offers
// each reaction it decides on (Next), and the scheduler dispatches it under its own
// rules — budgets, holds, slots, a cluster's claims — resuming the last agent
// session, or defers it.
//
// What a reaction acts on is remembered in the store as a fingerprint per issue and
// kind (the head SHA for CI, a hash of the comment ids for reviews), marked dispatched
// by one conditional write when its run starts: a restart, or a second daemon on the
// same PostgreSQL, never sends the same failure twice and never forgets one. After
// max_retries runs of one kind without the failure going away, the issue is escalated
// to humans (a label or a comment) and no longer watched.
//
// Polling costs at most one conditional request per watched issue per poll interval
// on average: after a check that sent n requests, the next check waits n
// intervals. Idle checks are answered 304 and cost no rate budget.
package reactions
