// Package daemon assembles a running Sortie daemon from WORKFLOW.md: New builds every
// part in dependency order, and Run runs the orchestrator and then closes the parts in
// the reverse order. cmd/sortie parses the flags, makes the logger and calls it.
//
// The order, each part built from those before it:
//
//  1. the configuration watcher (not watching yet), whose validation of every new
//     WORKFLOW.md builds that configuration's tracker and agent adapters (adapterSet);
//  2. the metrics and the live feed's hub, which the adapters and the orchestrator
//     report to;
//  3. the store: SQLite at db_path, or PostgreSQL with database_url;
//  4. the cluster, with database_url: one daemon at a time polls the tracker;
//  5. the start-up adapters (the agent CLI's preflight);
//  6. the notification backends;
//  7. the workflow library, its checkpoint desk and engine (workflows.dir);
//  8. the agent socket, which grants the orchestrator's tokens, and what every session
//     is told of the tools it will be offered (agenttools.Capabilities: known now,
//     from the options the tool service will be built from);
//  9. the watcher starts watching;
//  10. the sandbox agents are confined by, the cgroups of runs, and the user agents
//     run as (runas.ForAgents: it needs the socket, to share it with the user);
//  11. the orchestrator, from all of the above; the metrics' session gauges, which
//     read its snapshot, join it;
//  12. the agent tool service, which needs the orchestrator, serves the socket;
//  13. the HTTP server (dashboard, API, metrics);
//  14. with a cluster, the listener for the other daemons' changes.
//
// Each part that must be stopped registers its closer as it is built, in one list.
// Run runs the orchestrator until its context ends (or, with ExitWhenIdle, until there
// is nothing to do) and then runs the list once, last built first: the cluster
// listener, the HTTP server (which kept serving through the drain, so that /readyz and
// the dashboard showed it), the cgroups, the watcher, the agent socket, the checkpoint
// desk (after the loop, so that no auto-advance answers into a stopped loop's store),
// the cluster, the store. When New fails, what it built so far is closed the same way.
package daemon
