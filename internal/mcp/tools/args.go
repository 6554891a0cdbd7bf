package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// MaxArgsSize bounds a tool call's arguments. The largest legitimate call, a
// notify_operator message of 4000 characters, is far below it.
const MaxArgsSize = 64 << 10

// decodeArgs decodes a tool's arguments into dst (a pointer to a struct whose json tags
// are the properties of spec's input schema). Absent or null arguments mean {}. Any
// other non-object, a field the schema does not list (names are case-sensitive, unlike
// encoding/json's matching) or a value of the wrong type is an error whose message
// tells the agent what to send instead.
func decodeArgs(spec Spec, raw json.RawMessage, dst any) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) > MaxArgsSize {
		return fmt.Errorf("arguments are larger than %d KiB", MaxArgsSize>>10)
	}
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if raw[0] != '{' {
		return fmt.Errorf("arguments must be a JSON object (got %s)", jsonKind(raw))
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return fmt.Errorf("arguments are not valid JSON: %v", err)
	}
	accepted := spec.Params()
	var unknown []string
	for name := range fields {
		if !slices.Contains(accepted, name) {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		quoted := make([]string, len(unknown))
		for i, u := range unknown {
			quoted[i] = fmt.Sprintf("%q", u)
		}
		if len(accepted) == 0 {
			return fmt.Errorf("unknown field %s: %s takes no arguments (send {})", strings.Join(quoted, ", "), spec.Name)
		}
		return fmt.Errorf("unknown field %s: %s accepts only %s", strings.Join(quoted, ", "), spec.Name, strings.Join(accepted, ", "))
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return fmt.Errorf("field %q must be %s (got %s)", te.Field, jsonTypeName(te.Type), te.Value)
		}
		return fmt.Errorf("arguments: %v", err)
	}
	return nil
}

// jsonKind names the JSON type of a value that is not an object.
func jsonKind(raw json.RawMessage) string {
	switch raw[0] {
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	default:
		return "a number"
	}
}

// jsonTypeName names the JSON type a Go type decodes from.
func jsonTypeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	default:
		return "an object"
	}
}
