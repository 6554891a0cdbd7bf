package linear

import (
	"encoding/json"
	"errors"
	"fmt"
)

// rawData is a GraphQL answer's data object, or an object inside it, undecoded.
type rawData json.RawMessage

func (r *rawData) UnmarshalJSON(b []byte) error {
	*r = append((*r)[:0], b...)
	return nil
}

// connection is a paged connection: its nodes undecoded and its pageInfo. raw is the
// whole object, for a field that is not a connection.
type connection struct {
	Nodes    json.RawMessage `json:"nodes"`
	PageInfo pageInfo        `json:"pageInfo"`
	raw      json.RawMessage
}

var errIssueGone = errors.New("the issue is gone (null)")

// field returns a function that picks the named field of an object.
func field(name string) func(rawData) (connection, error) {
	return func(data rawData) (connection, error) {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(data, &obj); err != nil {
			return connection{}, err
		}
		raw, ok := obj[name]
		if !ok {
			return connection{}, fmt.Errorf("the answer has no %s", name)
		}
		c := connection{raw: raw}
		if len(raw) > 0 && raw[0] == '{' {
			if err := json.Unmarshal(raw, &c); err != nil {
				return connection{}, fmt.Errorf("%s: %w", name, err)
			}
			c.raw = raw
		}
		return c, nil
	}
}

// decodeNodes decodes a connection's nodes; null or absent is none.
func decodeNodes[T any](nodes json.RawMessage) ([]T, error) {
	if len(nodes) == 0 || string(nodes) == "null" {
		return nil, nil
	}
	var out []T
	if err := json.Unmarshal(nodes, &out); err != nil {
		return nil, err
	}
	return out, nil
}
