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

// sortedKeys returns the keys of m in order, so problems come out deterministically.
func sortedKeys(m map[string]any) []string {
	return slices.Sorted(maps.Keys(m))
}
