package workflow

import (
	"fmt"
	"strings"
)

// Problem is one finding about a library: the file it is in (as a path
// joined to the library directory), the field path inside that file (empty
// for the file as a whole) and what is wrong.
type Problem struct {
	File  string
	Field string
	Msg   string
}

// String formats the problem as "file: field: message".
func (p Problem) String() string {
	if p.Field == "" {
		return p.File + ": " + p.Msg
	}
	return p.File + ": " + p.Field + ": " + p.Msg
}

// LoadError is the error of a library or definition that fails validation.
// It lists every problem found, not only the first.
type LoadError struct {
	Problems []Problem
}

func (e *LoadError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "workflow: %d invalid definition problem(s):", len(e.Problems))
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		b.WriteString(p.String())
	}
	return b.String()
}

// problems collects findings while loading.
type problems struct {
	list []Problem
}

func (ps *problems) add(file, field, format string, args ...any) {
	ps.list = append(ps.list, Problem{File: file, Field: field, Msg: fmt.Sprintf(format, args...)})
}

// at returns a reporter bound to file, for field paths below prefix.
func (ps *problems) at(file, prefix string) func(field, format string, args ...any) {
	return func(field, format string, args ...any) {
		ps.add(file, joinField(prefix, field), format, args...)
	}
}

func joinField(prefix, field string) string {
	switch {
	case prefix == "":
		return field
	case field == "":
		return prefix
	case strings.HasPrefix(field, "["):
		return prefix + field
	}
	return prefix + "." + field
}
