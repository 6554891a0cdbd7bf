// Package orchestrator is Sortie's scheduler. One loop goroutine owns every piece of
// scheduling state — which issues run, which wait for a retry, which are held for a
// human — and is the only code that reads or changes it, without a lock. Workers (one
// per running issue), timers, the tracker watcher and the checkpoints talk to the loop
// over channels; readers (the API, metrics, the dashboard) get the copy the loop
// publishes after each step (Snapshot). The loop never does network I/O itself: tracker
// fetches run in goroutines it owns and report back, and every call of its Store and
// Cluster has a deadline. That single-writer rule is what makes "never two agents on
// one issue" hold.
//
// The package does not parse configuration, talk to a specific tracker or agent CLI,
// serve HTTP or the agent tools, or keep checkpoints: internal/daemon gives it those
// parts, through interfaces it defines.
package orchestrator
