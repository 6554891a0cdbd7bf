package webhook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// Parse reads an authentic delivery of tracker kind (Verify first: Parse trusts h and
// body) and says how it ends: Accepted, Ignored, Stale (Linear only) or Malformed. The
// Delivery carries Tracker, ID, At (now) and, as far as the payload got, Event; Issues
// when Accepted. The error is nil exactly when the result is Accepted (an ignored
// delivery has one too, saying why it was ignored); it names fields, and at most the
// repository, project or team a delivery is about, cut short, but never quotes the
// body. s supplies the project and team filters; s.Tracker and s.Secret are not
// consulted.
func Parse(kind string, h http.Header, body []byte, s Settings, now time.Time) (Delivery, string, error) {
	d := Delivery{Tracker: kind, At: now}
	rc, ok := receivers[kind]
	if !ok {
		return d, Malformed, fmt.Errorf("webhook: no receiver for tracker kind %q (known: %s)", kind, strings.Join(Kinds(), ", "))
	}
	d.ID = h.Get(rc.delivery)
	if len(d.ID) > maxIDLen {
		d.ID = ""
		return d, Malformed, fmt.Errorf("%s: the %s header is longer than %d bytes", kind, rc.delivery, maxIDLen)
	}
	result, err := rc.parse(&d, h, body, s, now)
	if result != Accepted {
		d.Issues = nil
		if err == nil { // every parser gives its reason; this keeps the contract if one forgets
			err = fmt.Errorf("%s: %s", kind, result)
		}
		return d, result, err
	}
	return d, Accepted, nil
}

// decode unmarshals a JSON object body into v, or says what is wrong with it in words
// that quote nothing of the body.
func decode(kind string, body []byte, v any) error {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return fmt.Errorf("%s: the body is not a JSON object", kind)
	}
	err := json.Unmarshal(body, v)
	if err == nil {
		return nil
	}
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return fmt.Errorf("%s: the body is not valid JSON (at byte %d)", kind, syntax.Offset)
	case errors.As(err, &typ) && typ.Field != "":
		// typ.Value is "number 1.5" for numbers: keep the JSON type, not the value.
		got, _, _ := strings.Cut(typ.Value, " ")
		return fmt.Errorf("%s: field %s is a JSON %s, want %s", kind, typ.Field, got, jsonKind(typ.Type))
	default:
		return fmt.Errorf("%s: the body is not JSON of the expected shape", kind)
	}
}

// jsonKind names t as a JSON type.
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "another type"
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Bool:
		return "boolean"
	case reflect.Slice, reflect.Array:
		return "array"
	default:
		return "object"
	}
}

// isName reports whether s can be an event, action or type name: 1 to 64 letters,
// digits, '_', '-', ':' or '.'. Names reach logs, metrics and Status, so anything else
// is refused rather than passed on.
func isName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for _, c := range []byte(s) {
		if !isAlnum(c) && c != '_' && c != '-' && c != ':' && c != '.' {
			return false
		}
	}
	return true
}

// isIdentifier reports whether s can be an issue identifier or id as trackers write
// them ("ENG-12", "PROJ-7", a UUID): 1 to 128 letters, digits, '-', '_' or '.'.
func isIdentifier(s string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for _, c := range []byte(s) {
		if !isAlnum(c) && c != '-' && c != '_' && c != '.' {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// present reports whether a JSON value was given and is not null.
func present(raw json.RawMessage) bool {
	return len(raw) > 0 && !bytes.Equal(raw, []byte("null"))
}

// brief is s quoted, cut to 100 bytes: a payload's names may appear in a reason, but a
// signed body can still make them long.
func brief(s string) string {
	const limit = 100
	if len(s) > limit {
		s = strings.ToValidUTF8(s[:limit], "") + "…"
	}
	return strconv.Quote(s)
}
