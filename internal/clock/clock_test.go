package clock

import (
	"testing"
	"time"
)

func TestFake_AdvanceFiresDueTimersInOrder(t *testing.T) {
	c := NewFake(time.Unix(0, 0))
	var got []int
	c.AfterFunc(3*time.Second, func() { got = append(got, 3) })
	c.AfterFunc(1*time.Second, func() { got = append(got, 1) })
	stopped := c.AfterFunc(2*time.Second, func() { got = append(got, 2) })
	if !stopped.Stop() {
		t.Fatal("Stop on a pending timer returned false")
	}
	c.Advance(2 * time.Second)
	if len(got) != 1 || got[0] != 1 {
		t.Fatalf("after 2s fired %v, want [1]", got)
	}
	c.Advance(time.Second)
	if len(got) != 2 || got[1] != 3 {
		t.Fatalf("after 3s fired %v, want [1 3]", got)
	}
	if c.Pending() != 0 {
		t.Fatalf("Pending = %d, want 0", c.Pending())
	}
}

func TestFake_TimerScheduledByTimerFiresWithinWindow(t *testing.T) {
	c := NewFake(time.Unix(0, 0))
	fired := 0
	c.AfterFunc(time.Second, func() {
		fired++
		c.AfterFunc(time.Second, func() { fired++ })
	})
	c.Advance(2 * time.Second)
	if fired != 2 {
		t.Fatalf("fired %d timers, want 2", fired)
	}
	if got := c.Now(); !got.Equal(time.Unix(2, 0)) {
		t.Fatalf("Now = %v, want 2s", got)
	}
}

func TestFake_NextDue(t *testing.T) {
	c := NewFake(time.Unix(0, 0))
	if _, ok := c.NextDue(); ok {
		t.Fatal("NextDue reported a timer on an empty clock")
	}
	c.AfterFunc(5*time.Second, func() {})
	if d, ok := c.NextDue(); !ok || d != 5*time.Second {
		t.Fatalf("NextDue = %v,%v want 5s,true", d, ok)
	}
}
