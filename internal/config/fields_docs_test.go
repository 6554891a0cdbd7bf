package config

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// configurationDoc is the operator's reference, whose tables are checked against the
// settings of fields.go.
const configurationDoc = "../../docs/configuration.md"

// TestDocs_ReferenceTablesMatchTheSettings keeps docs/configuration.md true: every
// setting of fields.go has a row in the `| Key | Type | Default |` table of its section
// under "## Settings", every row is a setting, and the type and default agree; and the
// table of SORTIE_* overrides lists every override, with the setting it replaces.
func TestDocs_ReferenceTablesMatchTheSettings(t *testing.T) {
	doc, err := os.ReadFile(configurationDoc)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range checkDocs(string(doc)) {
		t.Error(p)
	}
}

// TestCheckDocs_NamesTheKeyAndWhatToFix: a row removed, a row for a key config does not
// read, and a wrong default or type are each reported with the key and the fix.
func TestCheckDocs_NamesTheKeyAndWhatToFix(t *testing.T) {
	raw, err := os.ReadFile(configurationDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	edit := func(old, new string) string {
		t.Helper()
		if !strings.Contains(doc, old) {
			t.Fatalf("docs/configuration.md no longer holds %q; update this test", old)
		}
		return strings.Replace(doc, old, new, 1)
	}
	tests := []struct {
		name, doc, want string
	}{
		{"missing row", edit("| `interval_ms` | duration | `30000` |", "| `interval_millis` | duration | `30000` |"),
			"docs/configuration.md does not document polling.interval_ms (fields.go: duration, default 30000): add its row to the table under \"### polling\""},
		{"unknown row", edit("| `interval_ms` | duration | `30000` |", "| `interval_millis` | duration | `30000` |"),
			"documents polling.interval_millis, which is not a setting of internal/config/fields.go: remove the row, or declare the setting"},
		{"wrong default", edit("| `interval_ms` | duration | `30000` |", "| `interval_ms` | duration | `20000` |"),
			"polling.interval_ms: default is \"20000\" in docs/configuration.md"},
		{"wrong type", edit("| `interval_ms` | duration | `30000` |", "| `interval_ms` | integer | `30000` |"),
			"polling.interval_ms: type is \"integer\" in docs/configuration.md"},
		{"missing override", edit("| `SORTIE_AGENT_MAX_TURNS` | `agent.max_turns` | integer |\n", ""),
			"SORTIE_AGENT_MAX_TURNS (agent.max_turns) is missing from the table of overrides in docs/configuration.md"},
	}
	for _, tt := range tests {
		got := checkDocs(tt.doc)
		if !slices.ContainsFunc(got, func(p string) bool { return strings.Contains(p, tt.want) }) {
			t.Errorf("%s: want a problem containing\n\t%s\ngot\n\t%s", tt.name, tt.want, strings.Join(got, "\n\t"))
		}
	}
}

// docRow is a row of a reference table: the setting it documents and its columns.
type docRow struct {
	key, typ, def, heading string
	line                   int
}

// checkDocs returns what docs/configuration.md (doc) says differently from the
// settings and the SORTIE_* overrides, one message a problem.
func checkDocs(doc string) []string {
	rows, overrides := readDocTables(doc)
	var problems []string
	byKey := map[string]docRow{}
	for _, r := range rows {
		if !slices.ContainsFunc(settings, func(s setting) bool { return s.Key == r.key }) {
			problems = append(problems, fmt.Sprintf("docs/configuration.md:%d (%q) documents %s, which is not a setting of internal/config/fields.go: remove the row, or declare the setting", r.line, r.heading, r.key))
			continue
		}
		byKey[r.key] = r
	}
	for _, s := range settings {
		top, _, _ := strings.Cut(s.Key, ".")
		r, ok := byKey[s.Key]
		if !ok {
			problems = append(problems, fmt.Sprintf("docs/configuration.md does not document %s (fields.go: %s, default %s): add its row to the table under \"### %s\"", s.Key, s.Type, orDash(s.Default), top))
			continue
		}
		if r.typ != s.Type {
			problems = append(problems, fmt.Sprintf("%s: type is %q in docs/configuration.md:%d but %q in internal/config/fields.go: make them agree", s.Key, r.typ, r.line, s.Type))
		}
		if !sameDefault(r.def, s.Default) {
			problems = append(problems, fmt.Sprintf("%s: default is %q in docs/configuration.md:%d but %q in internal/config/fields.go: make them agree (the docs may add a note in brackets after the value)", s.Key, orDash(r.def), r.line, orDash(s.Default)))
		}
	}
	for _, o := range envOverrides {
		switch field, ok := overrides[o.Env]; {
		case !ok:
			problems = append(problems, fmt.Sprintf("%s (%s) is missing from the table of overrides in docs/configuration.md: add its row (variable, setting, format)", o.Env, o.Field()))
		case field != o.Field():
			problems = append(problems, fmt.Sprintf("%s: docs/configuration.md says it sets %s, but it sets %s", o.Env, field, o.Field()))
		}
		if !slices.ContainsFunc(settings, func(s setting) bool { return s.Key == o.Field() }) {
			problems = append(problems, fmt.Sprintf("%s overrides %s, which is not a setting of internal/config/fields.go", o.Env, o.Field()))
		}
	}
	for env := range overrides {
		if env != "SORTIE_ENV_FILE" && !slices.Contains(OverrideEnv(), env) {
			problems = append(problems, fmt.Sprintf("docs/configuration.md lists %s among the overrides, but config has no such override (override.go): remove the row", env))
		}
	}
	return problems
}

// sameDefault reports whether the docs' default agrees with the table's: the same, or
// for a number the same followed by a note in brackets ("3600000 (1 h)").
func sameDefault(doc, table string) bool {
	return doc == table || table != "" && strings.HasPrefix(doc, table+" (")
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// readDocTables reads the `| Key | Type | Default |` tables of the "## Settings"
// section of doc, and the `| Variable | Setting |` table of overrides (variable to
// setting).
func readDocTables(doc string) (rows []docRow, overrides map[string]string) {
	overrides = map[string]string{}
	var heading, header string
	inSettings := false
	for i, line := range strings.Split(doc, "\n") {
		switch {
		case strings.HasPrefix(line, "## "):
			inSettings = line == "## Settings"
			heading, header = "", ""
			continue
		case strings.HasPrefix(line, "### "):
			heading, header = strings.TrimPrefix(line, "### "), ""
			continue
		case !strings.HasPrefix(line, "|"):
			header = ""
			continue
		case header == "":
			header = line
			continue
		case strings.HasPrefix(line, "|---"):
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for j := range cells {
			cells[j] = strings.TrimSpace(strings.ReplaceAll(cells[j], "`", ""))
		}
		switch {
		case strings.HasPrefix(header, "| Variable | Setting |") && len(cells) >= 2:
			overrides[cells[0]] = cells[1]
		case inSettings && strings.HasPrefix(header, "| Key | Type | Default |") && len(cells) >= 3:
			def := cells[2]
			if def == "—" {
				def = ""
			}
			rows = append(rows, docRow{key: docKey(heading, cells[0]), typ: cells[1], def: def, heading: heading, line: i + 1})
		}
	}
	return rows, overrides
}

// docKey is the setting a row of the table under heading documents: the key as
// written when it starts with a section's name (`db_path`, `cluster.lease_ms`), else
// under the heading's section, a `<name>` segment standing for any name.
func docKey(heading, key string) string {
	top, _, _ := strings.Cut(key, ".")
	if !slices.Contains(typedKeys, top) {
		key = heading + "." + key
	}
	parts := strings.Split(key, ".")
	for i, p := range parts {
		if strings.HasPrefix(p, "<") && strings.HasSuffix(p, ">") {
			parts[i] = "*"
		}
	}
	return strings.Join(parts, ".")
}

// TestSettings_AreWellFormed: each key is declared once under a section, a zero rule is
// only a number's, and a key read with another names it in its Doc line.
func TestSettings_AreWellFormed(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range settings {
		top, _, _ := strings.Cut(s.Key, ".")
		switch {
		case seen[s.Key]:
			t.Errorf("%s: declared twice", s.Key)
		case !slices.Contains(typedKeys, top):
			t.Errorf("%s: under no section; add %q to sections", s.Key, top)
		case s.Zero != zeroNA && !slices.Contains([]string{"integer", "duration", "number"}, s.Type):
			t.Errorf("%s: a zero rule for a %s", s.Key, s.Type)
		case s.read == nil && !strings.Contains(s.Doc, "read with") && !strings.HasPrefix(s.Key, "token_rates."):
			t.Errorf("%s: no reader, and its Doc line does not say which key reads it", s.Key)
		}
		seen[s.Key] = true
	}
}
