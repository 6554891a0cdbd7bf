// Package claude is the `claude-code` agent adapter: it runs the Claude Code CLI once
// per turn in headless mode (`-p --output-format stream-json --verbose`), locally or on
// an SSH host, reads its JSONL stream and normalises it into agent events with
// cumulative token usage, tool-call timing and cost. One adapter serves every session
// concurrently; per-session state lives in the session handle.
//
// The behaviour is ../spec/claude-code-adapter.md's; docs/agents/claude-code.md is the
// operator's reference, including where the real CLI made us depart from the spec.
package claude

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"sortie/internal/agent"
	"sortie/internal/agent/cli"
)

// dialect is what running Claude Code takes besides the shared runner (package cli).
type dialect struct {
	opts        options
	workflowDir string // keys the per-issue configuration directories
	now         func() time.Time
}

// state is a session's own (cli.Session.State).
type state struct {
	// configDir is the issue's own Claude Code configuration directory, reset before
	// every turn (configdir.go); "" over SSH or when the operator set CLAUDE_CONFIG_DIR.
	configDir string
	login     string // the user's credentials file, copied into configDir (use_login); "" for none

	// Touched only by the goroutine running the current turn.
	created   bool    // the CLI has a conversation under the session id: --resume
	lastTotal float64 // the CLI's last total_cost_usd, 0 if unknown
}

// New builds the adapter. cfg.Options is the `claude-code:` block: a value of the wrong
// type or an unknown enum value is an error naming the key.
func New(cfg agent.Config) (agent.Adapter, error) {
	opts, warnings, err := parseOptions(cfg.Options, cfg.WorkflowDir)
	if err != nil {
		return nil, err
	}
	if dir := agent.EnvValue(cli.Environ(cfg.Env), configEnv); dir != "" {
		warnings = append(warnings, fmt.Sprintf("%s=%s is set: every issue's agent shares that Claude Code configuration directory and can "+
			"write it, so one issue's agent can plant instructions and hooks (CLAUDE.md, settings.json) for every other issue and for "+
			"whoever runs claude with it; unset it to give each issue a directory of its own", configEnv, dir))
	}
	// Once, at start-up: a slow disk or a loaded machine may take seconds to map the
	// CLI's large binary for --version, and waiting costs nothing there.
	c := cli.Config{Config: cfg, Name: "claude", DefaultCommand: DefaultCommand, VersionTimeout: 30 * time.Second}
	return cli.New(c, &dialect{opts: opts, workflowDir: cfg.WorkflowDir, now: time.Now}, warnings), nil
}

// Start gives a local session the issue's own configuration directory, reset, and a
// session id: a new session's is generated here (--session-id), a resumed one's turns
// all use --resume.
func (d *dialect) Start(_ context.Context, s *cli.Session[state], p agent.StartParams) error {
	st := &s.State
	if !s.Remote() {
		dirs := stateDirs(s.Env)
		if agent.EnvValue(s.Env, configEnv) == "" {
			st.configDir = issueConfigDir(s.Env, d.workflowDir, p.Workspace)
			if d.opts.UseLogin {
				st.login = loginFile(s.Env)
			}
			if err := resetConfigDir(st.configDir, s.Owner, st.login); err != nil {
				return &agent.Error{Kind: agent.ErrPortExit, Message: Kind + ": the issue's configuration directory", Err: err}
			}
			s.Prepared = true
			s.Env = append(s.Env, configEnv+"="+st.configDir)
			dirs = []string{st.configDir}
			s.Notes = authNotes(s.Env, st.login)
		}
		s.Write, s.Create = dirs, dirs[:min(1, len(dirs))]
	}
	if len(s.MCP) == 0 && d.opts.MCPConfig != "" {
		s.MCP = []string{d.opts.MCPConfig} // without the daemon's file, mcp_config as is
	}
	st.created = s.ID != ""
	if s.ID == "" {
		s.ID = agent.NewSessionID()
	}
	return nil
}

// Turn runs the CLI with the prompt on its standard input, in the issue's
// configuration directory as Sortie left it.
func (d *dialect) Turn(_ context.Context, s *cli.Session[state], p agent.TurnParams, emit func(agent.Event)) (cli.Invocation, error) {
	st := &s.State
	if !d.opts.SessionPersistence && st.created {
		// Without persistence nothing can be resumed: each turn is a new conversation.
		s.ID, st.created = agent.NewSessionID(), false
	}
	if st.configDir != "" && !s.Prepared {
		// Whatever an earlier turn's agent left there, this turn's CLI loads nothing
		// Sortie did not write. (The first turn's was reset by Start, and no CLI has
		// run in it since.)
		if err := resetConfigDir(st.configDir, s.Owner, st.login); err != nil {
			return cli.Invocation{}, &agent.Error{Kind: agent.ErrPortExit, Message: Kind + ": the issue's configuration directory", Err: err}
		}
	}
	t := &turn{translator: newTranslator(d.now, emit, s.Usage, s.CostUSD, st.lastTotal), st: st}
	return cli.Invocation{Args: d.opts.args(s.ID, st.created, s.MCP), Stdin: p.Prompt, Translator: t}, nil
}

// turn is the translator of one turn, with the session state its end updates.
type turn struct {
	*translator
	st *state
}

func (t *turn) Line(b []byte)     { t.line(b) }
func (t *turn) SessionID() string { return t.sessionID }

// End maps the exit and the result line to the turn's outcome (spec, "Exit code
// mapping").
func (t *turn) End(e *cli.Ending) (cli.Totals, cli.Verdict) {
	tr := t.translator
	tr.openTools()
	if tr.sessionID != "" {
		t.st.created = true // the CLI has a conversation under this id now
	}
	if tr.result != nil && tr.result.TotalCostUSD != nil {
		t.st.lastTotal = *tr.result.TotalCostUSD
	}
	totals := cli.Totals{SessionID: tr.sessionID, Usage: tr.usage(), CostUSD: tr.cost(), APIDurationMS: tr.pendingAPI}
	switch {
	case e.Kind != "":
		var reported string
		if tr.result != nil && tr.result.IsError {
			reported = resultError(tr.result)
		}
		msg := e.Crash(reported)
		if t.st.configDir != "" && t.st.login == "" && notLoggedIn(msg) {
			msg += "; " + authHint
		}
		return totals, cli.Failed(e.Kind, "%s", msg)
	case tr.result == nil && tr.turn.output > 0:
		// Partial output without a result line counts as success (spec).
		return totals, cli.Completed("exited without a result line after producing output")
	case tr.result == nil:
		msg := fmt.Sprintf("%s (pid %d): exited 0 without a result line or any output", e.Name, e.PID)
		if e.Stderr != "" {
			msg += "; stderr: " + e.Stderr
		}
		return totals, cli.Failed(agent.ErrTurnFailed, "%s", msg)
	case tr.result.IsError || tr.result.Subtype != "success":
		return totals, cli.Failed(agent.ErrTurnFailed, "claude: %s", resultError(tr.result))
	}
	return totals, cli.Completed(agent.Truncate(tr.result.Result, maxSummary))
}

// stateDirs are where the CLI keeps its own state, which a confined CLI must be able to
// write: $CLAUDE_CONFIG_DIR when set (the issue's own directory unless the operator
// set it), otherwise ~/.claude and ~/.claude.json. The first is a directory.
func stateDirs(env []string) []string {
	if dir := agent.EnvValue(env, "CLAUDE_CONFIG_DIR"); dir != "" {
		return []string{dir}
	}
	home := agent.EnvValue(env, "HOME")
	if home == "" {
		return nil
	}
	return []string{filepath.Join(home, ".claude"), filepath.Join(home, ".claude.json")}
}
