package config

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
)

// maxDotenvSize bounds the .env file; it holds a handful of overrides.
const maxDotenvSize = 1 << 20

// parseDotenv parses a .env file: KEY=VALUE lines, blank lines and `#` comments, an
// optional `export ` prefix, values optionally in single or double quotes (stripped, no
// escape processing). An unquoted value ends at ` #` (a comment). The last assignment of
// a key wins. Problems carry the file and line; they never quote a value, which may be a
// secret.
func parseDotenv(path string, data []byte) (map[string]string, []Problem) {
	vars := map[string]string{}
	var problems []Problem
	fail := func(line int, format string, a ...any) {
		problems = append(problems, Problem{
			Severity: SeverityError,
			Check:    CheckWorkflowLoad,
			Message:  fmt.Sprintf("dotenv %s:%d: ", path, line) + fmt.Sprintf(format, a...),
		})
	}
	text := strings.ReplaceAll(strings.TrimPrefix(string(data), "\uFEFF"), "\r\n", "\n")
	for i, raw := range strings.Split(text, "\n") {
		n := i + 1
		line := strings.TrimSpace(raw)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if rest, ok := strings.CutPrefix(line, "export "); ok {
			line = strings.TrimSpace(rest)
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			fail(n, "missing '=' in line")
			continue
		}
		key = strings.TrimSpace(key)
		if !envNameRE().MatchString(key) {
			fail(n, "invalid key %q: keys are letters, digits and _ and do not start with a digit", key)
			continue
		}
		value, err := dotenvValue(strings.TrimSpace(value))
		if err != "" {
			fail(n, "%s", err)
			continue
		}
		vars[key] = value
	}
	return vars, problems
}

// dotenvValue unquotes a trimmed .env value, or returns a description of what is wrong.
func dotenvValue(v string) (string, string) {
	if v == "" {
		return "", ""
	}
	if q := v[0]; q == '"' || q == '\'' {
		end := strings.IndexByte(v[1:], q)
		if end < 0 {
			return "", "unterminated quoted value"
		}
		rest := strings.TrimSpace(v[end+2:])
		if rest != "" && !strings.HasPrefix(rest, "#") {
			return "", "unexpected text after the closing quote"
		}
		return v[1 : end+1], ""
	}
	for _, marker := range []string{" #", "\t#"} {
		if i := strings.Index(v, marker); i >= 0 {
			v = v[:i]
		}
	}
	return strings.TrimSpace(v), ""
}

// loadDotenv reads and parses the .env file at path. A missing file is a warning, as the
// daemon runs fine without it; a malformed one is an error.
func loadDotenv(path string, readFile func(string) ([]byte, error)) (map[string]string, []byte, []Problem) {
	data, err := readFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, []Problem{{
			Severity: SeverityWarning,
			Check:    CheckWorkflowLoad,
			Message:  fmt.Sprintf("dotenv %s: file not found; no overrides loaded from it", path),
		}}
	}
	if err != nil {
		return nil, nil, []Problem{{
			Severity: SeverityError,
			Check:    CheckWorkflowLoad,
			Message:  fmt.Sprintf("dotenv %s: %v", path, err),
		}}
	}
	vars, problems := parseDotenv(path, data)
	return vars, data, problems
}
