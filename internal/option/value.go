package option

import (
	"math"
	"strconv"
	"strings"
)

// The coercers below turn a WORKFLOW.md value, as the YAML decoder gives it, into the
// Go value a key needs. They are the one place that does: the coercers of adapter
// blocks (String, Count, ...) build on them, and so does internal/config for the typed
// sections. A coercer returns what is wrong without naming the key or quoting the
// value; the caller does both, in its own words.

// IntValue converts a decoded value to an integer: a YAML int, a float without a
// fraction, or a string holding a base-10 integer ("5000", " 5000 "). Booleans,
// fractions and everything else are refused with a reason: "must be an integer",
// "must be a whole number" or "is too large".
func IntValue(v any) (int64, string) {
	switch t := v.(type) {
	case int:
		return int64(t), ""
	case int64:
		return t, ""
	case uint64:
		if t > math.MaxInt64 {
			return 0, "is too large"
		}
		return int64(t), ""
	case float64:
		if math.IsNaN(t) || math.IsInf(t, 0) || t != math.Trunc(t) {
			return 0, "must be a whole number"
		}
		if t >= math.MaxInt64 || t <= math.MinInt64 {
			return 0, "is too large"
		}
		return int64(t), ""
	case string:
		n, err := strconv.ParseInt(strings.TrimSpace(t), 10, 64)
		if err != nil {
			if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
				return 0, "is too large"
			}
			return 0, "must be an integer"
		}
		return n, ""
	}
	return 0, "must be an integer"
}

// NumberValue converts a decoded value to a float64: a YAML number or a string that
// holds one. ok is false for anything else, and for NaN and the infinities.
func NumberValue(v any) (f float64, ok bool) {
	f, ok = anyNumber(v)
	return f, ok && !math.IsNaN(f) && !math.IsInf(f, 0)
}

// anyNumber is NumberValue with NaN and the infinities let through, for a caller that
// refuses them in words of its own.
func anyNumber(v any) (float64, bool) {
	switch t := v.(type) {
	case int:
		return float64(t), true
	case int64:
		return float64(t), true
	case uint64:
		return float64(t), true
	case float64:
		return t, true
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
		return f, err == nil
	}
	return 0, false
}
