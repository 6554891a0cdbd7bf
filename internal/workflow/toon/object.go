package toon

import (
	"bytes"
	"encoding/json"
)

// Object is a decoded TOON object. It keeps its keys in document order
// (§2), which a Go map cannot, and marshals to JSON in that order.
type Object struct {
	keys []string
	vals map[string]any
}

func newObject() *Object { return &Object{vals: map[string]any{}} }

// Len returns the number of keys.
func (o *Object) Len() int { return len(o.keys) }

// Keys returns the keys in document order. The slice is a copy.
func (o *Object) Keys() []string { return append([]string(nil), o.keys...) }

// Get returns the value stored under key and whether it is present.
func (o *Object) Get(key string) (any, bool) {
	v, ok := o.vals[key]
	return v, ok
}

// set stores v under key; an existing key keeps its position.
func (o *Object) set(key string, v any) {
	if _, ok := o.vals[key]; !ok {
		o.keys = append(o.keys, key)
	}
	o.vals[key] = v
}

// MarshalJSON writes the object with its keys in document order.
func (o *Object) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			buf.WriteByte(',')
		}
		kb, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		buf.Write(kb)
		buf.WriteByte(':')
		vb, err := json.Marshal(o.vals[k])
		if err != nil {
			return nil, err
		}
		buf.Write(vb)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}
