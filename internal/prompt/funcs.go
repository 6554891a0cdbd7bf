package prompt

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/template"
)

// funcs is the complete set of functions a prompt template may call besides
// text/template's builtins.
func funcs() template.FuncMap {
	return template.FuncMap{
		"toJSON": toJSON,
		"join":   join,
		"lower":  strings.ToLower,
	}
}

// toJSON renders v as compact JSON: {{ .issue.labels | toJSON }}.
func toJSON(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("toJSON: %w", err)
	}
	return string(b), nil
}

// join joins a list with sep. The separator comes first so the list can be piped in:
// {{ .issue.labels | join ", " }}. It accepts []string and []any; elements of []any
// are printed as with fmt.Sprint, nil as nothing. A nil list joins to "".
func join(sep string, list any) (string, error) {
	switch l := list.(type) {
	case nil:
		return "", nil
	case []string:
		return strings.Join(l, sep), nil
	case []any:
		parts := make([]string, len(l))
		for i, v := range l {
			if v != nil {
				parts[i] = fmt.Sprint(v)
			}
		}
		return strings.Join(parts, sep), nil
	}
	return "", fmt.Errorf("join: want a list of strings, got %T (the separator comes first: join \", \" LIST)", list)
}
