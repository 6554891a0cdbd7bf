// Package opencode is the `opencode` agent adapter: it runs the OpenCode CLI once per
// turn (`opencode run --format json`, the prompt on standard input), locally or on an
// SSH host, reads its JSON event lines and normalises them into agent events with
// cumulative token usage, cost and tool-call timing. Sessions continue with
// `--session <id>`, the id the CLI reports on its first line.
//
// Locally, every turn runs with OpenCode's configuration, data, state and cache
// directories in a place of the daemon's own, one per issue (issueDir), so
// that an operator's personal OpenCode configuration cannot change or break a run and
// one issue's agent cannot reach another's sessions, while sessions still resume across
// turns and daemon restarts. A confined CLI writes only its issue's data, state and
// cache; the configuration directory is emptied before every turn. The adapter's configuration (Sortie's MCP server, the
// operator's `opencode:` block) reaches the CLI inline, in OPENCODE_CONFIG_CONTENT.
//
// docs/agents/opencode.md is the operator's reference, including what the real CLI
// (1.18.33) made us decide.
package opencode

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"sortie/internal/agent"
	"sortie/internal/agent/cli"
)

// dialect is what running OpenCode takes besides the shared runner (package cli).
type dialect struct {
	opts        options
	workflowDir string
}

// state is a session's own (cli.Session.State).
type state struct {
	// stateDir is the issue's isolated OpenCode directory (issueDir), prepared again
	// before every local turn with base, the environment the session started with; ""
	// over SSH.
	stateDir string
	base     []string
	// stdinHead goes to the CLI's standard input before the prompt: over SSH, the line
	// the remote shell reads the inline configuration from (remoteProgram).
	stdinHead string
}

// New builds the adapter. cfg.Options is the `opencode:` block: a value of the wrong
// type is an error naming the key; an unknown key is a warning.
func New(cfg agent.Config) (agent.Adapter, error) {
	opts, warnings, err := parseOptions(cfg.Options, cfg.WorkflowDir)
	if err != nil {
		return nil, err
	}
	if n := loginNote(cli.Environ(cfg.Env)); n != "" && !opts.UseLogin {
		warnings = append(warnings, n)
	}
	c := cli.Config{Config: cfg, Name: "opencode", DefaultCommand: DefaultCommand, VersionTimeout: 30 * time.Second}
	return cli.New(c, &dialect{opts: opts, workflowDir: cfg.WorkflowDir}, warnings), nil
}

// Start builds the configuration every turn passes and, locally, prepares the isolated
// OpenCode directories. A new session has no id until its first turn reports one.
func (d *dialect) Start(_ context.Context, s *cli.Session[state], p agent.StartParams) error {
	st := &s.State
	servers, err := d.servers(p)
	if err != nil {
		return &agent.Error{Kind: agent.ErrPortExit, Message: Kind + ": MCP configuration", Err: err}
	}
	content, err := d.opts.inlineConfig(servers)
	if err != nil {
		return &agent.Error{Kind: agent.ErrPortExit, Message: Kind + ": configuration", Err: err}
	}
	if s.Remote() {
		s.Program, st.stdinHead = remoteProgram(content, d.opts.ConfigFile, s.Program)
		return nil
	}
	if st.stateDir, err = issueDir(s.Env, d.opts.StateDir, d.workflowDir, p.Workspace, s.Owner); err != nil {
		return &agent.Error{Kind: agent.ErrPortExit, Message: Kind, Err: err}
	}
	st.base = s.Env
	if n := loginNote(s.Env); n != "" && !d.opts.UseLogin {
		s.Notes = append(s.Notes, n)
	}
	dirs, err := prepareState(st.stateDir, s.Env, s.Owner, d.opts.UseLogin)
	if err != nil {
		return &agent.Error{Kind: agent.ErrPortExit, Message: Kind, Err: err}
	}
	s.Prepared = true
	// The CLI (a Bun program) takes its directory from $PWD when set, and the daemon's
	// would make it open an instance there as well, whose watchers kept the 1.18.33
	// process from exiting after its turn.
	vars := append(dirs.vars, "PWD="+p.Workspace)
	s.Env = turnEnv(s.Env, vars, content, d.opts.ConfigFile)
	// The issue's configuration and git's are read, never written: the CLI loads code
	// and instructions from the first, and git commands of the daemon's hooks run with
	// the second.
	s.Write, s.Read = dirs.write, dirs.read
	return nil
}

// servers are the MCP servers of the session: those of the daemon's generated
// .sortie/mcp.json (which already holds the operator's mcp_config and Sortie's own
// server) or, without one, those of mcp_config.
func (d *dialect) servers(p agent.StartParams) (map[string]any, error) {
	switch {
	case p.MCPConfigPath != "":
		servers, err := p.Servers()
		if err != nil {
			return nil, err
		}
		return mcpEntries(servers)
	case d.opts.MCPConfig != "":
		servers, err := agent.ReadMCPConfig(d.opts.MCPConfig)
		if err != nil {
			return nil, err
		}
		return mcpEntries(servers)
	}
	return nil, nil
}

// args are the CLI arguments of one turn; the prompt goes to standard input, since the
// CLI wraps a message argument that holds a space in quotes, and a prompt may be longer
// than one argument can be.
func (d *dialect) args(sessionID, workspace string) []string {
	args := []string{"run", "--format", "json"}
	if sessionID != "" {
		args = append(args, "--session", sessionID)
	} else {
		// A title of our own: without one, the CLI spends a model request on it. The
		// workspace's name is the issue's key.
		args = append(args, "--title=sortie "+filepath.Base(workspace))
	}
	if d.opts.Model != "" {
		args = append(args, "--model", d.opts.Model)
	}
	if d.opts.Agent != "" {
		args = append(args, "--agent", d.opts.Agent)
	}
	if d.opts.Variant != "" {
		args = append(args, "--variant", d.opts.Variant)
	}
	if d.opts.autoApprove() {
		args = append(args, "--auto")
	}
	return args
}

// Turn runs the CLI with the prompt on its standard input, in the issue's directories
// as Sortie left them.
func (d *dialect) Turn(_ context.Context, s *cli.Session[state], p agent.TurnParams, emit func(agent.Event)) (cli.Invocation, error) {
	st := &s.State
	if st.stateDir != "" && !s.Prepared {
		// Whatever the previous turn's agent left in the configuration directory goes
		// before this turn's CLI could load it (the first turn's was prepared by Start).
		if _, err := prepareState(st.stateDir, st.base, s.Owner, d.opts.UseLogin); err != nil {
			return cli.Invocation{}, &agent.Error{Kind: agent.ErrPortExit, Message: Kind, Err: err}
		}
	}
	t := &turn{translator: newTranslator(emit, s.Usage, s.CostUSD, d.opts.modelName()), resumed: s.ID}
	return cli.Invocation{Args: d.args(s.ID, s.Workspace), Stdin: st.stdinHead + p.Prompt, Translator: t}, nil
}

// turn is the translator of one turn.
type turn struct {
	*translator
	resumed string // the session the turn continued by its id, "" for a new one
}

func (t *turn) Line(b []byte)     { t.line(b) }
func (t *turn) SessionID() string { return t.sessionID }

// End maps the exit and the events seen to the turn's outcome.
//
// The CLI (1.18.33) exits 1 after an error line (a provider error it did not retry,
// say) and 1 with nothing on stdout when it cannot start the turn (an unknown session,
// an empty prompt); a permission request it had to reject ends the turn with exit 0
// before the model answered.
func (t *turn) End(e *cli.Ending) (cli.Totals, cli.Verdict) {
	tr := t.translator
	totals := cli.Totals{SessionID: tr.sessionID, Usage: tr.usage, CostUSD: tr.cost}
	switch {
	case len(tr.errors) > 0 && e.ReadErr == nil && (e.Kind == "" || e.Kind == agent.ErrPortExit):
		// The CLI reported the failure itself: a failed turn, not a crashed process.
		return totals, cli.Failed(agent.ErrTurnFailed, "%s (pid %d): %s; %s", e.Name, e.PID, e.Exit, strings.Join(tr.errors, "; "))
	case e.Kind != "":
		msg := e.Crash()
		if t.resumed != "" && strings.Contains(e.Stderr, "Session not found") {
			msg += fmt.Sprintf(" (OpenCode has no session %s in its data directory; was %s.state_dir changed?)", t.resumed, Kind)
		}
		return totals, cli.Failed(e.Kind, "%s", msg)
	case tr.events == 0:
		// A clean exit that said nothing did nothing: never a completed turn.
		msg := fmt.Sprintf("%s (pid %d): exited 0 without any output", e.Name, e.PID)
		if tr.lines > 0 {
			msg = fmt.Sprintf("%s (pid %d): exited 0 without a single OpenCode event (%d unreadable lines)", e.Name, e.PID, tr.lines)
		}
		if e.Stderr != "" {
			msg += "; stderr: " + e.Stderr
		}
		return totals, cli.Failed(agent.ErrTurnFailed, "%s", msg)
	case tr.rejected != "" && tr.lastReason == "tool-calls":
		return totals, cli.Verdict{Reason: agent.EventTurnInputRequired, Kind: agent.ErrTurnInputRequired, Message: fmt.Sprintf(
			"%s (pid %d): OpenCode rejected a permission request of the %s tool and stopped before the model answered; "+
				"a headless run cannot approve requests, so allow what the agent needs in %s.permission", e.Name, e.PID, tr.rejected, Kind)}
	}
	msg := tr.lastText
	if msg == "" {
		msg = "turn completed"
	}
	v := cli.Completed(agent.Truncate(msg, maxSummary))
	v.Model = tr.model
	return totals, v
}
