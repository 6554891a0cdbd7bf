package orchestrator

import "time"

// ContinuationDelay is the wait before a new session continues an issue whose previous
// session ended cleanly with the issue still active.
const ContinuationDelay = time.Second

// failureBase is the first failure backoff; each further failure doubles it.
const failureBase = 10 * time.Second

// BackoffDelay returns the wait before retry number attempt (1-based) after a failure:
// min(10s·2^(attempt−1), cap). A non-positive cap means the default 5 minutes; an
// attempt below 1 counts as 1.
func BackoffDelay(attempt int, cap time.Duration) time.Duration {
	if cap <= 0 {
		cap = 5 * time.Minute
	}
	if attempt < 1 {
		attempt = 1
	}
	d := failureBase
	for i := 1; i < attempt; i++ {
		d *= 2
		if d >= cap {
			return cap
		}
	}
	if d > cap {
		return cap
	}
	return d
}
