//go:build linux

package proc

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"sortie/internal/agent"
	"sortie/internal/agent/proc/proctest"
)

// guardStart starts c through g and fails the test if it cannot.
func guardStart(t *testing.T, g *Guard, c Command) *Process {
	t.Helper()
	p, err := g.Start(t.Context(), c, "test-agent")
	if err != nil {
		t.Fatalf("Start(%s %q): %v", c.Path, c.Args, err)
	}
	t.Cleanup(func() { p.Stop(); p.Wait() })
	return p
}

// wantGuardError fails the test unless err is an *agent.Error of kind with message msg.
func wantGuardError(t *testing.T, err error, kind agent.ErrorKind, msg string) {
	t.Helper()
	var ae *agent.Error
	if !errors.As(err, &ae) || ae.Kind != kind || ae.Message != msg {
		t.Fatalf("Start error = %#v, want %s %q", err, kind, msg)
	}
}

func TestGuard_SecondStartWhileATurnRunsIsRefused(t *testing.T) {
	var g Guard
	p := guardStart(t, &g, shell(`sleep 300`))

	_, err := g.Start(t.Context(), shell(`true`), "test-agent")
	wantGuardError(t, err, agent.ErrResponse, "test-agent: a turn of this session is already running")

	p.Stop()
	p.Wait()
	g.Finish()
	next := guardStart(t, &g, shell(`true`))
	if exit := next.Wait(); exit.Code != 0 {
		t.Errorf("Start after Finish: exit %s, want 0", exit)
	}
}

func TestGuard_StopStopsTheRunningProcessAndLaterStartsFail(t *testing.T) {
	var g Guard
	p := guardStart(t, &g, shell(`sleep 300`))

	g.Stop()
	select {
	case <-p.Done():
	default:
		t.Fatal("Stop returned before the running process was reaped")
	}
	if exit := p.Wait(); !exit.Stopped || exit.Cancelled {
		t.Errorf("exit after Stop = %+v, want stopped and not cancelled", exit)
	}
	proctest.RequireGroupGone(t, p.PID())

	g.Finish()
	_, err := g.Start(t.Context(), shell(`true`), "test-agent")
	wantGuardError(t, err, agent.ErrTurnCancelled, "test-agent: session already stopped")
	g.Stop() // again, with nothing running
}

func TestGuard_StopBeforeAnyStartRefusesStarts(t *testing.T) {
	var g Guard
	g.Stop()
	_, err := g.Start(t.Context(), shell(`true`), "claude-code")
	wantGuardError(t, err, agent.ErrTurnCancelled, "claude-code: session already stopped")
}

func TestGuard_StartFailureNamesTheProgramAndLeavesTheGuardFree(t *testing.T) {
	var g Guard
	missing := t.TempDir() + "/no-such-agent"
	_, err := g.Start(t.Context(), Command{Path: missing}, "test-agent")
	wantGuardError(t, err, agent.ErrNotFound, "test-agent: starting "+missing)
	if !strings.Contains(err.Error(), "no such file or directory") {
		t.Errorf("error %q does not carry the cause", err)
	}
	p := guardStart(t, &g, shell(`true`))
	p.Wait()
}

// Stop racing Start either keeps the process from starting or stops it: never does a
// started process outlive both.
func TestGuard_ConcurrentStopAndStartLeaveNothingRunning(t *testing.T) {
	for range 20 {
		var g Guard
		var (
			wg  sync.WaitGroup
			p   *Process
			err error
		)
		wg.Add(2)
		go func() {
			defer wg.Done()
			p, err = g.Start(t.Context(), shell(`sleep 300`), "test-agent")
		}()
		go func() {
			defer wg.Done()
			g.Stop()
		}()
		wg.Wait()
		if err != nil {
			wantGuardError(t, err, agent.ErrTurnCancelled, "test-agent: session already stopped")
			continue
		}
		// Start won: Stop saw the process and stopped it before returning.
		select {
		case <-p.Done():
		default:
			p.Stop()
			p.Wait()
			t.Fatal("Start and Stop both returned, and the started process still runs")
		}
		if exit := p.Wait(); !exit.Stopped {
			t.Errorf("exit = %+v, want stopped", exit)
		}
		g.Finish()
	}
}
