package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"sortie/internal/agent"
	"sortie/internal/config"
	"sortie/internal/daemon"
	"sortie/internal/store/postgres"
	"sortie/internal/tracker"
	"sortie/internal/workflow"
)

// validation is the JSON form of `sortie validate --format json`.
type validation struct {
	Valid bool   `json:"valid"`
	Path  string `json:"path"`
	// Database is the store the daemon would open: the SQLite path, or the PostgreSQL
	// URL with its password replaced.
	Database string           `json:"database,omitempty"`
	Errors   []config.Problem `json:"errors"`
	Warnings []config.Problem `json:"warnings"`
}

func cmdValidate(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	format := fs.String("format", "text", "output format: text or json")
	envFile := fs.String("env-file", "", "read SORTIE_* overrides from this .env file")
	if err := fs.Parse(args); err != nil {
		return parseErrorCode(err)
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
		// config accepts only the agent kinds registered in this binary (agent.Kinds),
		// so cfg.Agent.Kind has an adapter.
		if err := daemon.CheckTemplate(cfg); err != nil {
			// The field already says "prompt"; the package prefix would say it twice.
			problems = append(problems, config.Problem{Severity: config.SeverityError, Check: "prompt", Field: "prompt",
				Message: strings.TrimPrefix(err.Error(), "prompt: ")})
		}
		// The tracker adapter checks what only it knows (a repository name's rules, an
		// endpoint's form) when it is built, as the daemon builds it; building one makes
		// no request.
		if _, err := tracker.New(daemon.TrackerConfig(cfg, version)); err != nil {
			problems = append(problems, trackerProblem(err))
		}
		problems = append(problems, agentProblems(cfg, problems)...)
		problems = append(problems, libraryProblems(cfg.Workflows)...)
		if cfg.Cluster.Enabled() {
			// What the driver itself makes of the URL, without connecting; its
			// message never holds the password.
			if err := postgres.CheckURL(cfg.Cluster.DatabaseURL); err != nil {
				problems = append(problems, config.Problem{Severity: config.SeverityError, Check: "database_url", Field: "database_url",
					Message: strings.TrimPrefix(err.Error(), "store: ")})
			}
		}
	}
	v := validation{Path: path, Errors: []config.Problem{}, Warnings: []config.Problem{}}
	if cfg != nil {
		v.Database = cfg.DBPath
		if cfg.Cluster.Enabled() {
			v.Database = "PostgreSQL " + postgres.Redact(cfg.Cluster.DatabaseURL)
		}
	}
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
			fmt.Fprintln(stderr, problemLine(p))
		}
		for _, p := range v.Warnings {
			fmt.Fprintln(stderr, problemLine(p))
		}
		if v.Valid {
			fmt.Fprintf(stdout, "%s is valid (%d warnings)\n", path, len(v.Warnings))
			if cfg.Cluster.Enabled() {
				fmt.Fprintf(stdout, "database: %s\n", v.Database)
			}
		} else {
			fmt.Fprintf(stdout, "%s is invalid: %d errors, %d warnings\n", path, len(v.Errors), len(v.Warnings))
		}
	}
	if !v.Valid {
		return exitFailure
	}
	return exitOK
}

// problemLine is the text form of a problem: `error: <field>: <message>`, or
// `error: <message>` for a problem with the file as a whole (its message names the
// file, and the line where there is one).
func problemLine(p config.Problem) string {
	if p.Field == "" {
		return p.Severity + ": " + p.Message
	}
	return p.Severity + ": " + p.Field + ": " + p.Message
}

// trackerProblem turns an error from building the tracker into a problem with its field,
// when the message names one ("config: tracker.project: ...").
func trackerProblem(err error) config.Problem {
	msg := err.Error()
	if i := strings.Index(msg, "config: "); i >= 0 {
		msg = msg[i+len("config: "):]
	}
	field := "tracker"
	if f, rest, ok := strings.Cut(msg, ": "); ok && strings.HasPrefix(f, "tracker.") && !strings.Contains(f, " ") {
		field, msg = f, rest
	}
	return config.Problem{Severity: config.SeverityError, Check: "tracker", Field: field, Message: msg}
}

// libraryProblems loads the workflow library of workflows.dir, as the daemon will, and
// returns each of its problems and warnings under workflows.dir, and an error when
// workflows.workflow names a workflow the library does not have.
func libraryProblems(w config.WorkflowsConfig) []config.Problem {
	if w.Dir == "" {
		return nil
	}
	const check = "workflows"
	lib, err := workflow.LoadLibrary(w.Dir)
	if err != nil {
		var le *workflow.LoadError
		if !errors.As(err, &le) {
			return []config.Problem{{Severity: config.SeverityError, Check: check, Field: "workflows.dir", Message: err.Error()}}
		}
		var ps []config.Problem
		for _, p := range le.Problems {
			ps = append(ps, config.Problem{Severity: config.SeverityError, Check: check, Field: "workflows.dir", Message: p.String()})
		}
		return ps
	}
	var ps []config.Problem
	for _, p := range lib.Warnings() {
		ps = append(ps, config.Problem{Severity: config.SeverityWarning, Check: check, Field: "workflows.dir", Message: p.String()})
	}
	if w.Workflow != "" {
		var ids []string
		for _, wf := range lib.Workflows() { // not meta: it holds skills, not a workflow to run
			ids = append(ids, wf.ID)
		}
		if !slices.Contains(ids, w.Workflow) {
			ps = append(ps, config.Problem{Severity: config.SeverityError, Check: check, Field: "workflows.workflow",
				Message: fmt.Sprintf("%q is not a workflow of the library in %s (it has: %s)", w.Workflow, w.Dir, strings.Join(ids, ", "))})
		}
	}
	return ps
}

// agentProblems builds the agent adapter as the daemon would, without running its CLI,
// and reports what it refuses in its block (`claude-code:`, `codex:`, ...) as an error
// and what it ignores as a warning, unless the configuration already named that key.
func agentProblems(cfg *config.Config, known []config.Problem) []config.Problem {
	if _, ok := agent.Lookup(cfg.Agent.Kind); !ok {
		return nil // reported above
	}
	a, err := agent.New(daemon.AgentConfig(cfg))
	if err != nil {
		return []config.Problem{{Severity: config.SeverityError, Check: "agent", Field: cfg.Agent.Kind, Message: err.Error()}}
	}
	w, ok := a.(agent.Warner)
	if !ok {
		return nil
	}
	var out []config.Problem
	for _, msg := range w.Warnings() {
		field, _, _ := strings.Cut(msg, ":")
		if slices.ContainsFunc(known, func(p config.Problem) bool { return p.Field == field }) {
			continue
		}
		out = append(out, config.Problem{Severity: config.SeverityWarning, Check: "agent", Field: cfg.Agent.Kind, Message: msg})
	}
	return out
}
