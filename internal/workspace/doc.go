// Package workspace owns the per-issue directories Sortie runs agents in: it turns issue
// identifiers into safe directory names, creates and removes workspaces strictly inside
// the configured root, runs the four lifecycle hooks (after_create, before_run,
// after_run, before_remove) with a restricted environment (those that follow an agent's
// run confined by the orchestrator's Config.ConfineHook, their git neutralised by
// GitEnv) and the self-review's commands as those (Verify), and reads and writes the
// `.sortie/` protocol files with symlink and size checks.
//
// It does not decide when a workspace is prepared or removed (the orchestrator does),
// and it does not interpret `.sortie/` file contents beyond the status signal.
//
// The package is Unix-only: hooks run under /bin/sh in their own process group.
package workspace
