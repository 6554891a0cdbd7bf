// Package orchestrator is Sortie's scheduler. One loop goroutine owns every piece of
// scheduling state — which issues run, which wait for a retry, which are held for a
// human — and is the only code that changes it. Workers (one per running issue), timers,
// the tracker watcher and the HTTP layer talk to the loop over channels, and the loop
// never does network I/O itself: tracker fetches run in a poller goroutine and report
// back. That single-writer rule is what makes "never two agents on one issue" hold.
//
// The package does not parse configuration, talk to a specific tracker or agent CLI,
// or serve HTTP: it is given those parts by cmd/sortie.
package orchestrator
