package agent

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// The Option functions coerce one value of an adapter's own block of WORKFLOW.md
// (Config.Options) to the type its key needs, accepting every form the YAML decoder
// gives a value (an int, int64, uint64 or float64 for a number, say). A key that is
// present but empty (nothing) reads as the zero value. Their errors do not name the key:
// the adapter puts its path in front, as in
// `claude-code.max_turns: must be a non-negative whole number (got -1)`.

// OptionString is a string with surrounding white space removed.
func OptionString(v any) (string, error) {
	switch s := v.(type) {
	case nil:
		return "", nil
	case string:
		return strings.TrimSpace(s), nil
	}
	return "", fmt.Errorf("must be a string (got %s)", DescribeValue(v))
}

// OptionEnum is an OptionString that, unless empty, is one of valid.
func OptionEnum(v any, valid []string) (string, error) {
	s, err := OptionString(v)
	if err != nil || s == "" {
		return s, err
	}
	if !slices.Contains(valid, s) {
		return "", fmt.Errorf("unknown value %q (valid: %s)", s, strings.Join(valid, ", "))
	}
	return s, nil
}

// OptionBool is true or false.
func OptionBool(v any) (bool, error) {
	switch b := v.(type) {
	case nil:
		return false, nil
	case bool:
		return b, nil
	}
	return false, fmt.Errorf("must be true or false (got %s)", DescribeValue(v))
}

// OptionToolList is a list of tool names in the comma-separated form CLIs take. It is
// written as a YAML list, whose items are trimmed and must not be empty, or as one
// string, which is kept as written (trimmed): a CLI may read more in it than commas.
func OptionToolList(v any) (string, error) {
	list, ok := v.([]any)
	if !ok {
		return OptionString(v)
	}
	names := make([]string, 0, len(list))
	for i, item := range list {
		s, ok := item.(string)
		if !ok || strings.TrimSpace(s) == "" {
			return "", fmt.Errorf("[%d]: must be a non-empty tool name (got %s)", i, DescribeValue(item))
		}
		names = append(names, strings.TrimSpace(s))
	}
	return strings.Join(names, ","), nil
}

// OptionCount is a non-negative whole number: an integer, a float without a fraction,
// or a decimal string. Unsigned and float values above math.MaxInt32 are refused.
func OptionCount(v any) (int64, error) {
	switch n := v.(type) {
	case nil:
		return 0, nil
	case int:
		if n >= 0 {
			return int64(n), nil
		}
	case int64:
		if n >= 0 {
			return n, nil
		}
	case uint64:
		if n <= math.MaxInt32 {
			return int64(n), nil
		}
	case float64:
		if n >= 0 && n == math.Trunc(n) && n <= math.MaxInt32 {
			return int64(n), nil
		}
	case string:
		if i, err := strconv.ParseInt(strings.TrimSpace(n), 10, 64); err == nil && i >= 0 {
			return i, nil
		}
	}
	return 0, fmt.Errorf("must be a non-negative whole number (got %s)", DescribeValue(v))
}

// OptionUSD is a non-negative, finite amount in US dollars: a number or a decimal
// string.
func OptionUSD(v any) (float64, error) {
	var f float64
	switch n := v.(type) {
	case nil:
		return 0, nil
	case int:
		f = float64(n)
	case int64:
		f = float64(n)
	case uint64:
		f = float64(n)
	case float64:
		f = n
	case string:
		var err error
		if f, err = strconv.ParseFloat(strings.TrimSpace(n), 64); err != nil {
			return 0, fmt.Errorf("must be an amount in USD (got %s)", DescribeValue(v))
		}
	default:
		return 0, fmt.Errorf("must be an amount in USD (got %s)", DescribeValue(v))
	}
	if f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("must be a non-negative amount in USD (got %s)", DescribeValue(v))
	}
	return f, nil
}

// DescribeValue names a configuration value for an error message: a string quoted,
// "a list", "a mapping", "nothing", and anything else as fmt prints it.
func DescribeValue(v any) string {
	switch t := v.(type) {
	case nil:
		return "nothing"
	case string:
		return strconv.Quote(t)
	case []any:
		return "a list"
	case map[string]any, map[any]any:
		return "a mapping"
	}
	return fmt.Sprint(v)
}
