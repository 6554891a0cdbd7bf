// Package copilot is the `copilot-cli` agent adapter: it runs the GitHub Copilot CLI once
// per turn in autopilot mode (`--output-format json -s --autopilot --no-ask-user`),
// locally or on an SSH host, reads its JSONL stream and normalises it into agent events
// with cumulative output-token usage and tool-call timing. The CLI names its session
// only in the final result event, so the first turn starts a new conversation and later
// turns resume the id it reported. One adapter serves every session concurrently;
// per-session state lives in the session handle.
//
// The behaviour is ../spec/copilot-cli-adapter.md's; docs/agents/copilot-cli.md is the
// operator's reference, including where the real CLI made us depart from the spec.
package copilot

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"sortie/internal/agent"
	"sortie/internal/agent/cli"
)

// canaryTimeout bounds `copilot --version` at session start (spec: 5 seconds).
const canaryTimeout = 5 * time.Second

// maxArg is the longest single argument the adapter puts on a command line. Linux
// refuses any one argument over 128 KiB (MAX_ARG_STRLEN), and in SSH mode the whole
// remote command, prompt included, is one argument of ssh. A prompt that would make an
// argument longer goes to the CLI's standard input instead, which it reads as the
// prompt when there is no --prompt.
const maxArg = 120 << 10

// dialect is what running Copilot CLI takes besides the shared runner (package cli).
type dialect struct {
	opts        options
	workflowDir string // keys the per-issue homes
	now         func() time.Time
	gh          string // the GitHub CLI asked by the authentication fallback
	run         *cli.Runner[state]

	usageOnce sync.Once
	usageFlag bool // the CLI knows --usage-output-file
}

// state is a session's own (cli.Session.State).
type state struct {
	// home is the issue's own COPILOT_HOME, reset before every run of the CLI
	// (home.go); "" over SSH or when the operator set COPILOT_HOME.
	home     string
	usageDir string // private directory for the CLI's usage file, "" when not used

	// Touched only by the goroutine running the current turn.
	model string  // the last model the CLI named
	mark  cliMark // the CLI session's own cumulative figures after our last turn
}

// cliMark is where the CLI session's cumulative counters stood after the last turn,
// so that a turn's share can be taken from the next reading. The CLI counts from the
// start of its session, across every invocation that resumed it.
type cliMark struct {
	session   string // the CLI session the figures belong to
	output    int64  // output tokens, from the usage file
	apiMS     int64  // result.usage.totalApiDurationMs
	hasOutput bool
	hasAPI    bool
}

// New builds the adapter. cfg.Options is the `copilot-cli:` block: a value of the wrong
// type is an error naming the key; unknown keys are warnings.
func New(cfg agent.Config) (agent.Adapter, error) {
	opts, warnings, err := parseOptions(cfg.Options, cfg.WorkflowDir)
	if err != nil {
		return nil, err
	}
	if w := sharedHomeWarning(cli.Environ(cfg.Env)); w != "" {
		warnings = append(warnings, w)
	}
	d := &dialect{opts: opts, workflowDir: cfg.WorkflowDir, now: time.Now, gh: "gh"}
	d.run = cli.New(cli.Config{Config: cfg, Name: "copilot", DefaultCommand: DefaultCommand, VersionTimeout: canaryTimeout, VersionRequired: true,
		VersionHint: " (the CLI does not run; the npm package needs Node.js 22 or later)"}, d, warnings)
	return d.run, nil
}

// supportsUsageFile reports, once per adapter, whether the CLI knows
// --usage-output-file, where the pinned version reports its token counts (older
// versions put them on assistant.message and lack the flag).
func (d *dialect) supportsUsageFile(ctx context.Context, exe string, env []string, cred *syscall.Credential) bool {
	d.usageOnce.Do(func() {
		out, _ := d.run.Output(ctx, exe, env, cred, "--help")
		d.usageFlag = strings.Contains(string(out), "--usage-output-file")
	})
	return d.usageFlag
}

// Start prepares a local session: the issue's own COPILOT_HOME, reset, then the
// `--version` canary and the authentication preflight. A resumed session's turns use
// --resume from the first; a new session's id stays empty until the first turn's
// result event names it.
func (d *dialect) Start(ctx context.Context, s *cli.Session[state], p agent.StartParams) error {
	st := &s.State
	if len(s.MCP) == 0 && d.opts.MCPConfig != "" {
		s.MCP = []string{d.opts.MCPConfig} // without the daemon's file, mcp_config as is
	}
	if s.Remote() {
		return nil
	}
	// The loader would otherwise run the newest CLI it finds in any of its package
	// directories, one under COPILOT_HOME included.
	s.Env = append(s.Env, "COPILOT_AUTO_UPDATE=false")
	home := agent.EnvValue(s.Env, homeEnv)
	if home == "" {
		st.home = issueHome(s.Env, d.workflowDir, p.Workspace)
		// Before the canary, which runs unconfined.
		if err := resetHome(st.home, s.Owner); err != nil {
			return &agent.Error{Kind: agent.ErrPortExit, Message: Kind + ": the issue's COPILOT_HOME", Err: err}
		}
		s.Env = append(s.Env, homeEnv+"="+st.home)
		home = st.home
	}
	cred := s.Owner.Credential()
	if _, err := d.run.RunVersion(ctx, s.Exe, s.Env, cred); err != nil {
		return err
	}
	note, err := d.checkAuth(ctx, s.Env)
	if err != nil {
		return err
	}
	if note != "" {
		s.Notes = append(s.Notes, note)
	}
	s.Write = []string{home}
	if d.supportsUsageFile(ctx, s.Exe, s.Env, cred) {
		// Outside the workspace, so that nothing of ours lands in the agent's tree.
		if st.usageDir, err = os.MkdirTemp("", "sortie-copilot-"); err != nil {
			return &agent.Error{Kind: agent.ErrPortExit, Message: Kind + ": directory for the CLI's usage file", Err: err}
		}
		if err := s.Owner.Chown(st.usageDir); err != nil {
			return &agent.Error{Kind: agent.ErrPortExit, Message: Kind + ": giving the usage file's directory to agent.run_as", Err: err}
		}
		s.Write = append(s.Write, st.usageDir)
	}
	s.Create = s.Write[:1]
	// The runtime the canary unpacked: read, run, never changed.
	s.Read = runtimeDirs(s.Env)
	return nil
}

// Turn runs the CLI with the prompt as an argument (on standard input when too long),
// resuming the session by its id, or the workspace's latest when no id was reported.
func (d *dialect) Turn(_ context.Context, s *cli.Session[state], p agent.TurnParams, emit func(agent.Event)) (cli.Invocation, error) {
	st := &s.State
	if st.home != "" {
		// Whatever an earlier turn's agent left there, this turn's CLI loads nothing
		// Sortie did not keep.
		if err := resetHome(st.home, s.Owner); err != nil {
			return cli.Invocation{}, &agent.Error{Kind: agent.ErrPortExit, Message: Kind + ": the issue's COPILOT_HOME", Err: err}
		}
	}
	ta := turnArgs{prompt: p.Prompt, sessionID: s.ID, mcpConfigs: s.MCP}
	switch {
	case s.ID != "":
		ta.mode = resumeID
	case s.Turns > 0:
		ta.mode = resumeContinue // no result ever named the session (spec fallback)
	}
	if st.usageDir != "" {
		ta.usageFile = filepath.Join(st.usageDir, fmt.Sprintf("usage-%d.json", s.Turns+1))
		os.Remove(ta.usageFile)
	}
	inv := cli.Invocation{Args: d.opts.args(ta)}
	if longest(s.Argv(inv.Args)) > maxArg {
		ta.prompt = ""
		inv.Args, inv.Stdin = d.opts.args(ta), p.Prompt
	}
	t := &turn{translator: newTranslator(d.now, emit, s.Usage), s: s, mode: ta.mode, usageFile: ta.usageFile}
	t.translator.model = st.model
	inv.Translator, inv.Started = t, startMessage(p.TurnNumber, ta.mode, s.ID)
	return inv, nil
}

// longest is the length of the longest of args.
func longest(args []string) int {
	n := 0
	for _, a := range args {
		n = max(n, len(a))
	}
	return n
}

// Stop removes the session's private directory.
func (d *dialect) Stop(s *cli.Session[state]) error {
	if s.State.usageDir != "" {
		return os.RemoveAll(s.State.usageDir)
	}
	return nil
}

func startMessage(n int, mode resumeMode, id string) string {
	var how string
	switch mode {
	case resumeID:
		how = "resuming session " + id
	case resumeContinue:
		how = "continuing the workspace's most recent session (no session id was reported)"
	default:
		how = "new session"
	}
	if n > 0 {
		return fmt.Sprintf("turn %d: %s", n, how)
	}
	return how
}

// turn is the translator of one turn, with what its end settles.
type turn struct {
	*translator
	s         *cli.Session[state]
	mode      resumeMode
	usageFile string // "" when the CLI writes none
	apiMS     int64  // this turn's share of the CLI's API time, for the terminal event
}

func (t *turn) Line(b []byte)     { t.line(b) }
func (t *turn) SessionID() string { return t.sessionID }

// End maps the exit and the result event to the turn's outcome (spec, "Exit code
// mapping"), once the turn's usage is settled.
func (t *turn) End(e *cli.Ending) (cli.Totals, cli.Verdict) {
	tr := t.translator
	tr.openTools()
	t.settle()
	t.s.State.model = tr.model
	totals := cli.Totals{SessionID: tr.sessionID, Usage: tr.usage(), APIDurationMS: t.apiMS}
	switch {
	case e.Kind == agent.ErrPortExit && e.ReadErr == nil && tr.result != nil:
		// The CLI finished the turn and reported its failure itself (an API error
		// after its retries, say): a failed turn, not a crashed process.
		return totals, cli.Failed(agent.ErrTurnFailed, "%s", t.failure(e))
	case e.Kind != "":
		return totals, cli.Failed(e.Kind, "%s", e.Crash())
	case tr.resultFailed():
		return totals, cli.Failed(agent.ErrTurnFailed, "%s", t.failure(e))
	}
	// Exit 0, with a successful result or none at all: the spec treats both as done.
	msg := "turn completed"
	switch {
	case tr.result == nil && t.s.ID == "":
		msg += " without a result event; the next turn continues the workspace's most recent session"
	case tr.result == nil:
		msg += " without a result event"
	}
	return totals, cli.Completed(msg)
}

// failure describes a turn the CLI reported as failed.
func (t *turn) failure(e *cli.Ending) string {
	msg := fmt.Sprintf("%s (pid %d): %s", e.Name, e.PID, e.Exit)
	if r := t.result; r != nil && r.ExitCode != nil {
		msg += fmt.Sprintf(", result exit code %d", *r.ExitCode)
	}
	if t.lastError != "" {
		msg += "; " + t.lastError
	} else if e.Stderr != "" {
		msg += "; stderr: " + e.Stderr
	}
	return msg
}

// settle brings the turn's figures up to what the CLI counted. The pinned CLI reports
// no token counts in its stream, only in the usage file it writes on exit; that file and
// the result's API time are totals of the CLI session, so the turn's share is the
// difference from where they stood after the previous turn of the same CLI session. A
// turn that started a new CLI session starts from zero; for the first turn of a session
// resumed from an earlier run the starting point is unknown, and only the stream's
// figures count (an undercount of that one turn rather than a recount of the run before).
func (t *turn) settle() {
	tr, st := t.translator, &t.s.State
	var base cliMark
	switch {
	case t.mode == resumeNone:
		base = cliMark{hasOutput: true, hasAPI: true}
	case tr.sessionID != "" && tr.sessionID == st.mark.session:
		base = st.mark
	}
	next := cliMark{session: tr.sessionID}

	if t.usageFile != "" {
		u, ok := readUsageFile(t.usageFile)
		os.Remove(t.usageFile)
		if ok {
			next.output, next.hasOutput = u.Output, true
			// Older CLIs reported each message's tokens in the stream: the file then
			// only revises those requests' figures, and is no API request of its own.
			streamed := tr.output > 0
			if base.hasOutput && tr.raiseOutput(u.Output-base.output) {
				if u.Model != "" {
					tr.model = u.Model
				}
				tr.emit(agent.Event{Type: agent.EventTokenUsage, Usage: tr.usage(), Model: tr.model,
					Message: "turn totals from the CLI's usage file", Revision: streamed})
			}
		}
	}
	if r := tr.result; r != nil && r.Usage != nil {
		next.apiMS, next.hasAPI = r.Usage.TotalAPIDurationMS, true
		if base.hasAPI {
			t.apiMS = max(r.Usage.TotalAPIDurationMS-base.apiMS, 0)
		}
	}
	if next.session != "" {
		st.mark = next
	}
}
