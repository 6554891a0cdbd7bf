package config

import (
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"sortie/internal/agent"
)

// typedKeys are the top-level keys with typed fields in Config. Every other top-level key
// is kept in Config.Extensions.
var typedKeys = []string{"tracker", "polling", "workspace", "hooks", "agent", "db_path", "server", "logging", "worker", "token_rates", "workflows", "notify_operator", "database_url", "cluster", "prompt"}

// knownExtensionKeys are untyped top-level keys that other parts of Sortie read, so they
// draw no unknown_key warning. Adapter blocks named after a kind are known too.
var knownExtensionKeys = []string{"notifications"}

// unsupportedKeys are the reference daemon's blocks for features Sortie does not have
// yet: kept, so its files load, but each draws a not_supported warning, since an
// operator migrating would otherwise believe them in force.
var unsupportedKeys = map[string]string{
	"reactions":   "CI and review reactions after the hand-off",
	"self_review": "the agent's review of its own work before the hand-off",
	"ci_feedback": "CI failures sent back to the agent",
}

// Known sub-keys per section; anything else draws an unknown_sub_key warning.
var (
	trackerKeys   = []string{"kind", "endpoint", "api_key", "project", "project_slug", "team_key", "active_states", "terminal_states", "required_labels", "blocked_states", "assignee", "provider", "query_filter", "handoff_state", "in_progress_state", "comments", "path"}
	commentsKeys  = []string{"on_dispatch", "on_completion", "on_failure"}
	pollingKeys   = []string{"interval_ms"}
	workspaceKeys = []string{"root"}
	hooksKeys     = []string{"after_create", "before_run", "after_run", "before_remove", "timeout_ms", "sandbox"}
	agentKeys     = []string{"kind", "command", "turn_timeout_ms", "read_timeout_ms", "stall_timeout_ms", "max_concurrent_agents", "max_turns", "max_retry_backoff_ms", "max_concurrent_agents_by_state", "max_sessions", "max_tokens", "max_cost_usd", "max_retries", "sandbox", "run_as", "keep_processes", "budget_warn_ratio", "tracker_reads", "env"}
	sandboxKeys   = []string{"mode", "read_paths", "write_paths"}
	serverKeys    = []string{"host", "port", "auth_token"}
	loggingKeys   = []string{"level", "format"}
	workerKeys    = []string{"ssh_hosts", "max_concurrent_agents_per_host", "ssh_strict_host_key_checking"}
	tokenRateKeys = []string{"input_per_mtok", "output_per_mtok", "cache_read_per_mtok"}
	workflowsKeys = []string{"dir", "workflow", "answerers"}
	promptKeys    = []string{"engine"}
)

// builder turns the decoded front matter (after environment overrides) into a Config,
// collecting every problem instead of stopping at the first.
type builder struct {
	dir string
	// env resolves $VAR references, HOME and TMPDIR. It never reads the process
	// environment directly, so tests can inject one.
	env func(string) (string, bool)
	// sources maps a dotted field to the SORTIE_* variable that supplied its value.
	// Such values are not $-expanded, and problems with them name the variable.
	sources  map[string]string
	problems []Problem
	// secrets are environment variables the configuration reads as credentials by
	// default (LINEAR_API_KEY), beyond the $VAR references secretEnv finds.
	secrets []string
}

func (b *builder) add(severity, check, field, msg string) {
	if src := b.sources[field]; src != "" {
		msg += " (from " + src + ")"
	}
	b.problems = append(b.problems, Problem{Severity: severity, Check: check, Field: field, Message: msg})
}

// errorf records an error about field.
func (b *builder) errorf(field, format string, a ...any) {
	b.add(SeverityError, field, field, fmt.Sprintf(format, a...))
}

// invalid records an error about field ending in `(got <v>)`. The value of a secret field
// is never shown, only its type.
func (b *builder) invalid(field, msg string, v any) {
	got := gotValue(v)
	if isSecretField(field) {
		got = gotType(v)
	}
	b.add(SeverityError, field, field, msg+" (got "+got+")")
}

// warnf records a warning about field.
func (b *builder) warnf(check, field, format string, a ...any) {
	b.add(SeverityWarning, check, field, fmt.Sprintf(format, a...))
}

// failed reports whether an error about field has been recorded already, so a later rule
// does not report the same field twice.
func (b *builder) failed(field string) bool {
	return slices.ContainsFunc(b.problems, func(p Problem) bool { return p.IsError() && p.Field == field })
}

func isSecretField(field string) bool {
	return field == "tracker.api_key" || field == "tracker.provider.api_key"
}

// leaf returns the last segment of a dotted field path: the key inside its section.
func leaf(field string) string { return field[strings.LastIndexByte(field, '.')+1:] }

// value returns sec[leaf(field)], treating null like an absent key.
func (b *builder) value(sec map[string]any, field string) (any, bool) {
	v, ok := sec[leaf(field)]
	return v, ok && v != nil
}

// section returns the map under a top-level key, nil when absent, null or not a map
// (which is an error).
func (b *builder) section(raw map[string]any, name string, known []string, exempt ...string) map[string]any {
	return b.subMap(raw, name, name, known, exempt...)
}

func (b *builder) subMap(parent map[string]any, key, field string, known []string, exempt ...string) map[string]any {
	v, ok := parent[key]
	if !ok || v == nil {
		return nil
	}
	m, isMap := v.(map[string]any)
	if !isMap {
		b.invalid(field, "must be a map", v)
		return nil
	}
	for _, k := range sortedKeys(m) {
		if !slices.Contains(known, k) && !slices.Contains(exempt, k) {
			b.warnf(CheckUnknownSubKey, field+"."+k, "unknown key in %s; it is ignored (known: %s)", field, strings.Join(known, ", "))
		}
	}
	return m
}

// str returns a string field, trimmed. ok is false when absent or not a string (an error).
func (b *builder) str(sec map[string]any, field string) (string, bool) {
	v, ok := b.value(sec, field)
	if !ok {
		return "", false
	}
	s, err := agent.OptionString(v)
	if err != nil {
		b.invalid(field, "must be a string", v)
		return "", false
	}
	return s, true
}

// reportMissing records an error for each $VAR that did not resolve.
func (b *builder) reportMissing(field string, missing []envRef) {
	for _, m := range missing {
		if m.Empty {
			b.errorf(field, "environment variable %s is empty", m.Name)
		} else {
			b.errorf(field, "environment variable %s is not set", m.Name)
		}
	}
}

// ref returns a string field whose value, when it starts with `$`, is an environment
// reference ($VAR or ${VAR}) to resolve. Values from SORTIE_* overrides are taken as is.
func (b *builder) ref(sec map[string]any, field string) string {
	s, ok := b.str(sec, field)
	if !ok || b.sources[field] != "" || !strings.HasPrefix(s, "$") {
		return s
	}
	out, missing := expandEnv(s, b.env)
	b.reportMissing(field, missing)
	return strings.TrimSpace(out)
}

// resolvePath expands $VAR references anywhere in p (unless it came from an override),
// then a leading ~, and makes it absolute against the WORKFLOW.md directory.
func (b *builder) resolvePath(field, p string) (string, bool) {
	if b.sources[field] == "" {
		var missing []envRef
		p, missing = expandEnv(p, b.env)
		if len(missing) > 0 {
			b.reportMissing(field, missing)
			return "", false
		}
		p = strings.TrimSpace(p)
	}
	return b.absPath(field, p)
}

// absPath expands a leading ~ and makes p absolute against the WORKFLOW.md directory.
func (b *builder) absPath(field, p string) (string, bool) {
	if p == "" {
		b.errorf(field, "resolves to an empty path")
		return "", false
	}
	if p == "~" || strings.HasPrefix(p, "~/") {
		home, _ := b.env("HOME")
		if home == "" {
			b.errorf(field, "cannot expand ~: HOME is not set")
			return "", false
		}
		p, _ = expandHome(p, home)
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(b.dir, p)
	}
	return filepath.Clean(p), true
}

// integer converts v, recording an error on failure.
func (b *builder) integer(field string, v any) (int64, bool) {
	n, reason := IntValue(v)
	if reason != "" {
		b.invalid(field, reason, v)
		return 0, false
	}
	return n, true
}

// zeroRule says what an explicit 0 means for a duration or count.
type zeroRule int

const (
	zeroIsDefault zeroRule = iota // 0 (or absent) takes the default; negative is an error
	zeroDisables                  // 0 or negative is kept as 0, meaning "off"
)

// millis reads an `*_ms` field as a duration.
func (b *builder) millis(sec map[string]any, field string, def time.Duration, rule zeroRule) time.Duration {
	v, ok := b.value(sec, field)
	if !ok {
		return def
	}
	n, ok := b.integer(field, v)
	switch {
	case !ok:
		return def
	case n <= 0 && rule == zeroDisables:
		return 0
	case n < 0:
		b.invalid(field, "must be non-negative", v)
		return def
	case n == 0:
		return def
	case n > maxMillis:
		b.invalid(field, "is too large", v)
		return def
	}
	return time.Duration(n) * time.Millisecond
}

// count reads a non-negative integer field. With zeroIsDefault, 0 takes def.
func (b *builder) count(sec map[string]any, field string, def int64, zeroIsDef bool) int64 {
	v, ok := b.value(sec, field)
	if !ok {
		return def
	}
	n, ok := b.integer(field, v)
	switch {
	case !ok:
		return def
	case n < 0:
		b.invalid(field, "must be non-negative", v)
		return def
	case n == 0 && zeroIsDef:
		return def
	case n > math.MaxInt32:
		b.invalid(field, "is too large", v)
		return def
	}
	return n
}

// stringList reads a list of strings; items are trimmed and empty items dropped.
func (b *builder) stringList(sec map[string]any, field string) []string {
	v, ok := b.value(sec, field)
	if !ok {
		return nil
	}
	list, isList := v.([]any)
	if !isList {
		b.invalid(field, "must be a list of strings", v)
		return nil
	}
	out := make([]string, 0, len(list))
	for i, e := range list {
		item := fmt.Sprintf("%s[%d]", field, i)
		s, isStr := e.(string)
		if !isStr {
			b.invalid(item, "must be a string", e)
			continue
		}
		if s = strings.TrimSpace(s); s == "" {
			b.warnf(CheckTypeMismatch, item, "empty entry ignored")
			continue
		}
		out = append(out, s)
	}
	return out
}

// boolean reads a true/false field.
func (b *builder) boolean(sec map[string]any, field string) bool {
	v, ok := b.value(sec, field)
	if !ok {
		return false
	}
	t, err := agent.OptionBool(v)
	if err != nil {
		b.invalid(field, "must be true or false", v)
	}
	return t
}

// isAgentKind reports whether kind is a registered agent adapter's (agent.Register).
func isAgentKind(kind string) bool {
	_, ok := agent.Lookup(kind)
	return ok
}

// build assembles a Config from raw. Path, Dir, Prompt and SecretEnv are filled by Load.
func (b *builder) build(raw map[string]any) *Config {
	cfg := &Config{Extensions: map[string]any{}}
	b.buildTracker(cfg, raw)
	polling := b.section(raw, "polling", pollingKeys)
	cfg.Polling.Interval = b.millis(polling, "polling.interval_ms", DefaultPollingInterval, zeroIsDefault)
	b.buildWorkspace(cfg, raw)
	b.buildHooks(cfg, raw)
	b.buildAgent(cfg, raw)
	b.buildDBPath(cfg, raw)
	b.buildServer(cfg, raw)
	b.buildLogging(cfg, raw)
	b.buildWorker(cfg, raw)
	b.buildTokenRates(cfg, raw)
	b.buildWorkflows(cfg, raw)
	b.buildNotifyOperator(cfg, raw)
	b.buildCluster(cfg, raw)
	b.buildPrompt(cfg, raw)
	b.buildCodex(cfg, raw)

	for _, k := range sortedKeys(raw) {
		if slices.Contains(typedKeys, k) {
			continue
		}
		cfg.Extensions[k] = raw[k]
		known := slices.Contains(knownExtensionKeys, k) || slices.Contains(trackerKinds, k) ||
			isAgentKind(k) || k == cfg.Tracker.Kind || k == cfg.Agent.Kind
		if what, ok := unsupportedKeys[k]; ok {
			b.warnf(CheckNotSupported, k, "is not supported yet: nothing reads it, so %s does not happen; it is kept so the file loads", what)
			continue
		}
		if !known {
			b.warnf(CheckUnknownKey, k, "unknown top-level key; kept as an extension block but nothing reads it")
		}
	}
	b.validate(cfg)
	// Cross-field rules run last; order problems by section so each section's problems
	// read together, in the order the schema lists the sections.
	slices.SortStableFunc(b.problems, func(x, y Problem) int { return sectionRank(x.Field) - sectionRank(y.Field) })
	return cfg
}

// sectionRank orders problems: whole-file ones first, then the typed sections in schema
// order, then extensions.
func sectionRank(field string) int {
	if field == "" {
		return -1
	}
	top, _, _ := strings.Cut(field, ".")
	top, _, _ = strings.Cut(top, "[")
	if i := slices.Index(typedKeys, top); i >= 0 {
		return i
	}
	return len(typedKeys)
}

func (b *builder) buildTracker(cfg *Config, raw map[string]any) {
	t := &cfg.Tracker
	// A `tracker.<kind>:` sub-object is adapter configuration, not a typo.
	sec := b.section(raw, "tracker", trackerKeys, trackerKinds...)
	t.Kind, _ = b.str(sec, "tracker.kind")
	t.Endpoint = b.ref(sec, "tracker.endpoint")
	t.APIKey = b.apiKey(sec)
	t.Project = b.ref(sec, "tracker.project")
	t.RequiredLabels = b.requiredLabels(sec)
	t.BlockedStates = b.blockedStates(raw, sec)
	if v, ok := b.value(sec, "tracker.provider"); ok {
		if m, isMap := v.(map[string]any); isMap {
			t.Provider = m
		} else {
			b.invalid("tracker.provider", "must be a map (the tracker adapter's own settings)", v)
		}
	}
	t.QueryFilter = b.ref(sec, "tracker.query_filter")
	t.ActiveStates = b.stringList(sec, "tracker.active_states")
	t.TerminalStates = b.stringList(sec, "tracker.terminal_states")
	b.buildLinear(t, sec)
	t.HandoffState = b.optionalState(sec, "tracker.handoff_state")
	t.InProgressState = b.optionalState(sec, "tracker.in_progress_state")
	if p, ok := b.str(sec, "tracker.path"); ok {
		t.Path, _ = b.resolvePath("tracker.path", p)
	} else if p := fileBlockPath(raw); p != "" {
		// `file.path` is the adapter block's own key; honour it with the same rules as
		// tracker.path except $VAR expansion, which pass-through blocks never get.
		t.Path, _ = b.absPath("file.path", p)
	}
	if c := b.subMap(sec, "comments", "tracker.comments", commentsKeys); c != nil {
		t.Comments.OnDispatch = b.boolean(c, "tracker.comments.on_dispatch")
		t.Comments.OnCompletion = b.boolean(c, "tracker.comments.on_completion")
		t.Comments.OnFailure = b.boolean(c, "tracker.comments.on_failure")
	}
}

// fileBlockPath returns the trimmed `file.path` string, or "".
func fileBlockPath(raw map[string]any) string {
	block, _ := raw["file"].(map[string]any)
	p, _ := block["path"].(string)
	return strings.TrimSpace(p)
}

// apiKey reads tracker.api_key, expanding $VAR references anywhere in it.
func (b *builder) apiKey(sec map[string]any) string {
	return b.expandedKey(sec, "tracker.api_key")
}

// expandedKey reads a credential at field, expanding $VAR references anywhere in it.
func (b *builder) expandedKey(sec map[string]any, field string) string {
	s, ok := b.str(sec, field)
	if !ok || b.sources[field] != "" {
		return s
	}
	out, missing := expandEnv(s, b.env)
	b.reportMissing(field, missing)
	return strings.TrimSpace(out)
}

// optionalState reads handoff_state or in_progress_state: absent means "not used", but
// a present value must be a non-empty string after $VAR resolution.
func (b *builder) optionalState(sec map[string]any, field string) string {
	if _, ok := b.value(sec, field); !ok {
		return ""
	}
	s := b.ref(sec, field)
	if s == "" && !b.failed(field) {
		b.errorf(field, "must not be empty; remove the key to turn it off")
	}
	return s
}

func (b *builder) buildWorkspace(cfg *Config, raw map[string]any) {
	const field = "workspace.root"
	tmp, _ := b.env("TMPDIR")
	if tmp == "" {
		tmp = os.TempDir()
	}
	def := filepath.Join(tmp, DefaultWorkspaceDirName)
	cfg.Workspace.Root = def
	sec := b.section(raw, "workspace", workspaceKeys)
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
		cfg.Workspace.Root = root
	}
}

func (b *builder) buildHooks(cfg *Config, raw map[string]any) {
	h := &cfg.Hooks
	sec := b.section(raw, "hooks", hooksKeys)
	script := func(field string) string {
		v, ok := b.value(sec, field)
		if !ok {
			return ""
		}
		s, isStr := v.(string)
		if !isStr {
			b.invalid(field, "must be a shell script string", v)
		}
		return s
	}
	h.AfterCreate = script("hooks.after_create")
	h.BeforeRun = script("hooks.before_run")
	h.AfterRun = script("hooks.after_run")
	h.BeforeRemove = script("hooks.before_remove")
	b.buildHookSandbox(&h.Sandbox, sec)

	// A bad hook timeout falls back to the default instead of failing the whole file.
	h.Timeout = DefaultHookTimeout
	const field = "hooks.timeout_ms"
	if v, ok := b.value(sec, field); ok {
		n, reason := IntValue(v)
		switch {
		case reason != "":
			b.warnf(CheckTypeMismatch, field, "%s; using the default %d (got %s)", reason, DefaultHookTimeout.Milliseconds(), gotValue(v))
		case n <= 0:
			b.warnf(CheckTypeMismatch, field, "must be positive; using the default %d (got %s)", DefaultHookTimeout.Milliseconds(), gotValue(v))
		case n > maxMillis:
			b.warnf(CheckTypeMismatch, field, "is too large; using the default %d (got %s)", DefaultHookTimeout.Milliseconds(), gotValue(v))
		default:
			h.Timeout = time.Duration(n) * time.Millisecond
		}
	}
}

func (b *builder) buildAgent(cfg *Config, raw map[string]any) {
	a := &cfg.Agent
	sec := b.section(raw, "agent", agentKeys, agent.Kinds()...)
	a.Kind, _ = b.str(sec, "agent.kind")
	if a.Kind == "" && !b.failed("agent.kind") {
		a.Kind = DefaultAgentKind
		// A Symphony WORKFLOW.md has no agent.kind: its `codex:` block says the agent.
		if _, ok := raw["codex"]; ok {
			a.Kind = "codex"
		}
	}
	a.Command, _ = b.str(sec, "agent.command")
	b.buildSandbox(&a.Sandbox, sec)
	b.buildAgentEnv(a, sec, raw)
	a.RunAs, _ = b.str(sec, "agent.run_as")
	a.RunAs = strings.TrimSpace(a.RunAs)
	a.KeepProcesses = b.boolean(sec, "agent.keep_processes")
	b.buildTrackerReads(a, sec)
	a.BudgetWarnRatio = DefaultBudgetWarnRatio
	if v, ok := b.value(sec, "agent.budget_warn_ratio"); ok {
		switch f, isNum := agent.NumberValue(v); {
		case !isNum || f < 0 || f >= 1:
			b.invalid("agent.budget_warn_ratio", "must be a number from 0 (no warning) to below 1", v)
		default:
			a.BudgetWarnRatio = f
		}
	}
	a.TurnTimeout = b.millis(sec, "agent.turn_timeout_ms", DefaultTurnTimeout, zeroIsDefault)
	a.ReadTimeout = b.millis(sec, "agent.read_timeout_ms", DefaultReadTimeout, zeroIsDefault)
	// Only an absent key takes the default: an explicit 0 turns stall detection off.
	a.StallTimeout = b.millis(sec, "agent.stall_timeout_ms", DefaultStallTimeout, zeroDisables)
	a.MaxRetryBackoff = b.millis(sec, "agent.max_retry_backoff_ms", DefaultMaxRetryBackoff, zeroIsDefault)
	a.MaxConcurrentAgents = int(b.count(sec, "agent.max_concurrent_agents", DefaultMaxConcurrentAgents, true))
	a.MaxSessions = int(b.count(sec, "agent.max_sessions", 0, false))
	a.MaxRetries = int(b.count(sec, "agent.max_retries", DefaultMaxRetries, false))

	a.MaxTurns = DefaultMaxTurns
	if v, ok := b.value(sec, "agent.max_turns"); ok {
		if n, ok := b.integer("agent.max_turns", v); ok {
			switch {
			case n < 1:
				// Sortie 1.9 clamps this at run time; keep loading such files but say so.
				b.warnf(CheckTypeMismatch, "agent.max_turns", "must be at least 1; using 1 (got %s)", gotValue(v))
				a.MaxTurns = 1
			case n > math.MaxInt32:
				b.invalid("agent.max_turns", "is too large", v)
			default:
				a.MaxTurns = int(n)
			}
		}
	}

	if v, ok := b.value(sec, "agent.max_tokens"); ok {
		if n, ok := b.integer("agent.max_tokens", v); ok {
			if n < 0 {
				b.invalid("agent.max_tokens", "must be non-negative", v)
			} else {
				a.MaxTokens = n
			}
		}
	}

	if v, ok := b.value(sec, "agent.max_cost_usd"); ok {
		f, isNum := agent.NumberValue(v)
		switch {
		case !isNum:
			b.invalid("agent.max_cost_usd", "must be an amount in USD", v)
		case f < 0:
			b.invalid("agent.max_cost_usd", "must be non-negative", v)
		default:
			a.MaxCostUSD = f
		}
	}

	a.MaxConcurrentAgentsByState = map[string]int{}
	const byState = "agent.max_concurrent_agents_by_state"
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
		n, reason := IntValue(m[k])
		state := strings.ToLower(strings.TrimSpace(k))
		switch {
		case state == "":
			b.warnf(CheckTypeMismatch, field, "empty state name; entry ignored")
		case reason != "" || n <= 0 || n > math.MaxInt32:
			b.warnf(CheckTypeMismatch, field, "must be a positive integer; entry ignored (got %s)", gotValue(m[k]))
		default:
			a.MaxConcurrentAgentsByState[state] = int(n)
		}
	}
}

func (b *builder) buildDBPath(cfg *Config, raw map[string]any) {
	const field = "db_path"
	cfg.DBPath = filepath.Join(b.dir, DefaultDBName)
	v, ok := raw[field]
	if !ok || v == nil {
		return
	}
	s, isStr := v.(string)
	if !isStr {
		b.invalid(field, "must be a string", v)
		return
	}
	if s = strings.TrimSpace(s); s == "" {
		return
	}
	if p, ok := b.resolvePath(field, s); ok {
		cfg.DBPath = p
	}
}

func (b *builder) buildServer(cfg *Config, raw map[string]any) {
	s := &cfg.Server
	s.Host, s.Port = DefaultServerHost, DefaultServerPort
	sec := b.section(raw, "server", serverKeys)
	if v, ok := b.value(sec, "server.port"); ok {
		if n, ok := b.integer("server.port", v); ok {
			if n < 0 || n > 65535 {
				b.invalid("server.port", "must be between 0 and 65535 (0 turns the server off)", v)
			} else {
				s.Port, s.PortSet = int(n), true
			}
		}
	}
	if host, ok := b.str(sec, "server.host"); ok && host != "" {
		if net.ParseIP(host) == nil {
			b.invalid("server.host", "must be an IP address such as 127.0.0.1 or 0.0.0.0", host)
		} else {
			s.Host = host
		}
	}
	const field = "server.auth_token"
	if tok, ok := b.str(sec, field); ok {
		if b.sources[field] == "" {
			out, missing := expandEnv(tok, b.env)
			b.reportMissing(field, missing)
			tok = out
		}
		s.AuthToken = strings.TrimSpace(tok)
	}
}

func (b *builder) buildLogging(cfg *Config, raw map[string]any) {
	l := &cfg.Logging
	l.Level, l.Format = DefaultLogLevel, DefaultLogFormat
	sec := b.section(raw, "logging", loggingKeys)
	if level, ok := b.str(sec, "logging.level"); ok && level != "" {
		switch level = strings.ToLower(level); level {
		case "debug", "info", "warn", "error":
			l.Level = level
		case "warning":
			l.Level = "warn"
		default:
			b.invalid("logging.level", "must be debug, info, warn or error", level)
		}
	}
	if format, ok := b.str(sec, "logging.format"); ok && format != "" {
		switch format = strings.ToLower(format); format {
		case "text", "json":
			l.Format = format
		default:
			b.invalid("logging.format", "must be text or json", format)
		}
	}
}

func (b *builder) buildWorker(cfg *Config, raw map[string]any) {
	w := &cfg.Worker
	w.SSHStrictHostKeyChecking = DefaultSSHStrictHostKey
	sec := b.section(raw, "worker", workerKeys)
	for _, h := range b.stringList(sec, "worker.ssh_hosts") {
		if !slices.Contains(w.SSHHosts, h) {
			w.SSHHosts = append(w.SSHHosts, h)
		}
	}
	w.MaxConcurrentAgentsPerHost = int(b.count(sec, "worker.max_concurrent_agents_per_host", 0, false))
	const field = "worker.ssh_strict_host_key_checking"
	if v, ok := b.value(sec, field); ok {
		s, _ := v.(string)
		switch s = strings.ToLower(strings.TrimSpace(s)); s {
		case "accept-new", "yes", "no":
			w.SSHStrictHostKeyChecking = s
		default:
			b.warnf(CheckTypeMismatch, field, "must be accept-new, yes or no; using accept-new (got %s)", gotValue(v))
		}
	}
}

func (b *builder) buildTokenRates(cfg *Config, raw map[string]any) {
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
	// Rates only feed the dashboard's cost estimate, so bad entries are warnings.
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
				b.warnf(CheckUnknownSubKey, field+"."+k, "unknown key in %s; it is ignored (known: %s)", field, strings.Join(tokenRateKeys, ", "))
				continue
			}
			f, ok := agent.NumberValue(entry[k])
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

// buildWorkflows reads the `workflows:` section. The directory must exist when the
// file is loaded: a library that is missing at start-up would silently leave the
// agents without their workflow tools.
func (b *builder) buildWorkflows(cfg *Config, raw map[string]any) {
	sec := b.section(raw, "workflows", workflowsKeys)
	w := &cfg.Workflows
	if s, ok := b.str(sec, "workflows.dir"); ok {
		if s == "" {
			b.errorf("workflows.dir", "is empty; set it to the workflow library directory or remove the workflows section")
		} else if p, ok := b.resolvePath("workflows.dir", s); ok {
			switch fi, err := os.Stat(p); {
			case err != nil && os.IsNotExist(err):
				b.errorf("workflows.dir", "%s does not exist; create the workflow library there or fix the path (relative paths are resolved against %s)", p, b.dir)
			case err != nil:
				b.errorf("workflows.dir", "%v", err)
			case !fi.IsDir():
				b.errorf("workflows.dir", "%s is not a directory; set it to the workflow library directory", p)
			default:
				w.Dir = p
			}
		}
	}
	w.Answerers = b.stringList(sec, "workflows.answerers")
	if s, ok := b.str(sec, "workflows.workflow"); ok && s != "" {
		w.Workflow = s
		if w.Dir == "" && !b.failed("workflows.dir") {
			b.errorf("workflows.workflow", "needs workflows.dir: the workflow %q must come from a library", s)
		}
	}
}

// hookSandboxKeys are the keys of hooks.sandbox.
var hookSandboxKeys = []string{"read_paths", "write_paths"}

// buildHookSandbox reads hooks.sandbox: {read_paths, write_paths}, with the path rules
// of agent.sandbox (~, $VAR, relative to the WORKFLOW.md directory).
func (b *builder) buildHookSandbox(sb *HookSandboxConfig, hooksSec map[string]any) {
	sec := b.subMap(hooksSec, "sandbox", "hooks.sandbox", hookSandboxKeys)
	for _, l := range []struct {
		field string
		dst   *[]string
	}{{"hooks.sandbox.read_paths", &sb.ReadPaths}, {"hooks.sandbox.write_paths", &sb.WritePaths}} {
		for i, p := range b.stringList(sec, l.field) {
			if abs, ok := b.resolvePath(fmt.Sprintf("%s[%d]", l.field, i), p); ok {
				*l.dst = append(*l.dst, abs)
			}
		}
	}
}

// buildSandbox reads agent.sandbox: {mode, read_paths, write_paths}. Paths may use ~
// and $VAR and are resolved against the WORKFLOW.md directory.
func (b *builder) buildSandbox(sb *SandboxConfig, agentSec map[string]any) {
	sec := b.subMap(agentSec, "sandbox", "agent.sandbox", sandboxKeys)
	if s, ok := b.str(sec, "agent.sandbox.mode"); ok {
		switch strings.ToLower(s) {
		case SandboxLandlock, SandboxOff:
			sb.Mode = strings.ToLower(s)
		default:
			b.invalid("agent.sandbox.mode", "must be landlock or off", s)
		}
	}
	for _, l := range []struct {
		field string
		dst   *[]string
	}{{"agent.sandbox.read_paths", &sb.ReadPaths}, {"agent.sandbox.write_paths", &sb.WritePaths}} {
		for i, p := range b.stringList(sec, l.field) {
			if abs, ok := b.resolvePath(fmt.Sprintf("%s[%d]", l.field, i), p); ok {
				*l.dst = append(*l.dst, abs)
			}
		}
	}
}
