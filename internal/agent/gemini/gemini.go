// Package gemini is the `gemini` agent adapter: it runs Google's Gemini CLI once per
// turn in headless mode (`--output-format stream-json`, the prompt on standard
// input), locally or on an SSH host, and translates its JSON event lines into agent
// events with cumulative token usage and tool-call timing. It is a dialect of the
// shared runner (package cli), which owns the session and turn lifecycle.
//
// Locally, every run gets the issue's own GEMINI_CLI_HOME (home.go), never the
// operator's ~/.gemini: Sortie writes its settings.json (the API-key authentication,
// no usage statistics, sortie-tools and the operator's MCP servers, the API key
// redacted from the shell tool's environment) and keeps only the session transcripts,
// which it repairs before a resume (repair.go). docs/agents/gemini.md is the operator's
// reference, with what the real CLI (0.61.0) made us decide.
package gemini

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"sortie/internal/agent"
	"sortie/internal/agent/cli"
)

// dialect is what running the Gemini CLI takes besides the shared runner.
type dialect struct {
	opts        options
	workflowDir string
	now         func() time.Time
}

// state is a session's own (cli.Session.State).
type state struct {
	// home is the GEMINI_CLI_HOME, prepared again before every local run; ""
	// over SSH.
	home     string
	settings []byte // the settings.json every run gets
	// created: the CLI has a conversation under the session id, so the next turn
	// resumes it. Touched only by the goroutine running the current turn.
	created bool
}

// New builds the adapter. cfg.Options is the `gemini:` block: a value of the wrong
// type is an error naming the key; an unknown key is a warning.
func New(cfg agent.Config) (agent.Adapter, error) {
	opts, warnings, err := parseOptions(cfg.Options, cfg.WorkflowDir)
	if err != nil {
		return nil, err
	}
	// A Node program that loads a large bundle: a loaded machine may take seconds.
	c := cli.Config{Config: cfg, Name: "gemini", DefaultCommand: DefaultCommand, VersionTimeout: 30 * time.Second}
	return cli.New(c, &dialect{opts: opts, workflowDir: cfg.WorkflowDir, now: time.Now}, warnings), nil
}

// Start builds the settings every run gets and, locally, prepares the issue's
// GEMINI_CLI_HOME. A new session gets its id here (--session-id); a resumed one's
// turns all use --resume.
func (d *dialect) Start(_ context.Context, s *cli.Session[state], p agent.StartParams) error {
	st := &s.State
	st.created = s.ID != ""
	if s.ID == "" {
		s.ID = agent.NewSessionID()
	}
	if s.Remote() {
		// The host's own configuration: the CLI there keeps its state in its user's
		// ~/.gemini, and Sortie writes nothing on the host.
		s.Notes = append(s.Notes, "gemini over SSH runs with the host's own ~/.gemini settings: sortie-tools is offered only if they name it")
		return nil
	}
	servers, err := d.servers(p)
	if err != nil {
		return &agent.Error{Kind: agent.ErrPortExit, Message: Kind + ": MCP configuration", Err: err}
	}
	if st.settings, err = d.opts.settings(servers); err != nil {
		return &agent.Error{Kind: agent.ErrPortExit, Message: Kind + ": settings", Err: err}
	}
	st.home = homeDir(s.Env, d.workflowDir, p.Workspace)
	if err := prepareHome(st.home, s.Owner, st.settings, s.ID, st.created); err != nil {
		return &agent.Error{Kind: agent.ErrPortExit, Message: Kind + ": the issue's GEMINI_CLI_HOME", Err: err}
	}
	s.Prepared = true
	s.Env = append(s.Env, homeEnv+"="+st.home)
	s.Write, s.Create = []string{st.home}, []string{st.home}
	return nil
}

// servers are the session's MCP servers: the daemon's .sortie/mcp.json (Sortie's own
// and the operator's mcp_config), else mcp_config's.
func (d *dialect) servers(p agent.StartParams) ([]agent.MCPServer, error) {
	switch {
	case p.MCPConfigPath != "":
		return p.Servers()
	case d.opts.MCPConfig != "":
		return agent.ReadMCPConfig(d.opts.MCPConfig)
	}
	return nil, nil
}

// Turn runs the CLI with the prompt on its standard input, in the issue's
// GEMINI_CLI_HOME as Sortie left it: reset, and the transcript it resumes repaired.
func (d *dialect) Turn(_ context.Context, s *cli.Session[state], p agent.TurnParams, emit func(agent.Event)) (cli.Invocation, error) {
	st := &s.State
	if st.home != "" && !s.Prepared {
		if err := prepareHome(st.home, s.Owner, st.settings, s.ID, st.created); err != nil {
			return cli.Invocation{}, &agent.Error{Kind: agent.ErrPortExit, Message: Kind + ": the issue's GEMINI_CLI_HOME", Err: err}
		}
	}
	t := &turn{translator: newTranslator(d.now, emit, s.Usage), st: st}
	return cli.Invocation{Args: d.opts.args(s.ID, st.created), Stdin: p.Prompt, Translator: t}, nil
}

// turn is the translator of one turn, with the session state its end updates.
type turn struct {
	*translator
	st *state
}

func (t *turn) Line(b []byte)     { t.line(b) }
func (t *turn) SessionID() string { return t.sessionID }

// End judges the turn by its result event, not by the exit status: the CLI (0.61.0)
// exits with an API error's HTTP status modulo 256 (500 is 244), 1 for most other
// failures, and after a result of status error.
func (t *turn) End(e *cli.Ending) (cli.Totals, cli.Verdict) {
	tr := t.translator
	tr.openTools()
	if tr.sessionID != "" {
		t.st.created = true // the CLI wrote a conversation under this id
	}
	totals := cli.Totals{SessionID: tr.sessionID, Usage: tr.usage}
	switch {
	case e.Kind == agent.ErrTurnCancelled:
		return totals, cli.Failed(e.Kind, "%s", e.Crash())
	case tr.result != nil && e.ReadErr == nil && tr.result.Status == "success":
		v := cli.Completed(agent.Truncate(cmp.Or(strings.TrimSpace(tr.text.String()), "turn completed"), maxSummary))
		v.Model = tr.model
		return totals, v
	case tr.result != nil && e.ReadErr == nil:
		return totals, cli.Failed(agent.ErrTurnFailed, "%s (pid %d): %s; %s", e.Name, e.PID, e.Exit, tr.failure())
	case e.Kind != "":
		return totals, cli.Failed(e.Kind, "%s", e.Crash(strings.Join(tr.errors, "; ")))
	}
	msg := fmt.Sprintf("%s (pid %d): exited 0 without a result event", e.Name, e.PID)
	if e.Stderr != "" {
		msg += "; stderr: " + e.Stderr
	}
	return totals, cli.Failed(agent.ErrTurnFailed, "%s", msg)
}
