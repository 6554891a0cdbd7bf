package orchestrator

import (
	"testing"
	"time"
)

func TestBackoffDelay_DoublesFromTenSecondsAndIsCapped(t *testing.T) {
	cases := []struct {
		attempt int
		cap     time.Duration
		want    time.Duration
	}{
		{0, 0, 10 * time.Second},
		{1, 0, 10 * time.Second},
		{2, 0, 20 * time.Second},
		{3, 0, 40 * time.Second},
		{4, 0, 80 * time.Second},
		{5, 0, 160 * time.Second},
		{6, 0, 300 * time.Second},
		{60, 0, 300 * time.Second},
		{1000000, 0, 300 * time.Second},
		{3, 30 * time.Second, 30 * time.Second},
		{1, 5 * time.Second, 5 * time.Second},
	}
	for _, c := range cases {
		if got := BackoffDelay(c.attempt, c.cap); got != c.want {
			t.Errorf("BackoffDelay(%d, %v) = %v, want %v", c.attempt, c.cap, got, c.want)
		}
	}
}
