package main

import (
	"strings"
	"testing"
)

func TestUsage_ExitCodes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string // substring of stdout
		stderr string // substring of stderr
	}{
		{name: "version", args: []string{"version"}, code: exitOK, stdout: "sortie " + testVersion + " (commit "},
		{name: "--version", args: []string{"--version"}, code: exitOK, stdout: "sortie " + testVersion},
		{name: "help", args: []string{"help"}, code: exitOK, stdout: "Usage:\n  sortie [flags] [WORKFLOW.md]"},
		{name: "--help", args: []string{"--help"}, code: exitOK, stdout: "Exit codes: 0 success"},
		{name: "-h after a run flag", args: []string{"--dry-run", "-h"}, code: exitOK, stderr: "Usage:"},
		{name: "validate -h", args: []string{"validate", "-h"}, code: exitOK, stderr: "-format"},
		{name: "init -h", args: []string{"init", "-h"}, code: exitOK},
		{name: "demo -h", args: []string{"demo", "-h"}, code: exitOK, stderr: "-dir"},
		{name: "unknown flag", args: []string{"--frobnicate"}, code: exitUsage, stderr: "flag provided but not defined: -frobnicate"},
		{name: "too many arguments", args: []string{"a/WORKFLOW.md", "b/WORKFLOW.md"}, code: exitUsage, stderr: "too many arguments"},
		{name: "validate unknown flag", args: []string{"validate", "--strict"}, code: exitUsage, stderr: "-strict"},
		{name: "validate bad format", args: []string{"validate", "--format", "yaml", "WORKFLOW.md"}, code: exitUsage, stderr: "--format must be text or json"},
		{name: "validate too many arguments", args: []string{"validate", "a.md", "b.md"}, code: exitUsage, stderr: "at most one"},
		{name: "init too many arguments", args: []string{"init", "a", "b"}, code: exitUsage, stderr: "at most one directory"},
		{name: "demo positional argument", args: []string{"demo", "somewhere"}, code: exitUsage, stderr: "--dir"},
		{name: "demo unknown flag", args: []string{"demo", "--fast"}, code: exitUsage, stderr: "-fast"},
		{name: "missing workflow is a failure, not a usage error", args: []string{"does-not-exist/WORKFLOW.md"}, code: exitFailure, stderr: "file not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := runSortie(t, t.TempDir(), nil, tt.args...)
			if r.code != tt.code {
				t.Fatalf("sortie %s: want exit %d, got:\n%s", strings.Join(tt.args, " "), tt.code, r)
			}
			if !strings.Contains(r.stdout, tt.stdout) {
				t.Errorf("sortie %s: stdout does not contain %q:\n%s", strings.Join(tt.args, " "), tt.stdout, r)
			}
			if !strings.Contains(r.stderr, tt.stderr) {
				t.Errorf("sortie %s: stderr does not contain %q:\n%s", strings.Join(tt.args, " "), tt.stderr, r)
			}
		})
	}
}

// TestUsage_LogLevelNames checks that --log-level takes the names logging.level does,
// "warning" included, and rejects others as a failure naming the flag's value.
func TestUsage_LogLevelNames(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "issues.json", "[]\n")
	wf := writeFile(t, dir, "WORKFLOW.md", badBase+"---\nhi\n")
	for _, level := range []string{"debug", "INFO", "warn", "Warning", "error"} {
		if r := runSortie(t, dir, nil, "--dry-run", "--log-level", level, wf); r.code != exitOK {
			t.Errorf("--log-level %s: want exit 0, got:\n%s", level, r)
		}
	}
	for _, level := range []string{"verbose", "info+2"} {
		r := runSortie(t, dir, nil, "--dry-run", "--log-level", level, wf)
		if r.code != exitFailure || !strings.Contains(r.stderr, `log level "`+level+`"`) {
			t.Errorf("--log-level %s: want exit 1 naming the level, got:\n%s", level, r)
		}
	}
}
