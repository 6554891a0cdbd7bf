// Package agent defines how Sortie drives a coding-agent CLI: the Adapter interface,
// the normalised Event stream with cumulative token usage, turn results, the agent error
// kinds and the registry that builds adapters by kind. Adapters are pure translators
// between a CLI and these types; they make no scheduling decisions.
package agent

import (
	"context"
	"math"
	"time"

	"sortie/internal/runas"
)

// Adapter drives one kind of agent CLI. One Adapter serves every session concurrently;
// per-session state lives in the Session handle.
type Adapter interface {
	// StartSession validates the workspace and resolves the agent binary. It may spawn
	// nothing. Errors carry invalid_workspace_cwd or agent_not_found.
	StartSession(ctx context.Context, p StartParams) (*Session, error)
	// RunTurn runs one turn (one CLI invocation for fork-per-turn adapters) and
	// delivers every event synchronously through p.OnEvent before returning. Cancelling
	// ctx stops the turn gracefully (SIGTERM to the process group, SIGKILL after a grace
	// period) and returns a turn_cancelled error.
	RunTurn(ctx context.Context, s *Session, p TurnParams) (TurnResult, error)
	// StopSession releases the session. It is called exactly once per session, is safe
	// after a failed turn, and kills anything of the session still running.
	StopSession(ctx context.Context, s *Session) error
}

// StartParams are the inputs of StartSession.
type StartParams struct {
	Workspace       string // absolute path of an existing directory
	ResumeSessionID string // continue this agent session instead of starting a new one
	MCPConfigPath   string // absolute path of .sortie/mcp.json, "" for none
	// MCPServers are the servers of MCPConfigPath, parsed once by the daemon: an
	// adapter that translates them into its CLI's own configuration reads no file.
	MCPServers               []MCPServer
	Env                      []string // complete environment for the agent process (KEY=VALUE)
	SSHHost                  string   // run on this host over SSH; "" runs locally
	SSHStrictHostKeyChecking string
	// Confine, when not nil, confines the local CLI's process tree (confine.go).
	// Ignored over SSH, where the remote host decides.
	Confine *Confinement
	// RunAs, when not nil, runs the local CLI as that OS user (agent.run_as), with Env
	// already naming it (HOME, USER, LOGNAME). Ignored over SSH.
	RunAs *runas.User
	// Supervise, when not nil, runs the local CLI under `sortie supervise`, which owns
	// its whole process tree (confine.go). Ignored over SSH.
	Supervise *Supervision
}

// Session is the handle of one agent session. ID may change after a turn when the CLI
// assigns its own id; the latest one is what resumes the session.
type Session struct {
	ID        string
	Workspace string
	SSHHost   string
	// PID and PGID of the current turn's process, 0 when none runs. Written by the
	// adapter, read by the orchestrator only through events and results.
	PID int
	// Internal is the adapter's own per-session state.
	Internal any
}

// TurnParams are the inputs of RunTurn.
type TurnParams struct {
	Prompt     string
	TurnNumber int // 1-based within the run
	// OnEvent receives every event of the turn, in order, on the RunTurn goroutine.
	OnEvent func(Event)
}

// TurnResult is how a turn ended.
type TurnResult struct {
	SessionID  string
	ExitReason EventType // turn_completed, turn_failed, turn_cancelled, ...
	Usage      Usage     // cumulative for the session
	CostUSD    float64   // cumulative cost the CLI reported, 0 when unknown
	PID        int
}

// Usage is cumulative token usage for a session. Adapters always report running totals;
// the orchestrator takes deltas.
type Usage struct {
	Input     int64 `json:"input_tokens"`
	Output    int64 `json:"output_tokens"`
	Total     int64 `json:"total_tokens"`
	CacheRead int64 `json:"cache_read_tokens"`
}

// EventType names a normalised agent event.
type EventType string

// Event types, as in the spec.
const (
	EventSessionStarted       EventType = "session_started"
	EventStartupFailed        EventType = "startup_failed"
	EventTurnCompleted        EventType = "turn_completed"
	EventTurnFailed           EventType = "turn_failed"
	EventTurnCancelled        EventType = "turn_cancelled"
	EventTurnEndedWithError   EventType = "turn_ended_with_error"
	EventTurnInputRequired    EventType = "turn_input_required"
	EventApprovalAutoApproved EventType = "approval_auto_approved"
	EventUnsupportedToolCall  EventType = "unsupported_tool_call"
	EventTokenUsage           EventType = "token_usage"
	EventNotification         EventType = "notification"
	EventOtherMessage         EventType = "other_message"
	EventMalformed            EventType = "malformed"
	EventToolResult           EventType = "tool_result"
)

// Event is one normalised agent event.
type Event struct {
	Type EventType
	Time time.Time
	PID  int
	// RemotePGID is, over SSH, the remote process group of the turn's CLI once the
	// remote shell has announced it (remote.PGIDMarker), so that a daemon restarted
	// after a crash can stop it there; 0 locally and before it is known.
	RemotePGID     int
	SessionID      string
	Usage          Usage // cumulative; meaningful on token_usage
	Model          string
	Message        string
	CostUSD        float64 // cumulative session cost, when the CLI reports one
	APIDurationMS  int64
	ToolName       string
	ToolDurationMS int64
	ToolError      bool
	// Revision marks a token_usage event that corrects the figures of API requests
	// already reported (Claude's result line raising a turn's totals to what was
	// billed, another content block of a message already counted): it moves the
	// cumulative Usage but is not a new request, so api_requests does not count it.
	Revision bool
}

// AddTokens adds n tokens to a cumulative figure: a negative n adds nothing, and the
// sum stops at the largest int64 rather than wrapping.
func AddTokens(sum, n int64) int64 {
	if n <= 0 {
		return sum
	}
	if sum > math.MaxInt64-n {
		return math.MaxInt64
	}
	return sum + n
}
