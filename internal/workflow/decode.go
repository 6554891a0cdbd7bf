package workflow

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"sortie/internal/workflow/toon"
)

// MaxFileSize bounds every file the loader reads, in bytes; larger files
// are reported as problems rather than read.
const MaxFileSize = 1 << 20

// Definition file formats, by extension.
var formats = map[string]string{
	".toon": "toon",
	".yaml": "yaml",
	".yml":  "yaml",
	".json": "json",
}

// definitionExt reports whether name ends in a definition extension.
func definitionExt(name string) bool {
	_, ok := formats[strings.ToLower(filepath.Ext(name))]
	return ok
}

// toJSON converts a TOON, YAML or JSON document, chosen by the extension of
// file, into compact JSON with an object at the root.
func toJSON(file string, data []byte) ([]byte, error) {
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("file is %d bytes, more than the %d allowed", len(data), MaxFileSize)
	}
	var out []byte
	switch formats[strings.ToLower(filepath.Ext(file))] {
	case "toon":
		v, err := toon.Decode(data, toon.DefaultOptions())
		if err != nil {
			return nil, err
		}
		if _, ok := v.(*toon.Object); !ok {
			return nil, errors.New("not a TOON object at the top level")
		}
		if out, err = json.Marshal(v); err != nil {
			return nil, err
		}
	case "yaml":
		var v any
		if err := yaml.Unmarshal(data, &v); err != nil {
			return nil, err
		}
		v, err := fromYAML(v, 0)
		if err != nil {
			return nil, err
		}
		if _, ok := v.(map[string]any); !ok {
			return nil, errors.New("not a YAML mapping at the top level")
		}
		if out, err = json.Marshal(v); err != nil {
			return nil, fmt.Errorf("yaml: %w", err)
		}
	case "json":
		var buf bytes.Buffer
		if err := json.Compact(&buf, data); err != nil {
			return nil, fmt.Errorf("json: %w", err)
		}
		out = buf.Bytes()
		if len(out) == 0 || out[0] != '{' {
			return nil, errors.New("not a JSON object at the top level")
		}
	default:
		return nil, fmt.Errorf("unsupported extension %q: want .toon, .yaml, .yml or .json", filepath.Ext(file))
	}
	return out, nil
}

// fromYAML turns YAML's decoded values into JSON-compatible ones: mappings
// must have string keys.
func fromYAML(v any, depth int) (any, error) {
	if depth > toon.MaxDepth {
		return nil, fmt.Errorf("yaml: nested deeper than %d levels", toon.MaxDepth)
	}
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			c, err := fromYAML(e, depth+1)
			if err != nil {
				return nil, err
			}
			v[k] = c
		}
		return v, nil
	case map[any]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			ks, ok := k.(string)
			if !ok {
				return nil, fmt.Errorf("yaml: mapping key %v is not a string", k)
			}
			c, err := fromYAML(e, depth+1)
			if err != nil {
				return nil, err
			}
			m[ks] = c
		}
		return m, nil
	case []any:
		for i, e := range v {
			c, err := fromYAML(e, depth+1)
			if err != nil {
				return nil, err
			}
			v[i] = c
		}
		return v, nil
	}
	return v, nil
}

// decodeFile decodes the definition file into v. A failure is one Problem
// naming file and, for a mistyped value, the field.
func decodeFile(file string, data []byte, v any) (json.RawMessage, *Problem) {
	doc, err := toJSON(file, data)
	if err != nil {
		return nil, &Problem{File: file, Msg: "cannot parse: " + err.Error()}
	}
	if err := json.Unmarshal(doc, v); err != nil {
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) {
			return nil, &Problem{File: file, Field: ute.Field, Msg: fmt.Sprintf("cannot use a JSON %s as %s", ute.Value, ute.Type)}
		}
		return nil, &Problem{File: file, Msg: "cannot decode: " + err.Error()}
	}
	return doc, nil
}
