package config

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"time"

	"sortie/internal/tracker"
	// Every tracker adapter registers its kind and declares its block's keys, which
	// config checks tracker.kind and the tracker's block against (TrackerKinds).
	_ "sortie/internal/tracker/all"
)

// Config is a loaded WORKFLOW.md: typed settings with defaults applied, every $VAR and ~
// resolved, and every path absolute. A Config is immutable once returned; a reload
// produces a new one.
type Config struct {
	Path, Dir string // absolute WORKFLOW.md path and its directory

	Tracker TrackerConfig
	// Polling.Interval is the time between tracker polls (default 30s).
	// Polling.WebhookInterval replaces it while the tracker's webhooks are delivering
	// (default 5m): polling is then only the safety net.
	Polling struct{ Interval, WebhookInterval time.Duration }
	// Workspace.Root is the absolute directory holding one workspace per issue
	// (default $TMPDIR/sortie_workspaces).
	Workspace struct{ Root string }
	Hooks     HooksConfig
	Agent     AgentConfig
	// DBPath is the absolute SQLite path (default .sortie.db next to WORKFLOW.md).
	DBPath  string
	Server  ServerConfig
	Logging LoggingConfig
	Worker  WorkerConfig
	// TokenRates holds cost-estimate rates by agent kind (for the dashboard only).
	TokenRates map[string]TokenRate
	// Workflows is the `workflows:` section: the workflow library the agents'
	// workflow tools serve. Zero when absent.
	Workflows WorkflowsConfig
	// NotifyOperator is the `notify_operator:` section: the rate limit of the agents'
	// notify_operator tool (notifylimit.go). Defaults when absent.
	NotifyOperator NotifyOperatorConfig
	// Cluster is `database_url` and the `cluster:` section (cluster.go): the
	// PostgreSQL store several daemons share. Zero: SQLite at DBPath.
	Cluster ClusterConfig
	// Reactions are `reactions:`, `ci_feedback:` and `github:` (reactions.go): what
	// happens to a handed-off issue's pull request. SelfReview is `self_review:`.
	Reactions  ReactionsConfig
	SelfReview SelfReviewConfig
	// Extensions holds every top-level key without a typed field, unchanged: adapter
	// blocks (`file:`, `claude-code:`, `copilot-cli:`, `mock:`), `notifications` and
	// unknown keys. (`reactions`, `ci_feedback`, `github` and `self_review` are typed:
	// Reactions and SelfReview.)
	Extensions map[string]any

	// Prompt is the template body, trimmed. PromptLine is the 1-based WORKFLOW.md line
	// on which it starts.
	Prompt     string
	PromptLine int
	// PromptEngine is prompt.engine: "go" or "liquid", or "" to detect the template's
	// dialect from the template itself (prompt.DetectEngine).
	PromptEngine string

	// SecretEnv names the environment variables that hold credentials: those referenced
	// as $VAR or ${VAR} in tracker.api_key, tracker.endpoint, github.api_key, github.endpoint, and keys of extension blocks
	// whose names suggest a secret (key, token, secret, password, ...), plus the SORTIE_*
	// override that supplied tracker.api_key. The daemon removes them from agent and hook
	// environments. Sorted, no duplicates.
	SecretEnv []string

	// Warnings are the non-fatal problems found while loading, for the daemon to log.
	Warnings []Problem
}

// TrackerConfig is the `tracker:` section.
type TrackerConfig struct {
	Kind        string // file, github, jira or linear
	Endpoint    string // adapter base URL; "" means the adapter's default
	APIKey      string // secret: never log it
	Project     string // Jira project key, GitHub owner/repo or Linear project slug (tracker.project_slug)
	Team        string // Linear team key (tracker.team_key); "" elsewhere
	QueryFilter string // adapter-interpreted extra filter (JQL fragment, search qualifiers)
	// ActiveStates and TerminalStates are matched case-insensitively everywhere.
	ActiveStates, TerminalStates []string
	// HandoffState is where a successful run moves the issue ("" = no handoff).
	HandoffState string
	// InProgressState is where a worker moves the issue when it starts ("" = no move).
	InProgressState string
	// Path is the file tracker's issues file, absolute: tracker.path, else the
	// `file.path` of the `file:` block. "" when neither is set.
	Path     string
	Comments struct{ OnDispatch, OnCompletion, OnFailure bool }
	// RequiredLabels are the labels an issue must all carry to be dispatched
	// (tracker.required_labels), lower-cased and trimmed; empty: no requirement.
	RequiredLabels []string
	// Assignee limits dispatch to the issues assigned to one user (tracker.assignee,
	// tracker.kind linear only, else $LINEAR_ASSIGNEE when that is set): "me" for the
	// owner of tracker.api_key, or a user's id or e-mail, trimmed, $VAR resolved, case
	// kept. "" means no assignee filter.
	Assignee string
	// BlockedStates are the states in which an issue with an unfinished blocker waits
	// for it (tracker.blocked_states): nil means every active state (Sortie's rule), an
	// empty list none. A Symphony file defaults to Todo only, as Symphony gates.
	BlockedStates []string
	// WebhookSecret is the secret the tracker's webhook deliveries are signed with
	// (tracker.webhook_secret, $VAR expanded): "" turns the receiver off. A secret:
	// never log it. WebhookSecretRef is the value as written (for `sortie webhooks`,
	// which names the variable, never its value).
	WebhookSecret, WebhookSecretRef string
	// Provider is tracker.provider as written (Symphony's adapter-owned object),
	// preserved for the adapter; nil when absent.
	Provider map[string]any
}

// HooksConfig is the `hooks:` section: shell scripts run in the workspace.
type HooksConfig struct {
	AfterCreate, BeforeRun, AfterRun, BeforeRemove string
	Timeout                                        time.Duration // per hook run (default 60s)
	// Sandbox is what hooks.sandbox grants the hooks that run confined, beyond what
	// the run's agent may touch.
	Sandbox HookSandboxConfig
}

// HookSandboxConfig is `hooks.sandbox`: extra absolute paths a confined hook (every hook
// after the agent first ran: after_run, before_remove, later before_runs) may read, or
// read and write, beyond the agent's own policy. A deploy key and its known_hosts, say.
type HookSandboxConfig struct {
	ReadPaths, WritePaths []string
}

// AgentConfig is the `agent:` section.
type AgentConfig struct {
	// Kind is a registered adapter kind (agent.Kinds): claude-code (the default),
	// copilot-cli, codex (the default when a `codex:` block is present, as in Symphony's
	// WORKFLOW.md), gemini, opencode or mock.
	Kind string
	// Command is the CLI to run: agent.command, else the adapter's default
	// (agent.Meta.DefaultCommand; none for mock).
	Command string

	TurnTimeout     time.Duration // one turn (default 1h)
	ReadTimeout     time.Duration // start-up and synchronous calls (default 5s)
	StallTimeout    time.Duration // max silence between events (default 5m); 0 disables
	MaxRetryBackoff time.Duration // cap of the retry backoff (default 5m)

	MaxConcurrentAgents int   // global limit (default 10)
	MaxTurns            int   // turns per run (default 20, at least 1)
	MaxSessions         int   // runs per issue before giving up; 0 = unlimited
	MaxRetries          int   // failure retries in a row before the issue is held (default 10); 0 = unlimited
	MaxTokens           int64 // token budget per issue; 0 = unlimited
	// MaxCostUSD is the spend budget per issue in USD, priced with token_rates for the
	// agent kind when set, else with the cost the agent CLI reports; 0 = unlimited.
	MaxCostUSD float64

	// MaxConcurrentAgentsByState limits running agents per tracker state. Keys are
	// lower-cased states; entries that were not positive integers are dropped.
	MaxConcurrentAgentsByState map[string]int

	// Sandbox confines each local agent's process tree (agent.sandbox).
	Sandbox SandboxConfig
	// RunAs is the OS user (name or uid) local agents and hooks run as when the daemon
	// runs as root (agent.run_as); "" runs them as the daemon's user. Read at start-up.
	RunAs string
	// BudgetWarnRatio is the share of agent.max_tokens or agent.max_cost_usd whose
	// crossing alerts the operator, once per issue (agent.budget_warn_ratio, default
	// 0.8); 0 turns the warning off.
	BudgetWarnRatio float64
	// KeepProcesses leaves running what a local agent starts and leaves behind
	// (agent.keep_processes); by default every process of a run is stopped when it ends.
	KeepProcesses bool
	// Env names the daemon's environment variables agents inherit besides the basics
	// and their CLI's own (agent.env; internal/agent/agentenv). A name ending in "*" is
	// a prefix.
	Env []string
	// TrackerReads is agent.tracker_reads: TrackerReadsOwn ("" too: the default), where
	// tracker_api shows an agent other issues of the project without their comments, or
	// TrackerReadsProject, comments included. Writes are the agent's own issue's only.
	TrackerReads string
}

// SandboxConfig is `agent.sandbox`: how a local agent's process tree is confined.
type SandboxConfig struct {
	// Mode is SandboxLandlock or SandboxOff; "" (absent) means landlock where the
	// kernel supports it, else off with a warning.
	Mode string
	// ReadPaths and WritePaths are extra absolute paths the agent may read, or read
	// and write, beyond its workspace, its run's temporary directory and the system.
	ReadPaths, WritePaths []string
}

// Sandbox modes.
const (
	SandboxLandlock = "landlock"
	SandboxOff      = "off"
)

// ServerConfig is the `server:` section: the HTTP dashboard, API and metrics.
type ServerConfig struct {
	Host    string // an IP address (default 127.0.0.1)
	Port    int    // 0–65535 (default 7678); 0 disables the server
	PortSet bool   // true when server.port was given explicitly
	// AuthToken is the bearer token the API and dashboard require when Host is not a
	// loopback address ($VAR allowed, and then stripped from agents like every secret).
	AuthToken string
	// PublicURL is the address trackers and people reach this daemon at, when it is
	// not http://host:port (a reverse proxy): an absolute http(s) URL without query or
	// fragment, trailing slash removed. "" when not set.
	PublicURL string
}

// LoggingConfig is the `logging:` section, read once at start-up.
type LoggingConfig struct {
	Level  string // debug, info (default), warn or error
	Format string // text (default) or json
}

// WorkerConfig is the `worker:` section: where agents run.
type WorkerConfig struct {
	// SSHHosts, when non-empty, runs agents on these hosts over SSH. Deduplicated.
	SSHHosts []string
	// MaxConcurrentAgentsPerHost limits agents per SSH host; 0 = unlimited.
	MaxConcurrentAgentsPerHost int
	// SSHStrictHostKeyChecking is accept-new (default), yes or no.
	SSHStrictHostKeyChecking string
}

// WorkflowsConfig is the `workflows:` section.
type WorkflowsConfig struct {
	// Dir is the absolute directory of the workflow library (workflows.dir: relative
	// to WORKFLOW.md's directory, $VAR and ~ expanded). "" means no workflow tools.
	// Load checks that it is a directory; the library itself is loaded by its user.
	Dir string
	// Workflow is the id of the workflow the first-turn prompt tells the agent to
	// run; "" leaves the choice to the agent (or the prompt template).
	Workflow string
	// Answerers are the tracker logins or emails whose "/sortie choose" comments
	// answer checkpoints; empty means the tracker's default (docs/workflows.md).
	Answerers []string
}

// TokenRate is the price of one million tokens, in dollars, for cost estimates.
type TokenRate struct {
	InputPerMTok, OutputPerMTok, CacheReadPerMTok float64
}

// DBKey names the database in twelve hex digits (a prefix of the SHA-256 of DBPath), for
// what a daemon keeps outside it per database: its runs' temporary directories and
// cgroups, which the next daemon on the same database finds and clears.
func (c *Config) DBKey() string {
	sum := sha256.Sum256([]byte(c.DBPath))
	return hex.EncodeToString(sum[:6])
}

// Block returns the top-level extension block named name (for example "claude-code" or
// "file"), or nil when it is absent or not a map. The map is shared: do not modify it.
func (c *Config) Block(name string) map[string]any {
	m, _ := c.Extensions[name].(map[string]any)
	return m
}

// TrackerPath returns the absolute path of the file tracker's issues file: tracker.path
// if set, else `file.path`, relative paths resolved against Dir. It returns "" when
// neither is set. Load fills Tracker.Path this way (expanding ~ too); the fallback here
// serves Configs built by hand.
func (c *Config) TrackerPath() string {
	if c.Tracker.Path != "" {
		return c.Tracker.Path
	}
	p, _ := c.Block("file")["path"].(string)
	if p == "" {
		return ""
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(c.Dir, p)
	}
	return filepath.Clean(p)
}

// TrackerKinds returns the tracker kinds config accepts, sorted: the tracker registry's
// (tracker.Kinds), which holds every adapter, as config links them all
// (internal/tracker/all). The agent kinds are the agent registry's too (agent.Kinds):
// the adapters linked into the program, which internal/agent/all links.
func TrackerKinds() []string { return tracker.Kinds() }

// Default values, exported so documentation and callers agree with the builder.
const (
	DefaultPollingInterval     = 30 * time.Second
	DefaultWebhookInterval     = 5 * time.Minute
	DefaultHookTimeout         = 60 * time.Second
	DefaultAgentKind           = "claude-code"
	DefaultTurnTimeout         = time.Hour
	DefaultReadTimeout         = 5 * time.Second
	DefaultStallTimeout        = 5 * time.Minute
	DefaultMaxRetryBackoff     = 5 * time.Minute
	DefaultMaxConcurrentAgents = 10
	DefaultMaxTurns            = 20
	DefaultMaxRetries          = 10
	DefaultBudgetWarnRatio     = 0.8
	DefaultServerHost          = "127.0.0.1"
	DefaultServerPort          = 7678
	DefaultLogLevel            = "info"
	DefaultLogFormat           = "text"
	DefaultSSHStrictHostKey    = "accept-new"
	DefaultDBName              = ".sortie.db"
	DefaultWorkspaceDirName    = "sortie_workspaces"
	// DefaultLinearEndpoint is tracker.endpoint for tracker.kind linear.
	DefaultLinearEndpoint = "https://api.linear.app/graphql"
	// LinearAPIKeyEnv is the variable tracker.api_key defaults to for tracker.kind
	// linear, as in Symphony. It is a secret like any tracker key.
	LinearAPIKeyEnv = "LINEAR_API_KEY"
	// LinearAssigneeEnv is the variable tracker.assignee defaults to for tracker.kind
	// linear when it is set, as in Symphony.
	LinearAssigneeEnv = "LINEAR_ASSIGNEE"
)

// Linear's default states, used when tracker.active_states or tracker.terminal_states
// is absent for tracker.kind linear (Symphony's defaults).
var (
	linearActiveStates   = []string{"Todo", "In Progress"}
	linearTerminalStates = []string{"Closed", "Cancelled", "Canceled", "Duplicate", "Done"}
)
