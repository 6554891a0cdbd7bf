package config

import (
	"fmt"
	"strings"
)

// Severities of a Problem.
const (
	SeverityError   = "error"
	SeverityWarning = "warning"
)

// Checks that name a class of warning rather than a field. Errors use the field path
// (or CheckWorkflowLoad for problems with the file itself) as their check.
const (
	CheckWorkflowLoad  = "workflow_load"   // the file or its .env could not be read or parsed
	CheckUnknownKey    = "unknown_key"     // an unknown top-level key (kept in Extensions)
	CheckUnknownSubKey = "unknown_sub_key" // an unknown key inside a known section (ignored)
	CheckTypeMismatch  = "type_mismatch"   // a value that was dropped or replaced by a default
	CheckNotSupported  = "not_supported"   // a reference daemon's block or reaction kind that Sortie accepts but does not act on
	CheckDeprecated    = "deprecated"      // a block read in its old form (ci_feedback)
)

// Problem is one finding about a WORKFLOW.md. Errors make the configuration unusable;
// warnings do not. Its JSON form is what `sortie validate --format json` prints.
type Problem struct {
	Severity string `json:"severity"` // SeverityError or SeverityWarning
	// Check classifies the problem for `sortie validate`: the field path for most
	// errors, or one of the Check* constants.
	Check string `json:"check"`
	// Field is the dotted path of the offending key (`agent.max_sessions`), or "" when the
	// problem concerns the file as a whole.
	Field string `json:"field,omitempty"`
	// Message says what is wrong and, where a value was given, ends with `(got <value>)`;
	// values that came from the environment also name the variable `(from SORTIE_X)`.
	Message string `json:"message"`
}

// String renders the problem as `config: <field>: <message>`.
func (p Problem) String() string {
	if p.Field == "" {
		return "config: " + p.Message
	}
	return "config: " + p.Field + ": " + p.Message
}

// IsError reports whether the problem has error severity.
func (p Problem) IsError() bool { return p.Severity == SeverityError }

// ValidationError is returned by Load when a WORKFLOW.md has at least one error. Problems
// holds every error and warning found, in file order where that is known.
type ValidationError struct {
	Path     string
	Problems []Problem
}

// Error lists each error-severity problem on its own line.
func (e *ValidationError) Error() string {
	var lines []string
	for _, p := range e.Problems {
		if p.IsError() {
			lines = append(lines, p.String())
		}
	}
	switch len(lines) {
	case 0:
		return "config: " + e.Path + ": invalid configuration"
	case 1:
		return lines[0]
	}
	return fmt.Sprintf("config: %s: %d problems:\n%s", e.Path, len(lines), strings.Join(lines, "\n"))
}

// Errors returns only the error-severity problems.
func (e *ValidationError) Errors() []Problem { return filterProblems(e.Problems, SeverityError) }

func filterProblems(ps []Problem, severity string) []Problem {
	var out []Problem
	for _, p := range ps {
		if p.Severity == severity {
			out = append(out, p)
		}
	}
	return out
}

func hasErrors(ps []Problem) bool {
	for _, p := range ps {
		if p.IsError() {
			return true
		}
	}
	return false
}
