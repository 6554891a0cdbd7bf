//go:build !linux && !darwin

package platform

// Sortie runs on Linux and macOS only (docs/operations.md, "Platforms"): it needs POSIX
// process groups and signals to own and stop an agent's processes. The undefined name
// below is the build error that says so.
var _ = Sortie_runs_on_Linux_and_macOS_only__see_docs_operations_md
