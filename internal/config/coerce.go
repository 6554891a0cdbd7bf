package config

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// maxMillis is the largest millisecond count that fits a time.Duration.
const maxMillis = math.MaxInt64 / int64(time.Millisecond)

// gotValue renders a value for the `(got <value>)` suffix of a problem.
func gotValue(v any) string {
	switch t := v.(type) {
	case nil:
		return "null"
	case string:
		return strconv.Quote(t)
	case bool:
		return strconv.FormatBool(t)
	case float64:
		return strconv.FormatFloat(t, 'g', -1, 64)
	case int, int64, uint64:
		return fmt.Sprint(t)
	}
	return withArticle(yamlTypeName(v))
}

func withArticle(noun string) string {
	if strings.ContainsRune("aeiou", rune(noun[0])) {
		return "an " + noun
	}
	return "a " + noun
}

// gotType renders only the type of a value, for fields whose values are secrets.
func gotType(v any) string {
	if v == nil {
		return "null"
	}
	return withArticle(yamlTypeName(v))
}

// toInt64 converts a decoded YAML value to an integer: YAML ints, floats without a
// fraction, and strings holding a base-10 integer ("5000"). Booleans, fractions and
// everything else are refused with a reason.
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

// toFloat converts a decoded YAML number (or numeric string) to a float64.
func toFloat(v any) (float64, bool) {
	switch t := v.(type) {
	case int:
		return float64(t), true
	case int64:
		return float64(t), true
	case uint64:
		return float64(t), true
	case float64:
		return t, !math.IsNaN(t) && !math.IsInf(t, 0)
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
		return f, err == nil && !math.IsNaN(f) && !math.IsInf(f, 0)
	}
	return 0, false
}

// sortedKeys returns the keys of m in order, so problems come out deterministically.
func sortedKeys(m map[string]any) []string {
	return slices.Sorted(maps.Keys(m))
}
