//go:build !linux

package sandbox

import "errors"

var errNoLandlock = errors.New("sandbox: Landlock exists only on Linux; set agent.sandbox.mode: off, or use agent.run_as")

// Available reports that Landlock is not available outside Linux.
func Available() (int, error) { return 0, errNoLandlock }

// Restrict fails outside Linux.
func Restrict(Policy) error { return errNoLandlock }

// Exec fails outside Linux.
func Exec(Policy, []string, []string) error { return errNoLandlock }

// ConfineThread fails outside Linux.
func ConfineThread(Policy) error { return errNoLandlock }

// ThreadConfinable is false outside Linux.
func ThreadConfinable() bool { return false }

// RestrictThread fails outside Linux.
func RestrictThread(Policy) error { return errNoLandlock }

// MountNamespaceAvailable is false outside Linux.
func MountNamespaceAvailable() bool { return false }

// UserNamespaceAvailable is false outside Linux.
func UserNamespaceAvailable() bool { return false }

// ConfineInUserNS does nothing outside Linux.
func ConfineInUserNS(Policy, []string) (int, bool) { return 0, false }

func withoutUserNSEnv(env []string) []string { return env }
