package mcp

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"sortie/internal/agentsock"
	"sortie/internal/config"
	"sortie/internal/mcp/tools"
)

// Session environment of the sidecar, written by the daemon into the env block of
// .sortie/mcp.json (spec/agent-extensions.md): the session's identity, and the agent
// socket's variables agentsock.EnvSocket and agentsock.EnvToken. No path to the
// daemon's state is among them: the spec's SORTIE_DB_PATH is neither written nor read
// (the run history comes through the socket; see Options.DBPath for a sidecar run by
// hand).
const (
	EnvWorkspace       = "SORTIE_WORKSPACE"        // absolute workspace path
	EnvIssueID         = "SORTIE_ISSUE_ID"         // the tracker's issue id
	EnvIssueIdentifier = "SORTIE_ISSUE_IDENTIFIER" // e.g. PROJ-12
	EnvRunID           = "SORTIE_RUN_ID"           // the run-history row of this run
	EnvSessionID       = "SORTIE_SESSION_ID"       // the agent session, possibly empty
	EnvAttempt         = "SORTIE_ATTEMPT"          // empty on a first run
	EnvToolTimeout     = "SORTIE_TOOL_TIMEOUT_MS"  // bound of one Tier 2 call
)

// Env is the sidecar's session, parsed from its environment.
type Env struct {
	Workspace       string
	IssueID         string
	IssueIdentifier string
	RunID           int64 // 0 when unset
	SessionID       string
	Attempt         string // as given, for logs
	AgentSocket     string
	AgentToken      string // secret: never log it
	// ToolTimeout bounds one Tier 2 call (tools.DefaultCallTimeout unless
	// SORTIE_TOOL_TIMEOUT_MS says otherwise).
	ToolTimeout time.Duration
}

// ParseEnv reads the session environment through getenv. Unset variables leave their
// tool unoffered; a value that is set but malformed (a relative path, a run id or
// timeout that is not a positive integer) is an error naming the variable, because a
// present but invalid dependency must fail the start-up rather than silently shrink the
// tool set.
func ParseEnv(getenv func(string) string) (Env, error) {
	get := func(name string) string { return strings.TrimSpace(getenv(name)) }
	e := Env{
		Workspace:       get(EnvWorkspace),
		IssueID:         get(EnvIssueID),
		IssueIdentifier: get(EnvIssueIdentifier),
		SessionID:       get(EnvSessionID),
		Attempt:         get(EnvAttempt),
		AgentSocket:     get(agentsock.EnvSocket),
		AgentToken:      get(agentsock.EnvToken),
		ToolTimeout:     tools.DefaultCallTimeout,
	}
	for _, p := range []struct{ name, value string }{{EnvWorkspace, e.Workspace}, {agentsock.EnvSocket, e.AgentSocket}} {
		if p.value != "" && !filepath.IsAbs(p.value) {
			return Env{}, fmt.Errorf("%s must be an absolute path (got %q)", p.name, p.value)
		}
	}
	if s := get(EnvRunID); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 1 {
			return Env{}, fmt.Errorf("%s must be a positive integer (got %q)", EnvRunID, s)
		}
		e.RunID = n
	}
	if s := get(EnvToolTimeout); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 1 || n > int64(24*time.Hour/time.Millisecond) {
			return Env{}, fmt.Errorf("%s must be a positive number of milliseconds, at most a day (got %q)", EnvToolTimeout, s)
		}
		e.ToolTimeout = time.Duration(n) * time.Millisecond
	}
	return e, nil
}

// Placeholder is what ConfigEnv answers for a variable the sidecar's environment lacks.
// It is a valid value wherever a secret or a project key may stand (letters and _ only:
// a Jira project key, a token), so that validation passes without the real value.
const Placeholder = "sortie_sidecar_unset"

// ConfigEnv returns the environment lookup to load WORKFLOW.md with in the sidecar
// (config.Options.Env). The agent's environment, and so the sidecar's, lacks the
// daemon's secrets: they are stripped on purpose, and the sidecar never uses tracker or
// notification credentials. A $VAR reference to one would fail validation, so an
// unset or empty variable is answered with Placeholder, except where a placeholder
// would change the configuration the sidecar does use: HOME and TMPDIR,
// SORTIE_ENV_FILE and the SORTIE_* overrides. The daemon gives a session's sidecar
// none of those overrides (it answers cost_budget's budget itself, over the agent
// socket); an operator running the sidecar by hand may set them.
// SORTIE_TRACKER_API_KEY is a secret: it gets the placeholder, so a workflow whose key
// comes only from it still validates.
func ConfigEnv(lookup func(string) (string, bool)) func(string) (string, bool) {
	real := append([]string{"HOME", "TMPDIR", "SORTIE_ENV_FILE"}, config.OverrideEnv()...)
	real = slices.DeleteFunc(real, func(n string) bool { return n == "SORTIE_TRACKER_API_KEY" })
	return func(name string) (string, bool) {
		v, ok := lookup(name)
		if v != "" || slices.Contains(real, name) {
			return v, ok
		}
		return Placeholder, true
	}
}
