package jira

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
)

// projectKeyRE is Jira's default project key format: an ASCII letter, then letters,
// digits or underscores. Jira stores keys upper-case; JQL compares them case-insensitively.
var projectKeyRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,254}$`) })

// ValidateProject reports whether project is a Jira project key such as PROJ. The error
// says what is wrong and how to fix it; config validation (`sortie validate`) uses it.
func ValidateProject(project string) error {
	p := strings.TrimSpace(project)
	switch {
	case p == "":
		return fmt.Errorf("config: tracker.project: Jira needs a project key such as PROJ (the prefix of issue keys like PROJ-123)")
	case strings.Contains(p, "://"):
		return fmt.Errorf("config: tracker.project: must be a project key such as PROJ, not a URL (got %q); put the site URL in tracker.endpoint", p)
	case strings.Contains(p, "/"):
		return fmt.Errorf("config: tracker.project: must be a Jira project key such as PROJ, not owner/repo (got %q); owner/repo is for tracker.kind github", p)
	case projectKeyRE().MatchString(p):
		return nil
	}
	if i := strings.LastIndexByte(p, '-'); i > 0 && projectKeyRE().MatchString(p[:i]) {
		return fmt.Errorf("config: tracker.project: must be the project key, not an issue key (got %q); use %q", p, p[:i])
	}
	return fmt.Errorf("config: tracker.project: must be a Jira project key: an ASCII letter, then letters, digits or underscores, such as PROJ (got %q)", p)
}

// quoteJQL returns s as a JQL string literal. Backslashes and double quotes are escaped,
// so no value (a state name, a project key) can end the literal and add operators;
// control characters, which JQL literals cannot carry, become spaces.
func quoteJQL(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			b.WriteByte(' ')
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func quoteList(values []string) string {
	q := make([]string, len(values))
	for i, v := range values {
		q[i] = quoteJQL(v)
	}
	return "(" + strings.Join(q, ", ") + ")"
}

// candidatesJQL is the query for candidate issues: the project, the active states and the
// operator's query_filter (already checked by checkQueryFilter), highest priority first.
func candidatesJQL(project string, states []string, filter string) string {
	var b strings.Builder
	b.WriteString("project = ")
	b.WriteString(quoteJQL(project))
	b.WriteString(" AND status IN ")
	b.WriteString(quoteList(states))
	if f := strings.TrimSpace(filter); f != "" {
		b.WriteString(" AND (")
		b.WriteString(f)
		b.WriteString(")")
	}
	b.WriteString(" ORDER BY priority ASC, created ASC")
	return b.String()
}

// keysJQL is the query for the issues with the given keys (Data Center state lookups).
func keysJQL(keys []string) string { return "key IN " + quoteList(keys) }

// checkQueryFilter rejects a query_filter that would change the shape of the candidate
// query rather than narrow it: an unbalanced parenthesis could close ours and OR in other
// projects, an unterminated string would swallow the ORDER BY, and an ORDER BY of its
// own makes the query invalid.
func checkQueryFilter(f string) error {
	depth := 0
	var quote rune
	escaped := false
	words := []string{}
	var word strings.Builder
	flush := func() {
		if word.Len() > 0 {
			words = append(words, strings.ToLower(word.String()))
			word.Reset()
		}
	}
	for _, r := range f {
		if quote != 0 {
			switch {
			case escaped:
				escaped = false
			case r == '\\':
				escaped = true
			case r == quote:
				quote = 0
			}
			continue
		}
		switch {
		case r == '"' || r == '\'':
			flush()
			quote = r
		case r == '(':
			flush()
			depth++
		case r == ')':
			flush()
			depth--
			if depth < 0 {
				return fmt.Errorf("config: tracker.query_filter: has a ')' without its '(' (got %q); the filter must be a self-contained JQL condition", f)
			}
		case r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == ',':
			flush()
		default:
			word.WriteRune(r)
		}
	}
	flush()
	if quote != 0 {
		return fmt.Errorf("config: tracker.query_filter: has an unterminated %c string (got %q)", quote, f)
	}
	if depth != 0 {
		return fmt.Errorf("config: tracker.query_filter: has %d '(' without ')' (got %q)", depth, f)
	}
	for i := 0; i+1 < len(words); i++ {
		if words[i] == "order" && words[i+1] == "by" {
			return fmt.Errorf("config: tracker.query_filter: must not contain ORDER BY (got %q); Sortie orders candidates itself", f)
		}
	}
	return nil
}
