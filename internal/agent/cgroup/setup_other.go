//go:build !linux

package cgroup

import "errors"

// Setup fails: cgroups are Linux's.
func Setup(name string) (*Tree, error) {
	return nil, errors.New("this system has no cgroups")
}
