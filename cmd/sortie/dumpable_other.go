//go:build !linux

package main

// hideEnviron does nothing outside Linux; see dumpable_linux.go.
func hideEnviron() error { return nil }

func dumpable() (bool, error) { return true, nil }
