// Package proctest lets tests of process-group handling check, without sleeping, that
// no process of a group is left: it lists a group's live members, or the live processes
// with a given value in their environment, from /proc and waits for a process to exit
// through a pidfd. Linux only; elsewhere its functions skip the test.
package proctest
