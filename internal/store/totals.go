package store

import "time"

// Totals is spend summed over runs.
type Totals struct {
	Runs    int
	Tokens  Tokens
	CostUSD float64
	// RunTime is the summed wall time of ended runs; the caller adds the time of the
	// runs it is running now.
	RunTime time.Duration
}
