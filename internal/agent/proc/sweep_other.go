//go:build !linux

package proc

import (
	"errors"
	"time"
)

// Cgroups exist only on Linux: a SweepCgroup command cannot be started elsewhere.
func dupCloexec(int) (int, error) { return -1, errors.New("cgroups exist only on Linux") }

func closeFD(int) {}

func sweepCgroup(int, time.Duration) {}
