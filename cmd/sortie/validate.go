package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"sortie/internal/config"
	"sortie/internal/prompt"
)

// validation is the JSON form of `sortie validate --format json`.
type validation struct {
	Valid    bool             `json:"valid"`
	Path     string           `json:"path"`
	Errors   []config.Problem `json:"errors"`
	Warnings []config.Problem `json:"warnings"`
}

func cmdValidate(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	format := fs.String("format", "text", "output format: text or json")
	envFile := fs.String("env-file", "", "read SORTIE_* overrides from this .env file")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if *format != "text" && *format != "json" {
		fmt.Fprintf(stderr, "sortie validate: --format must be text or json (got %q)\n", *format)
		return exitUsage
	}
	if fs.NArg() > 1 {
		fmt.Fprintln(stderr, "sortie validate: at most one WORKFLOW.md path")
		return exitUsage
	}
	path := workflowPath(fs.Args())

	cfg, problems := config.Check(path, config.Options{EnvFile: *envFile})
	if cfg != nil {
		if _, err := prompt.Parse(cfg.Path, cfg.Prompt, cfg.PromptLine); err != nil {
			problems = append(problems, config.Problem{Severity: "error", Field: "prompt", Message: err.Error()})
		}
	}
	v := validation{Path: path, Errors: []config.Problem{}, Warnings: []config.Problem{}}
	for _, p := range problems {
		if p.Severity == "warning" {
			v.Warnings = append(v.Warnings, p)
		} else {
			v.Errors = append(v.Errors, p)
		}
	}
	v.Valid = len(v.Errors) == 0

	if *format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(v)
	} else {
		for _, p := range v.Errors {
			fmt.Fprintf(stderr, "error: %s: %s\n", p.Field, p.Message)
		}
		for _, p := range v.Warnings {
			fmt.Fprintf(stderr, "warning: %s: %s\n", p.Field, p.Message)
		}
		if v.Valid {
			fmt.Fprintf(stdout, "%s is valid (%d warnings)\n", path, len(v.Warnings))
		} else {
			fmt.Fprintf(stdout, "%s is invalid: %d errors, %d warnings\n", path, len(v.Errors), len(v.Warnings))
		}
	}
	if !v.Valid {
		return exitFailure
	}
	return exitOK
}
