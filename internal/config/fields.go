package config

import (
	"fmt"
	"math"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"sortie/internal/agent"
	"sortie/internal/option"
	"sortie/internal/tracker"
)

// This file declares the typed sections of WORKFLOW.md once: every key, its type, its
// default, what 0 means, what it must satisfy and a line on what it does, with the code
// that reads it. The builder reads the sections from this table (build), the lists of
// known keys that unknown_key and unknown_sub_key warnings name come from it
// (knownKeys), and docs/configuration.md's reference tables are checked against it
// (fields_docs_test.go). An adapter's own block (`claude-code:`, `codex:`, `jira:`) is
// declared by the adapter (agent.Meta.Options, tracker.Meta.Options), not here.

// A setting is one key of a typed section.
type setting struct {
	// Key is the dotted path from the top of the front matter: "agent.max_turns",
	// "db_path". A "*" segment stands for any name, as the agent kinds of
	// token_rates.
	Key string
	// Type and Default are the key's Type and Default columns in
	// docs/configuration.md, without the backticks. An empty Default is written "—".
	// A number's Default may be followed there by a note in brackets: "3600000 (1 h)".
	Type, Default string
	// Zero says what 0 means for a number.
	Zero zeroRule
	// Doc says in one line what the key does.
	Doc string
	// read parses the key's value in sec, the map that holds the key (the whole front
	// matter raw for a top-level key), checks it and stores it in c, or records the
	// key's default when it is absent. nil: the key is read with another key, as the
	// Linear keys are with tracker.provider.
	read func(b *builder, c *Config, sec, raw map[string]any)
}

// zeroRule says what an explicit 0 means for a duration or count.
type zeroRule int

const (
	zeroNA        zeroRule = iota // not a number
	zeroIsDefault                 // 0 (or absent) takes the default; negative is an error
	zeroDisables                  // 0 or negative is kept as 0, meaning "off"
	zeroUnlimited                 // 0 means no limit; negative is an error
	zeroRefused                   // 0 is out of bounds, an error
	zeroRaised                    // below 1 is raised to 1, with a warning
)

// section is a typed top-level key: a map of settings, or one setting itself
// (db_path). The order of sections is the order problems are reported in.
type section struct {
	name string
	// exempt names the sub-keys that draw no unknown_sub_key warning although they are
	// no setting: the adapter blocks named after a kind.
	exempt func() []string
	// read, when set, reads the whole section in place of its settings, whose keys
	// have names of the operator's (token_rates' agent kinds).
	read func(b *builder, c *Config, raw map[string]any)
	// check runs after the section's settings are read: a rule between them.
	check func(b *builder, c *Config, sec map[string]any)
}

var sections = []section{
	{name: "tracker", exempt: TrackerKinds},
	{name: "polling"},
	{name: "workspace"},
	{name: "hooks"},
	{name: "agent", exempt: agent.Kinds},
	{name: "db_path"},
	{name: "server"},
	{name: "logging"},
	{name: "worker"},
	{name: "token_rates", read: (*builder).readTokenRates},
	{name: "workflows"},
	{name: "notify_operator"},
	{name: "database_url"},
	{name: "cluster", check: func(b *builder, c *Config, sec map[string]any) {
		if sec != nil && c.Cluster.DatabaseURL == "" && !b.failed("database_url") {
			b.warnf(CheckUnknownSubKey, "cluster", "the cluster section applies only with database_url (PostgreSQL); it is ignored with db_path")
		}
	}},
	{name: "prompt"},
	// reactions, then ci_feedback (which reactions.ci_failure overrides), then github,
	// whose credentials are read only when a reaction is on.
	{name: "reactions", read: (*builder).readReactions},
	{name: "ci_feedback", read: (*builder).readCIFeedback},
	{name: "github", read: (*builder).readGitHub},
	{name: "self_review"},
}

// settings are the keys of the sections, by section, each section's in the order of
// the known keys its unknown_sub_key warnings list; they are read in this order.
var settings = slices.Concat([]setting{
	{Key: "tracker.kind", Type: "string", Doc: "the tracker adapter: " + strings.Join(tracker.Kinds(), ", "),
		read: func(b *builder, c *Config, sec, _ map[string]any) { c.Tracker.Kind, _ = b.str(sec, "tracker.kind") }},
	ref("tracker.endpoint", "the adapter's own; "+DefaultLinearEndpoint+" for linear", "base URL of the tracker API",
		func(c *Config) *string { return &c.Tracker.Endpoint }),
	{Key: "tracker.api_key", Type: "string", Default: "$" + LinearAPIKeyEnv + " for linear", Doc: "the tracker credential; $VAR expanded anywhere",
		read: func(b *builder, c *Config, sec, _ map[string]any) {
			c.Tracker.APIKey = b.expandedKey(sec, "tracker.api_key")
		}},
	{Key: "tracker.webhook_secret", Type: "string, $VAR allowed", Default: "none: no webhook receiver",
		Doc: "the secret the tracker's webhooks are signed with; $VAR expanded anywhere",
		read: func(b *builder, c *Config, sec, _ map[string]any) {
			// expandedKey reports a value that is not a string; the form as written is
			// only kept for `sortie webhooks`, which names its variable.
			c.Tracker.WebhookSecret = b.expandedKey(sec, "tracker.webhook_secret")
			if v, ok := sec["webhook_secret"].(string); ok {
				c.Tracker.WebhookSecretRef = strings.TrimSpace(v)
			}
		}},
	ref("tracker.project", "", "Jira project key, GitHub owner/repo or Linear project slug",
		func(c *Config) *string { return &c.Tracker.Project }),
	{Key: "tracker.project_slug", Type: "string, $-ref", Doc: "Linear's project slug (read with tracker.provider)"},
	{Key: "tracker.team_key", Type: "string, $-ref", Doc: "Linear's team key, in place of a project (read with tracker.provider)"},
	list("tracker.active_states", "[]; [Todo, In Progress] for linear", "states an issue may be dispatched from",
		func(c *Config) *[]string { return &c.Tracker.ActiveStates }),
	list("tracker.terminal_states", "[]; [Closed, Cancelled, Canceled, Duplicate, Done] for linear", "states that mean finished",
		func(c *Config) *[]string { return &c.Tracker.TerminalStates }),
	{Key: "tracker.required_labels", Type: "list of strings", Default: "[]", Doc: "labels an issue must all carry to be dispatched",
		read: func(b *builder, c *Config, sec, _ map[string]any) { c.Tracker.RequiredLabels = b.requiredLabels(sec) }},
	{Key: "tracker.blocked_states", Type: "list of strings", Default: "every active state; [Todo] in a Symphony file",
		Doc: "the states in which an issue waits for its unfinished blockers",
		read: func(b *builder, c *Config, sec, raw map[string]any) {
			c.Tracker.BlockedStates = b.blockedStates(raw, sec)
		}},
	{Key: "tracker.assignee", Type: "string, $-ref", Default: "$" + LinearAssigneeEnv + " for linear, when set",
		Doc: "Linear only: dispatch only one user's issues (read with tracker.provider)"},
	{Key: "tracker.provider", Type: "map", Default: "none", Doc: "the tracker adapter's own settings (Symphony's); Linear's keys",
		read: func(b *builder, c *Config, sec, _ map[string]any) {
			if v, ok := b.value(sec, "tracker.provider"); ok {
				if m, isMap := v.(map[string]any); isMap {
					c.Tracker.Provider = m
				} else {
					b.invalid("tracker.provider", "must be a map (the tracker adapter's own settings)", v)
				}
			}
			b.buildLinear(&c.Tracker, sec)
		}},
	ref("tracker.query_filter", `""`, "an adapter-interpreted extra filter",
		func(c *Config) *string { return &c.Tracker.QueryFilter }),
	{Key: "tracker.handoff_state", Type: "string, $-ref", Default: "none", Doc: "where a successful run moves the issue",
		read: func(b *builder, c *Config, sec, _ map[string]any) {
			c.Tracker.HandoffState = b.optionalState(sec, "tracker.handoff_state")
		}},
	{Key: "tracker.in_progress_state", Type: "string, $-ref", Default: "none", Doc: "where a worker moves the issue when it starts",
		read: func(b *builder, c *Config, sec, _ map[string]any) {
			c.Tracker.InProgressState = b.optionalState(sec, "tracker.in_progress_state")
		}},
	flag("tracker.comments.on_dispatch", "comment on the issue when a run starts",
		func(c *Config) *bool { return &c.Tracker.Comments.OnDispatch }),
	flag("tracker.comments.on_completion", "comment when a run ends normally",
		func(c *Config) *bool { return &c.Tracker.Comments.OnCompletion }),
	flag("tracker.comments.on_failure", "comment when a run fails",
		func(c *Config) *bool { return &c.Tracker.Comments.OnFailure }),
	{Key: "tracker.path", Type: "path", Doc: "the file tracker's issues file (else file.path)",
		read: func(b *builder, c *Config, sec, raw map[string]any) {
			if p, ok := b.str(sec, "tracker.path"); ok {
				c.Tracker.Path, _ = b.resolvePath("tracker.path", p)
			} else if p := fileBlockPath(raw); p != "" {
				// `file.path` is the adapter block's own key; honour it with the same
				// rules as tracker.path except $VAR expansion, which pass-through blocks
				// never get.
				c.Tracker.Path, _ = b.absPath("file.path", p)
			}
		}},

	millis("polling.interval_ms", DefaultPollingInterval, zeroIsDefault, "time between tracker polls",
		func(c *Config) *time.Duration { return &c.Polling.Interval }),
	millis("polling.webhook_interval_ms", DefaultWebhookInterval, zeroIsDefault, "time between polls while the tracker's webhooks deliver",
		func(c *Config) *time.Duration { return &c.Polling.WebhookInterval }),

	{Key: "workspace.root", Type: "path", Default: "$TMPDIR/" + DefaultWorkspaceDirName, Doc: "the directory of the per-issue workspaces",
		read: (*builder).readWorkspaceRoot},

	script("hooks.after_create", "runs once after a workspace is created", func(c *Config) *string { return &c.Hooks.AfterCreate }),
	script("hooks.before_run", "runs before each run", func(c *Config) *string { return &c.Hooks.BeforeRun }),
	script("hooks.after_run", "runs after each run, confined", func(c *Config) *string { return &c.Hooks.AfterRun }),
	script("hooks.before_remove", "runs before a workspace is deleted, confined", func(c *Config) *string { return &c.Hooks.BeforeRemove }),
	{Key: "hooks.timeout_ms", Type: "duration", Default: ms(DefaultHookTimeout), Zero: zeroIsDefault, Doc: "limit per hook run",
		read: (*builder).readHookTimeout},
	pathList("hooks.sandbox.read_paths", "extra paths a confined hook may read", func(c *Config) *[]string { return &c.Hooks.Sandbox.ReadPaths }),
	pathList("hooks.sandbox.write_paths", "extra paths a confined hook may write", func(c *Config) *[]string { return &c.Hooks.Sandbox.WritePaths }),

	{Key: "agent.kind", Type: "string", Default: DefaultAgentKind + ", or codex when a top-level codex: block is present",
		Doc: "the agent adapter: one of agent.Kinds()", read: (*builder).readAgentKind},
	{Key: "agent.command", Type: "string",
		Default: "the adapter's own: claude for claude-code, copilot for copilot-cli, codex app-server for codex, gemini for gemini, opencode for opencode",
		Doc:     "the agent CLI (the default is agent.Meta.DefaultCommand, set by validateAgent)",
		read:    func(b *builder, c *Config, sec, _ map[string]any) { c.Agent.Command, _ = b.str(sec, "agent.command") }},
	millis("agent.turn_timeout_ms", DefaultTurnTimeout, zeroIsDefault, "limit of one turn",
		func(c *Config) *time.Duration { return &c.Agent.TurnTimeout }),
	millis("agent.read_timeout_ms", DefaultReadTimeout, zeroIsDefault, "limit of start-up and synchronous calls",
		func(c *Config) *time.Duration { return &c.Agent.ReadTimeout }),
	// Only an absent key takes the default: an explicit 0 turns stall detection off.
	millis("agent.stall_timeout_ms", DefaultStallTimeout, zeroDisables, "longest silence between agent events",
		func(c *Config) *time.Duration { return &c.Agent.StallTimeout }),
	count("agent.max_concurrent_agents", DefaultMaxConcurrentAgents, zeroIsDefault, "agents running at once",
		func(c *Config) *int { return &c.Agent.MaxConcurrentAgents }),
	{Key: "agent.max_turns", Type: "integer", Default: strconv.Itoa(DefaultMaxTurns), Zero: zeroRaised, Doc: "turns per run",
		read: (*builder).readMaxTurns},
	millis("agent.max_retry_backoff_ms", DefaultMaxRetryBackoff, zeroIsDefault, "cap of the retry backoff",
		func(c *Config) *time.Duration { return &c.Agent.MaxRetryBackoff }),
	{Key: "agent.max_concurrent_agents_by_state", Type: "map of state → integer", Default: "{}", Doc: "limits per tracker state",
		read: (*builder).readByState},
	count("agent.max_sessions", 0, zeroUnlimited, "runs per issue before giving up",
		func(c *Config) *int { return &c.Agent.MaxSessions }),
	{Key: "agent.max_tokens", Type: "integer", Default: "0", Zero: zeroUnlimited, Doc: "token budget per issue",
		read: func(b *builder, c *Config, sec, _ map[string]any) {
			if v, ok := b.value(sec, "agent.max_tokens"); ok {
				if n, ok := b.integer("agent.max_tokens", v); ok {
					if n < 0 {
						b.invalid("agent.max_tokens", "must be non-negative", v)
					} else {
						c.Agent.MaxTokens = n
					}
				}
			}
		}},
	{Key: "agent.max_cost_usd", Type: "number", Default: "0", Zero: zeroUnlimited, Doc: "spend budget per issue in USD",
		read: func(b *builder, c *Config, sec, _ map[string]any) {
			if v, ok := b.value(sec, "agent.max_cost_usd"); ok {
				switch f, isNum := option.NumberValue(v); {
				case !isNum:
					b.invalid("agent.max_cost_usd", "must be an amount in USD", v)
				case f < 0:
					b.invalid("agent.max_cost_usd", "must be non-negative", v)
				default:
					c.Agent.MaxCostUSD = f
				}
			}
		}},
	count("agent.max_retries", DefaultMaxRetries, zeroUnlimited, "failed runs in a row before the issue is held",
		func(c *Config) *int { return &c.Agent.MaxRetries }),
	{Key: "agent.sandbox.mode", Type: "string", Default: "landlock where the kernel supports it, else off",
		Doc: "how a local agent's process tree is confined: landlock or off",
		read: func(b *builder, c *Config, sec, _ map[string]any) {
			if s, ok := b.str(sec, "agent.sandbox.mode"); ok {
				switch strings.ToLower(s) {
				case SandboxLandlock, SandboxOff:
					c.Agent.Sandbox.Mode = strings.ToLower(s)
				default:
					b.invalid("agent.sandbox.mode", "must be landlock or off", s)
				}
			}
		}},
	pathList("agent.sandbox.read_paths", "extra paths a confined agent may read", func(c *Config) *[]string { return &c.Agent.Sandbox.ReadPaths }),
	pathList("agent.sandbox.write_paths", "extra paths a confined agent may write", func(c *Config) *[]string { return &c.Agent.Sandbox.WritePaths }),
	{Key: "agent.run_as", Type: "string", Default: "none", Doc: "the OS user agents and hooks run as when the daemon is root",
		read: func(b *builder, c *Config, sec, _ map[string]any) { c.Agent.RunAs, _ = b.str(sec, "agent.run_as") }},
	flag("agent.keep_processes", "leave running what an agent leaves behind", func(c *Config) *bool { return &c.Agent.KeepProcesses }),
	{Key: "agent.budget_warn_ratio", Type: "number", Default: strconv.FormatFloat(DefaultBudgetWarnRatio, 'g', -1, 64), Zero: zeroDisables,
		Doc: "share of a budget whose crossing alerts the operator",
		read: func(b *builder, c *Config, sec, _ map[string]any) {
			c.Agent.BudgetWarnRatio = DefaultBudgetWarnRatio
			if v, ok := b.value(sec, "agent.budget_warn_ratio"); ok {
				switch f, isNum := option.NumberValue(v); {
				case !isNum || f < 0 || f >= 1:
					b.invalid("agent.budget_warn_ratio", "must be a number from 0 (no warning) to below 1", v)
				default:
					c.Agent.BudgetWarnRatio = f
				}
			}
		}},
	{Key: "agent.tracker_reads", Type: "string", Default: TrackerReadsOwn, Doc: "what tracker_api shows an agent of other issues: own or project",
		read: func(b *builder, c *Config, sec, _ map[string]any) { b.buildTrackerReads(&c.Agent, sec) }},
	{Key: "agent.env", Type: "list of names", Default: "[]", Doc: "more of the daemon's variables agents inherit",
		read: func(b *builder, c *Config, sec, raw map[string]any) { b.buildAgentEnv(&c.Agent, sec, raw) }},

	{Key: "db_path", Type: "path", Default: DefaultDBName + " next to WORKFLOW.md", Doc: "the SQLite database",
		read: (*builder).readDBPath},

	{Key: "server.host", Type: "IP address", Default: DefaultServerHost, Doc: "the address the HTTP server listens on",
		read: func(b *builder, c *Config, sec, _ map[string]any) {
			c.Server.Host = DefaultServerHost
			if host, ok := b.str(sec, "server.host"); ok && host != "" {
				if net.ParseIP(host) == nil {
					b.invalid("server.host", "must be an IP address such as 127.0.0.1 or 0.0.0.0", host)
				} else {
					c.Server.Host = host
				}
			}
		}},
	{Key: "server.port", Type: "integer", Default: strconv.Itoa(DefaultServerPort), Zero: zeroDisables, Doc: "the HTTP port; 0 turns the server off",
		read: func(b *builder, c *Config, sec, _ map[string]any) {
			c.Server.Port = DefaultServerPort
			if v, ok := b.value(sec, "server.port"); ok {
				if n, ok := b.integer("server.port", v); ok {
					if n < 0 || n > 65535 {
						b.invalid("server.port", "must be between 0 and 65535 (0 turns the server off)", v)
					} else {
						c.Server.Port, c.Server.PortSet = int(n), true
					}
				}
			}
		}},
	{Key: "server.auth_token", Type: "string, $VAR allowed", Default: "a generated token in <db_path>.operator-token",
		Doc: "the operator's bearer token; $VAR expanded anywhere",
		read: func(b *builder, c *Config, sec, _ map[string]any) {
			c.Server.AuthToken = b.expandedKey(sec, "server.auth_token")
		}},
	{Key: "server.public_url", Type: "URL", Default: "http://<server.host>:<server.port>",
		Doc: "where trackers and people reach the daemon (behind a reverse proxy)", read: (*builder).readPublicURL},

	oneOf("logging.level", DefaultLogLevel, "must be debug, info, warn or error", "the log level",
		map[string]string{"debug": "debug", "info": "info", "warn": "warn", "error": "error", "warning": "warn"},
		func(c *Config) *string { return &c.Logging.Level }),
	oneOf("logging.format", DefaultLogFormat, "must be text or json", "the log format",
		map[string]string{"text": "text", "json": "json"},
		func(c *Config) *string { return &c.Logging.Format }),

	{Key: "worker.ssh_hosts", Type: "list of strings", Default: "none (agents run locally)", Doc: "hosts to run agents on over SSH",
		read: func(b *builder, c *Config, sec, _ map[string]any) {
			for _, h := range b.stringList(sec, "worker.ssh_hosts") {
				if !slices.Contains(c.Worker.SSHHosts, h) {
					c.Worker.SSHHosts = append(c.Worker.SSHHosts, h)
				}
			}
		}},
	count("worker.max_concurrent_agents_per_host", 0, zeroUnlimited, "agents per SSH host",
		func(c *Config) *int { return &c.Worker.MaxConcurrentAgentsPerHost }),
	{Key: "worker.ssh_strict_host_key_checking", Type: "string", Default: DefaultSSHStrictHostKey, Doc: "accept-new, yes or no",
		read: func(b *builder, c *Config, sec, _ map[string]any) {
			const field = "worker.ssh_strict_host_key_checking"
			c.Worker.SSHStrictHostKeyChecking = DefaultSSHStrictHostKey
			if v, ok := b.value(sec, field); ok {
				s, _ := v.(string)
				switch s = strings.ToLower(strings.TrimSpace(s)); s {
				case "accept-new", "yes", "no":
					c.Worker.SSHStrictHostKeyChecking = s
				default:
					b.warnf(CheckTypeMismatch, field, "must be accept-new, yes or no; using accept-new (got %s)", gotValue(v))
				}
			}
		}},

	// token_rates is read whole by readTokenRates: its keys are agent kinds.
	{Key: "token_rates.*.input_per_mtok", Type: "number", Default: "none", Doc: "dollars per million input tokens"},
	{Key: "token_rates.*.output_per_mtok", Type: "number", Default: "none", Doc: "dollars per million output tokens"},
	{Key: "token_rates.*.cache_read_per_mtok", Type: "number", Default: "none", Doc: "dollars per million cache-read tokens"},

	{Key: "workflows.dir", Type: "path, $VAR allowed", Default: "none (no workflow tools)", Doc: "the workflow library directory",
		read: (*builder).readWorkflowsDir},
	{Key: "workflows.workflow", Type: "string", Default: "none", Doc: "the workflow the first-turn prompt names",
		read: func(b *builder, c *Config, sec, _ map[string]any) {
			if s, ok := b.str(sec, "workflows.workflow"); ok && s != "" {
				c.Workflows.Workflow = s
				if c.Workflows.Dir == "" && !b.failed("workflows.dir") {
					b.errorf("workflows.workflow", "needs workflows.dir: the workflow %q must come from a library", s)
				}
			}
		}},
	{Key: "workflows.answerers", Type: "list of strings", Default: "none", Doc: "who may answer checkpoints",
		read: func(b *builder, c *Config, sec, _ map[string]any) {
			c.Workflows.Answerers = b.stringList(sec, "workflows.answerers")
		}},

	burst("notify_operator.rate_limit.per_issue.burst", DefaultNotifyPerIssue.Burst, "messages one issue may send at once",
		func(c *Config) *TokenBucket { return &c.NotifyOperator.RateLimit.PerIssue }),
	every("notify_operator.rate_limit.per_issue.every_ms", DefaultNotifyPerIssue.Every, "time for one more message of an issue",
		func(c *Config) *TokenBucket { return &c.NotifyOperator.RateLimit.PerIssue }),
	burst("notify_operator.rate_limit.global.burst", DefaultNotifyGlobal.Burst, "messages all issues may send at once",
		func(c *Config) *TokenBucket { return &c.NotifyOperator.RateLimit.Global }),
	every("notify_operator.rate_limit.global.every_ms", DefaultNotifyGlobal.Every, "time for one more message of all issues",
		func(c *Config) *TokenBucket { return &c.NotifyOperator.RateLimit.Global }),

	{Key: "database_url", Type: "string, $VAR allowed", Default: "none: SQLite at db_path", Doc: "the PostgreSQL store daemons share",
		read: (*builder).readDatabaseURL},
	{Key: "cluster.lease_ms", Type: "duration", Default: ms(DefaultClusterLease), Zero: zeroRefused,
		Doc: fmt.Sprintf("how long a daemon's claims last unrenewed; %d to %d", minClusterLeaseMS, maxClusterLeaseMS),
		read: func(b *builder, c *Config, sec, _ map[string]any) {
			c.Cluster.Lease = DefaultClusterLease
			if v, ok := b.value(sec, "cluster.lease_ms"); ok {
				if n, ok := b.integer("cluster.lease_ms", v); ok {
					if n < minClusterLeaseMS || n > maxClusterLeaseMS {
						b.invalid("cluster.lease_ms", fmt.Sprintf("must be between %d (1 s) and %d (10 min) milliseconds", minClusterLeaseMS, maxClusterLeaseMS), v)
					} else {
						c.Cluster.Lease = time.Duration(n) * time.Millisecond
					}
				}
			}
		}},
	count("cluster.max_concurrent_agents", 0, zeroUnlimited, "agents of all daemons together",
		func(c *Config) *int { return &c.Cluster.MaxConcurrentAgents }),

	oneOf("prompt.engine", "", "must be go or liquid; remove it to detect the dialect from the template", "the template dialect",
		map[string]string{"go": "go", "liquid": "liquid"}, func(c *Config) *string { return &c.PromptEngine }),
}, reactionSettings, selfReviewSettings)

// ms writes a duration as its *_ms key's value.
func ms(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

// ref is a string whose value, when it starts with `$`, names an environment variable.
func ref(key, def, doc string, dst func(*Config) *string) setting {
	return setting{Key: key, Type: "string, $-ref", Default: def, Doc: doc,
		read: func(b *builder, c *Config, sec, _ map[string]any) { *dst(c) = b.ref(sec, key) }}
}

// list is a list of strings, trimmed, empty items dropped.
func list(key, def, doc string, dst func(*Config) *[]string) setting {
	return setting{Key: key, Type: "list of strings", Default: def, Doc: doc,
		read: func(b *builder, c *Config, sec, _ map[string]any) { *dst(c) = b.stringList(sec, key) }}
}

// flag is true or false, false when absent.
func flag(key, doc string, dst func(*Config) *bool) setting {
	return setting{Key: key, Type: "bool", Default: "false", Doc: doc,
		read: func(b *builder, c *Config, sec, _ map[string]any) { *dst(c) = b.boolean(sec, key) }}
}

// millis is an *_ms duration.
func millis(key string, def time.Duration, zero zeroRule, doc string, dst func(*Config) *time.Duration) setting {
	return setting{Key: key, Type: "duration", Default: ms(def), Zero: zero, Doc: doc,
		read: func(b *builder, c *Config, sec, _ map[string]any) { *dst(c) = b.millis(sec, key, def, zero) }}
}

// count is a non-negative integer up to math.MaxInt32.
func count(key string, def int, zero zeroRule, doc string, dst func(*Config) *int) setting {
	return setting{Key: key, Type: "integer", Default: strconv.Itoa(def), Zero: zero, Doc: doc,
		read: func(b *builder, c *Config, sec, _ map[string]any) { *dst(c) = int(b.count(sec, key, int64(def), zero)) }}
}

// script is a hook's shell script, kept as written.
func script(key, doc string, dst func(*Config) *string) setting {
	return setting{Key: key, Type: "string", Doc: doc,
		read: func(b *builder, c *Config, sec, _ map[string]any) {
			v, ok := b.value(sec, key)
			if !ok {
				return
			}
			s, isStr := v.(string)
			if !isStr {
				b.invalid(key, "must be a shell script string", v)
			}
			*dst(c) = s
		}}
}

// pathList is a list of paths, each $VAR and ~ expanded and made absolute.
func pathList(key, doc string, dst func(*Config) *[]string) setting {
	return setting{Key: key, Type: "list of paths", Default: "[]", Doc: doc,
		read: func(b *builder, c *Config, sec, _ map[string]any) {
			for i, p := range b.stringList(sec, key) {
				if abs, ok := b.resolvePath(fmt.Sprintf("%s[%d]", key, i), p); ok {
					*dst(c) = append(*dst(c), abs)
				}
			}
		}}
}

// oneOf is a word, case-insensitive, that valid maps to the value stored; wrong is the
// error for any other word. Empty or absent keeps def.
func oneOf(key, def, wrong, doc string, valid map[string]string, dst func(*Config) *string) setting {
	d := def
	if d == "" {
		d = "detected"
	}
	return setting{Key: key, Type: "string", Default: d, Doc: doc,
		read: func(b *builder, c *Config, sec, _ map[string]any) {
			*dst(c) = def
			if s, ok := b.str(sec, key); ok && s != "" {
				if v, ok := valid[strings.ToLower(s)]; ok {
					*dst(c) = v
				} else {
					b.invalid(key, wrong, strings.ToLower(s))
				}
			}
		}}
}

// burst is the burst of a notify_operator token bucket.
func burst(key string, def int, doc string, dst func(*Config) *TokenBucket) setting {
	return setting{Key: key, Type: "integer", Default: strconv.Itoa(def), Zero: zeroRefused, Doc: doc,
		read: func(b *builder, c *Config, sec, _ map[string]any) {
			dst(c).Burst = def
			if n, ok := b.bounded(sec, key, 1, maxNotifyBurst, fmt.Sprintf("must be between 1 and %d messages", maxNotifyBurst)); ok {
				dst(c).Burst = int(n)
			}
		}}
}

// every is the refill time of a notify_operator token bucket.
func every(key string, def time.Duration, doc string, dst func(*Config) *TokenBucket) setting {
	return setting{Key: key, Type: "duration", Default: ms(def), Zero: zeroRefused, Doc: doc,
		read: func(b *builder, c *Config, sec, _ map[string]any) {
			dst(c).Every = def
			wrong := fmt.Sprintf("must be between %d (1 s) and %d (24 h) milliseconds", minNotifyEveryMS, maxNotifyEveryMS)
			if n, ok := b.bounded(sec, key, minNotifyEveryMS, maxNotifyEveryMS, wrong); ok {
				dst(c).Every = time.Duration(n) * time.Millisecond
			}
		}}
}

// bounded reads an integer from lo to hi; ok is false when absent or refused.
func (b *builder) bounded(sec map[string]any, field string, lo, hi int64, wrong string) (int64, bool) {
	v, ok := b.value(sec, field)
	if !ok {
		return 0, false
	}
	n, ok := b.integer(field, v)
	if ok && (n < lo || n > hi) {
		b.invalid(field, wrong, v)
		return 0, false
	}
	return n, ok
}

// knownKeys returns the keys the map at path may hold (a section, or a map in one such
// as agent.sandbox), in table order: the next segment of every setting under it.
func knownKeys(path string) []string {
	var keys []string
	for _, s := range settings {
		rest, ok := strings.CutPrefix(s.Key, path+".")
		if !ok {
			continue
		}
		k, _, _ := strings.Cut(rest, ".")
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	return keys
}

// typedKeys are the top-level keys with typed fields in Config, in the order problems
// are reported: the sections'. Every other top-level key is kept in Config.Extensions.
// (Set by init: the readers of the sections refer to it.)
var typedKeys []string

func init() {
	for _, s := range sections {
		typedKeys = append(typedKeys, s.name)
	}
}

// readSection reads the settings of sec from raw. maps holds the maps read so far by
// path, so that each map's unknown keys are reported once, when its first setting is
// read.
func (b *builder) readSection(cfg *Config, sec section, raw map[string]any) {
	if sec.read != nil {
		sec.read(b, cfg, raw)
		return
	}
	maps := map[string]map[string]any{"": raw}
	var exempt []string
	if sec.exempt != nil {
		exempt = sec.exempt()
	}
	var mapAt func(path string) map[string]any
	mapAt = func(path string) map[string]any {
		if m, ok := maps[path]; ok {
			return m
		}
		parent, key := "", path
		if i := strings.LastIndexByte(path, '.'); i >= 0 {
			parent, key = path[:i], path[i+1:]
		}
		var m map[string]any
		if parent == "" {
			m = b.section(raw, key, knownKeys(key), exempt...)
		} else {
			m = b.subMap(mapAt(parent), key, path, knownKeys(path))
		}
		maps[path] = m
		return m
	}
	for _, s := range settings {
		top, _, _ := strings.Cut(s.Key, ".")
		if top != sec.name || s.read == nil {
			continue
		}
		in := raw
		if i := strings.LastIndexByte(s.Key, '.'); i >= 0 {
			in = mapAt(s.Key[:i])
		}
		s.read(b, cfg, in, raw)
	}
	if sec.check != nil {
		sec.check(b, cfg, mapAt(sec.name))
	}
}

// The readers of settings too long to read in the table.

func (b *builder) readAgentKind(c *Config, sec, raw map[string]any) {
	a := &c.Agent
	a.Kind, _ = b.str(sec, "agent.kind")
	if a.Kind == "" && !b.failed("agent.kind") {
		a.Kind = DefaultAgentKind
		// A Symphony WORKFLOW.md has no agent.kind: its `codex:` block says the agent.
		if _, ok := raw["codex"]; ok {
			a.Kind = "codex"
		}
	}
}

func (b *builder) readMaxTurns(c *Config, sec, _ map[string]any) {
	c.Agent.MaxTurns = DefaultMaxTurns
	v, ok := b.value(sec, "agent.max_turns")
	if !ok {
		return
	}
	if n, ok := b.integer("agent.max_turns", v); ok {
		switch {
		case n < 1:
			// Sortie 1.9 clamps this at run time; keep loading such files but say so.
			b.warnf(CheckTypeMismatch, "agent.max_turns", "must be at least 1; using 1 (got %s)", gotValue(v))
			c.Agent.MaxTurns = 1
		case n > math.MaxInt32:
			b.invalid("agent.max_turns", "is too large", v)
		default:
			c.Agent.MaxTurns = int(n)
		}
	}
}

func (b *builder) readByState(c *Config, sec, _ map[string]any) {
	const byState = "agent.max_concurrent_agents_by_state"
	c.Agent.MaxConcurrentAgentsByState = map[string]int{}
	v, ok := b.value(sec, byState)
	if !ok {
		return
	}
	m, isMap := v.(map[string]any)
	if !isMap {
		b.invalid(byState, "must be a map of state to limit", v)
		return
	}
	for _, k := range sortedKeys(m) {
		field := byState + "." + k
		n, reason := option.IntValue(m[k])
		state := strings.ToLower(strings.TrimSpace(k))
		switch {
		case state == "":
			b.warnf(CheckTypeMismatch, field, "empty state name; entry ignored")
		case reason != "" || n <= 0 || n > math.MaxInt32:
			b.warnf(CheckTypeMismatch, field, "must be a positive integer; entry ignored (got %s)", gotValue(m[k]))
		default:
			c.Agent.MaxConcurrentAgentsByState[state] = int(n)
		}
	}
}

// readHookTimeout: a bad hook timeout falls back to the default instead of failing the
// whole file.
func (b *builder) readHookTimeout(c *Config, sec, _ map[string]any) {
	const field = "hooks.timeout_ms"
	c.Hooks.Timeout = DefaultHookTimeout
	v, ok := b.value(sec, field)
	if !ok {
		return
	}
	n, reason := option.IntValue(v)
	def := DefaultHookTimeout.Milliseconds()
	switch {
	case reason != "":
		b.warnf(CheckTypeMismatch, field, "%s; using the default %d (got %s)", reason, def, gotValue(v))
	case n <= 0:
		b.warnf(CheckTypeMismatch, field, "must be positive; using the default %d (got %s)", def, gotValue(v))
	case n > maxMillis:
		b.warnf(CheckTypeMismatch, field, "is too large; using the default %d (got %s)", def, gotValue(v))
	default:
		c.Hooks.Timeout = time.Duration(n) * time.Millisecond
	}
}

func (b *builder) readWorkspaceRoot(c *Config, sec, _ map[string]any) {
	const field = "workspace.root"
	tmp, _ := b.env("TMPDIR")
	if tmp == "" {
		tmp = os.TempDir()
	}
	def := filepath.Join(tmp, DefaultWorkspaceDirName)
	c.Workspace.Root = def
	s, ok := b.str(sec, field)
	if !ok || s == "" {
		return
	}
	if b.sources[field] == "" {
		out, missing := expandEnv(s, b.env)
		if len(missing) > 0 {
			// The sample WORKFLOW.md files write `root: $SORTIE_WORKSPACE_ROOT` and document
			// the variable as optional, defaulting to the system temp directory. Keep that
			// promise, but say so.
			for _, m := range missing {
				b.warnf(field, field, "environment variable %s is not set; using the default %s", m.Name, def)
			}
			return
		}
		s = strings.TrimSpace(out)
		if s == "" {
			return
		}
	}
	if root, ok := b.absPath(field, s); ok {
		c.Workspace.Root = root
	}
}

func (b *builder) readDBPath(c *Config, _, raw map[string]any) {
	const field = "db_path"
	c.DBPath = filepath.Join(b.dir, DefaultDBName)
	if s, ok := b.str(raw, field); ok && s != "" {
		if p, ok := b.resolvePath(field, s); ok {
			c.DBPath = p
		}
	}
}

// readWorkflowsDir reads workflows.dir. The directory must exist when the file is
// loaded: a library that is missing at start-up would silently leave the agents
// without their workflow tools.
func (b *builder) readWorkflowsDir(c *Config, sec, _ map[string]any) {
	s, ok := b.str(sec, "workflows.dir")
	switch {
	case !ok:
		return
	case s == "":
		b.errorf("workflows.dir", "is empty; set it to the workflow library directory or remove the workflows section")
		return
	}
	p, ok := b.resolvePath("workflows.dir", s)
	if !ok {
		return
	}
	switch fi, err := os.Stat(p); {
	case err != nil && os.IsNotExist(err):
		b.errorf("workflows.dir", "%s does not exist; create the workflow library there or fix the path (relative paths are resolved against %s)", p, b.dir)
	case err != nil:
		b.errorf("workflows.dir", "%v", err)
	case !fi.IsDir():
		b.errorf("workflows.dir", "%s is not a directory; set it to the workflow library directory", p)
	default:
		c.Workflows.Dir = p
	}
}

// readTokenRates reads token_rates: a map of agent kind to the rates of
// token_rates.*. Rates only feed the dashboard's cost estimate, so bad entries are
// warnings.
func (b *builder) readTokenRates(cfg *Config, raw map[string]any) {
	cfg.TokenRates = map[string]TokenRate{}
	v, ok := raw["token_rates"]
	if !ok || v == nil {
		return
	}
	m, isMap := v.(map[string]any)
	if !isMap {
		b.warnf(CheckTypeMismatch, "token_rates", "must be a map of agent kind to rates; ignored (got %s)", gotValue(v))
		return
	}
	known := knownKeys("token_rates.*")
	for _, kind := range sortedKeys(m) {
		field := "token_rates." + kind
		entry, isMap := m[kind].(map[string]any)
		if !isMap {
			b.warnf(CheckTypeMismatch, field, "must be a map of rates; entry ignored (got %s)", gotValue(m[kind]))
			continue
		}
		var rate TokenRate
		good := true
		for _, k := range sortedKeys(entry) {
			var dst *float64
			switch k {
			case "input_per_mtok":
				dst = &rate.InputPerMTok
			case "output_per_mtok":
				dst = &rate.OutputPerMTok
			case "cache_read_per_mtok":
				dst = &rate.CacheReadPerMTok
			default:
				b.warnf(CheckUnknownSubKey, field+"."+k, "unknown key in %s; it is ignored (known: %s)", field, strings.Join(known, ", "))
				continue
			}
			f, ok := option.NumberValue(entry[k])
			if !ok || f < 0 {
				b.warnf(CheckTypeMismatch, field+"."+k, "must be a non-negative number; %s ignored (got %s)", field, gotValue(entry[k]))
				good = false
				continue
			}
			*dst = f
		}
		if good {
			cfg.TokenRates[kind] = rate
		}
	}
}

// readPublicURL reads server.public_url: an absolute http or https URL with a host and
// no query or fragment, kept without its trailing slash so paths join onto it.
func (b *builder) readPublicURL(c *Config, sec, _ map[string]any) {
	v, ok := b.value(sec, "server.public_url")
	if !ok {
		return
	}
	s, isStr := v.(string)
	s = strings.TrimSpace(s)
	if !isStr {
		b.invalid("server.public_url", "must be a URL such as https://sortie.example.com", v)
		return
	}
	if s == "" {
		return
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		b.invalid("server.public_url", "must be an absolute http or https URL with a host and no user, query or fragment, such as https://sortie.example.com", v)
		return
	}
	c.Server.PublicURL = strings.TrimRight(s, "/")
}
