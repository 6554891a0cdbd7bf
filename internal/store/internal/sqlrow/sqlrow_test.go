package sqlrow

import (
	"testing"
	"time"
)

func TestTimes_MillisecondsInUTCAndNullForZero(t *testing.T) {
	in := time.Date(2026, 1, 2, 3, 4, 5, 678_901_234, time.FixedZone("UTC+5", 5*3600))
	got := Time(MS(in))
	if want := in.Truncate(time.Millisecond).UTC(); !got.Equal(want) || got.Location() != time.UTC {
		t.Errorf("Time(MS(%v)) = %v, want %v in UTC", in, got, want)
	}
	if NullMS(time.Time{}) != nil || !NullTime(nil).IsZero() {
		t.Error("the zero time is not NULL, or NULL is not the zero time")
	}
	if ms := NullMS(in); ms == nil || !NullTime(ms).Equal(got) {
		t.Errorf("NullTime(NullMS(%v)) = %v, want %v", in, NullTime(ms), got)
	}
}
