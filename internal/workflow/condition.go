package workflow

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Condition types.
const (
	CondSimple = "simple"
	CondAnd    = "and"
	CondOr     = "or"
	CondNot    = "not"
)

// operators are the comparison operators of a simple condition; ordered
// ones compare numbers.
var operators = map[string]bool{
	"==": false, "!=": false, ">": true, "<": true, ">=": true, "<=": true,
	"exists": false, "notExists": false,
}

// Condition is a structured condition: {type: simple, variable, operator,
// value}, {type: and|or, conditions: [≥2]} or {type: not, condition}. The
// agent evaluates conditions; the loader only checks their shape.
type Condition struct {
	Type     string `json:"type"`
	Variable string `json:"variable,omitempty"`
	// Operator is one of == != > < >= <= exists notExists.
	Operator string `json:"operator,omitempty"`
	// Value is the JSON value compared against; absent for exists and
	// notExists.
	Value      json.RawMessage `json:"value,omitempty"`
	Conditions []Condition     `json:"conditions,omitempty"`
	Condition  *Condition      `json:"condition,omitempty"`
}

// check reports every malformed part of c, with field the path of c.
func (c *Condition) check(field string, report func(field, format string, args ...any)) {
	c.checkDepth(field, 0, report)
}

func (c *Condition) checkDepth(field string, depth int, report func(field, format string, args ...any)) {
	if depth > 32 {
		report(field, "conditions nested deeper than 32 levels")
		return
	}
	switch c.Type {
	case CondSimple:
		if c.Variable == "" {
			report(field+".variable", "missing: a simple condition names a variable")
		}
		ordered, ok := operators[c.Operator]
		switch {
		case c.Operator == "":
			report(field+".operator", "missing: want one of == != > < >= <= exists notExists")
		case !ok:
			report(field+".operator", "unknown operator %q: want one of == != > < >= <= exists notExists", c.Operator)
		case c.Operator == "exists" || c.Operator == "notExists":
			if len(c.Value) > 0 {
				report(field+".value", "operator %s takes no value", c.Operator)
			}
		case len(c.Value) == 0:
			report(field+".value", "missing: operator %s compares against a value", c.Operator)
		case ordered && !numeric(c.Value):
			report(field+".value", "operator %s compares numbers (got %s)", c.Operator, c.Value)
		}
		if len(c.Conditions) > 0 || c.Condition != nil {
			report(field, "a simple condition has no nested conditions")
		}
	case CondAnd, CondOr:
		if len(c.Conditions) < 2 {
			report(field+".conditions", "an %q condition combines at least 2 conditions (got %d)", c.Type, len(c.Conditions))
		}
		for i := range c.Conditions {
			c.Conditions[i].checkDepth(fmt.Sprintf("%s.conditions[%d]", field, i), depth+1, report)
		}
	case CondNot:
		if c.Condition == nil {
			report(field+".condition", "missing: a \"not\" condition negates one condition")
			return
		}
		c.Condition.checkDepth(field+".condition", depth+1, report)
	case "":
		report(field+".type", "missing: want simple, and, or, not")
	default:
		report(field+".type", "unknown condition type %q: want simple, and, or, not", c.Type)
	}
}

// numeric reports whether v is a JSON number or a string holding one, the
// values the reference evaluator's ordered operators accept.
func numeric(v json.RawMessage) bool {
	var x any
	if err := json.Unmarshal(v, &x); err != nil {
		return false
	}
	switch x := x.(type) {
	case float64:
		return true
	case string:
		_, err := strconv.ParseFloat(x, 64)
		return err == nil
	}
	return false
}

// variables appends the variable names c refers to.
func (c *Condition) variables(dst []string) []string {
	if c == nil {
		return dst
	}
	if c.Variable != "" {
		dst = append(dst, c.Variable)
	}
	for i := range c.Conditions {
		dst = c.Conditions[i].variables(dst)
	}
	return c.Condition.variables(dst)
}

// String is the condition's text form, the one transition_condition claims
// are compared with (workflow-server-behaviour.md §6): `var op value` with
// value as compact JSON, `var exists`, parts joined by " AND " or " OR ",
// and "NOT (…)".
func (c *Condition) String() string {
	if c == nil {
		return ""
	}
	switch c.Type {
	case CondSimple:
		if c.Operator == "exists" || c.Operator == "notExists" || len(c.Value) == 0 {
			return c.Variable + " " + c.Operator
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, c.Value); err != nil {
			return c.Variable + " " + c.Operator + " " + string(c.Value)
		}
		return c.Variable + " " + c.Operator + " " + buf.String()
	case CondAnd, CondOr:
		sep := " AND "
		if c.Type == CondOr {
			sep = " OR "
		}
		parts := make([]string, len(c.Conditions))
		for i := range c.Conditions {
			parts[i] = c.Conditions[i].String()
		}
		return strings.Join(parts, sep)
	case CondNot:
		return "NOT (" + c.Condition.String() + ")"
	}
	return ""
}
