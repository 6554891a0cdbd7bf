package store

import (
	"time"
	"unicode/utf8"
)

// Limits of the per-run event log. Agent output is untrusted; these bound what one run
// can make the database hold.
const (
	// MaxEventsPerRun is how many events of a run are kept; older ones are dropped.
	MaxEventsPerRun = 200
	// MaxEventMessageBytes bounds an event's message; longer ones are truncated on a
	// UTF-8 boundary and end in "…".
	MaxEventMessageBytes = 4096
	// MaxEventTypeBytes bounds an event's type.
	MaxEventTypeBytes = 64
	// MaxRunErrorBytes bounds a run's error text, which may quote agent output.
	MaxRunErrorBytes = 8192
)

// Event is one entry of a run's event log: a normalised agent event or a worker
// milestone, as the dashboard shows it.
type Event struct {
	Time    time.Time
	Type    string // e.g. session_started, tool_result, turn_completed
	Message string
}

// Bounded returns e as a store keeps it: Type cut to MaxEventTypeBytes and Message
// to MaxEventMessageBytes (Truncate).
func (e Event) Bounded() Event {
	e.Type = Truncate(e.Type, MaxEventTypeBytes)
	e.Message = Truncate(e.Message, MaxEventMessageBytes)
	return e
}

// Truncate bounds s to limit bytes, cutting on a rune boundary and marking the cut with
// "…"; the result is at most limit bytes when limit is at least len("…"). Implementations
// apply the limits above with it, so every backend cuts agent text alike.
func Truncate(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	const mark = "…"
	cut := max(0, limit-len(mark))
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}
