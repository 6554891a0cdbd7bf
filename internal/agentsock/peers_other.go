//go:build !linux

package agentsock

import "errors"

// peerCred: peer credentials are read on Linux only; elsewhere a token alone
// authenticates its caller (docs/security.md).
func peerCred(int) Peer { return Peer{pidfd: -1} }

func closePeer(Peer) {}

func alive(Peer) bool { return true }

func parentOf(int) (int, error) { return 0, errors.New("process tree unknown on this system") }

func inCgroup(string, int) error { return errors.New("cgroups exist on Linux only") }
