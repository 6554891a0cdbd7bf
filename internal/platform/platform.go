// Package platform states where Sortie runs: Linux and macOS. Agents run in their own
// POSIX process groups, are stopped with signals, and state files are opened with
// O_NOFOLLOW; Windows has none of these. The packages that rely on them import this
// one, so a build for any other system stops here with one clear error
// (unsupported.go) instead of a page of undefined syscalls.
package platform

// Supported lists the operating systems Sortie builds and runs on.
var Supported = []string{"linux", "darwin"}
