//go:build !linux

package cgroup

import "time"

// SweepAt does nothing: cgroups are Linux's.
func SweepAt(int, time.Duration) {}

// MembersAt finds nothing: cgroups are Linux's.
func MembersAt(int) []int { return nil }
