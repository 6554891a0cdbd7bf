package metrics

import (
	"strings"
	"sync"
)

// Label values that come from agents (tool and model names) or from other code are
// untrusted: each distinct value is a new series in every scrape, forever. A label keeps
// at most maxLabelValues distinct values and folds the rest into otherValue.
const (
	maxLabelValues = 64
	// maxRawValues bounds the cache of raw strings seen, which may be more than the
	// distinct label values (several raw strings can sanitize to one value, and every
	// raw string past the cap folds into otherValue).
	maxRawValues = 4 * maxLabelValues
	maxLabelLen  = 100
	otherValue   = "other"
	unknownValue = "unknown"
)

// boundedLabel maps the raw values of one label to the series of at most maxLabelValues
// distinct sanitized values, plus otherValue. Known raw values are found under a read
// lock without allocating, which is what Observe does for almost every event.
type boundedLabel[T any] struct {
	newSeries func(value string) T

	mu       sync.RWMutex
	byRaw    map[string]T
	byValue  map[string]T
	admitted int // distinct values in byValue, not counting otherValue
}

func newBoundedLabel[T any](newSeries func(value string) T) *boundedLabel[T] {
	return &boundedLabel[T]{newSeries: newSeries, byRaw: map[string]T{}, byValue: map[string]T{}}
}

// get returns the series of raw's label value, creating it if the label has room.
func (b *boundedLabel[T]) get(raw string) T {
	b.mu.RLock()
	s, ok := b.byRaw[raw]
	b.mu.RUnlock()
	if ok {
		return s
	}
	return b.add(raw)
}

func (b *boundedLabel[T]) add(raw string) T {
	value := sanitizeLabel(raw)
	b.mu.Lock()
	defer b.mu.Unlock()
	s, ok := b.byValue[value]
	if !ok {
		if value != otherValue && b.admitted >= maxLabelValues {
			value = otherValue
			s, ok = b.byValue[value]
		}
		if !ok {
			s = b.newSeries(value)
			b.byValue[value] = s
			if value != otherValue {
				b.admitted++
			}
		}
	}
	if len(b.byRaw) < maxRawValues {
		b.byRaw[raw] = s
	}
	return s
}

// sanitizeLabel makes raw a short, printable label value: at most maxLabelLen bytes of
// letters, digits and . _ - : / @ +, anything else replaced by '_'; "unknown" when empty.
// It returns raw itself, without allocating, when raw is already clean.
func sanitizeLabel(raw string) string {
	s := strings.TrimSpace(raw)
	if s == "" {
		return unknownValue
	}
	if len(s) <= maxLabelLen && strings.IndexFunc(s, func(r rune) bool { return !labelRune(r) }) < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(min(len(s), maxLabelLen))
	for _, r := range s {
		if b.Len() >= maxLabelLen {
			break
		}
		if !labelRune(r) {
			r = '_'
		}
		b.WriteRune(r)
	}
	return b.String()
}

func labelRune(r rune) bool {
	switch {
	case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9':
		return true
	}
	return strings.ContainsRune("._-:/@+", r)
}
