package store

import "encoding/json"

// MarshalList encodes a list (a trace event's warnings, a checkpoint's options) for a
// JSON column, the way every backend stores one; an empty or nil list is "[]".
func MarshalList[T any](v []T) (string, error) {
	if len(v) == 0 {
		return "[]", nil
	}
	b, err := json.Marshal(v)
	return string(b), err
}

// UnmarshalList decodes a JSON column written by MarshalList; an empty list is nil, as
// it was written.
func UnmarshalList[T any](s string) ([]T, error) {
	var v []T
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return nil, err
	}
	if len(v) == 0 {
		return nil, nil
	}
	return v, nil
}
