package config

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"sortie/internal/agent"
	"sortie/internal/tracker"
)

// validate applies the rules that span fields. It runs after every section is built, and
// skips a rule when the field it concerns already has an error.
func (b *builder) validate(cfg *Config) {
	b.validateTrackerKind(cfg)
	b.validateStates(&cfg.Tracker)
	b.validateAgent(&cfg.Agent)
	if cfg.Worker.MaxConcurrentAgentsPerHost > 0 && len(cfg.Worker.SSHHosts) == 0 {
		b.warnf("worker.max_concurrent_agents_per_host", "worker.max_concurrent_agents_per_host",
			"has no effect without worker.ssh_hosts; agents run locally")
	}
}

func (b *builder) validateTrackerKind(cfg *Config) {
	t := &cfg.Tracker
	switch {
	case b.failed("tracker.kind"):
		return
	case t.Kind == "":
		b.errorf("tracker.kind", "is required; set it to one of %s", strings.Join(tracker.Kinds(), ", "))
		return
	case !isTrackerKind(t.Kind):
		b.invalid("tracker.kind", "unknown tracker kind; known kinds: "+strings.Join(tracker.Kinds(), ", "), t.Kind)
		return
	}
	switch t.Kind {
	case "github", "jira":
		what := "the Jira project key"
		if t.Kind == "github" {
			what = "the repository as owner/repo"
		}
		if t.Project == "" && !b.failed("tracker.project") {
			b.errorf("tracker.project", "is required for tracker.kind %s; set it to %s", t.Kind, what)
		}
		if t.APIKey == "" && !b.failed("tracker.api_key") {
			b.errorf("tracker.api_key", "is required for tracker.kind %s; set it, for example to $%s", t.Kind, apiKeyHint[t.Kind])
		}
		if t.Kind == "github" && t.Project != "" && !b.failed("tracker.project") {
			if !isOwnerRepo(t.Project) {
				b.invalid("tracker.project", "must be owner/repo for tracker.kind github", t.Project)
			}
		}
		if t.Kind == "jira" && t.Project != "" && !b.failed("tracker.project") && !jiraKeyRE().MatchString(t.Project) {
			b.invalid("tracker.project", "must be a Jira project key: a letter, then letters, digits or _ (for example PROJ)", t.Project)
		}
	case "linear":
		if t.Project == "" && t.Team == "" && !b.failed("tracker.project_slug") && !b.failed("tracker.provider.project_slug") && !b.failed("tracker.team_key") && !b.failed("tracker.project") {
			b.errorf("tracker.project_slug", "is required for tracker.kind linear (tracker.project_slug or tracker.provider.project_slug), or tracker.team_key; set it to the project's slug (the last part of its Linear URL)")
		}
		if t.APIKey == "" && !b.failed("tracker.api_key") {
			b.errorf("tracker.api_key", "is required for tracker.kind linear; set the environment variable %s, or set tracker.api_key", LinearAPIKeyEnv)
		}
	case "file":
		if cfg.Tracker.Path == "" && !b.failed("tracker.path") && !b.failed("file.path") {
			b.errorf("tracker.path", "is required for tracker.kind file; set tracker.path (or file.path) to the issues JSON file")
		}
	}
}

// jiraKeyRE matches a Jira project key (Jira accepts upper case letters, digits and _,
// starting with a letter; case is not significant in JQL).
var jiraKeyRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*$`) })

// apiKeyHint suggests a variable name for a missing api_key.
var apiKeyHint = map[string]string{"github": "GITHUB_TOKEN", "jira": "SORTIE_JIRA_API_KEY"}

func (b *builder) validateStates(t *TrackerConfig) {
	if len(t.ActiveStates) == 0 && len(t.TerminalStates) == 0 &&
		!b.failed("tracker.active_states") && !b.failed("tracker.terminal_states") {
		b.errorf("tracker", "active_states and terminal_states are both empty; list at least one state")
	}
	has := func(list []string, s string) bool {
		return slices.ContainsFunc(list, func(x string) bool { return strings.EqualFold(x, s) })
	}
	for _, s := range t.ActiveStates {
		if has(t.TerminalStates, s) {
			b.warnf("tracker.states.overlap", "tracker.terminal_states",
				"%q is both an active and a terminal state; it is treated as terminal", s)
		}
	}
	if h := t.HandoffState; h != "" && !b.failed("tracker.handoff_state") {
		if has(t.ActiveStates, h) {
			b.invalid("tracker.handoff_state", "must not be one of active_states, or handed-off issues would be dispatched again", h)
		} else if has(t.TerminalStates, h) {
			b.invalid("tracker.handoff_state", "must not be one of terminal_states, or handoff would close the issue and delete its workspace", h)
		}
	}
	for i, s := range t.BlockedStates {
		if len(t.ActiveStates) > 0 && !has(t.ActiveStates, s) && !b.failed("tracker.blocked_states") {
			b.warnf(CheckTypeMismatch, fmt.Sprintf("tracker.blocked_states[%d]", i), "%q is not in active_states; no issue in it is dispatched anyway", s)
		}
	}
	if p := t.InProgressState; p != "" && !b.failed("tracker.in_progress_state") {
		switch {
		case !has(t.ActiveStates, p):
			b.errorf("tracker.in_progress_state", "%q is not in active_states; reconciliation would immediately cancel the worker", p)
		case has(t.TerminalStates, p):
			b.errorf("tracker.in_progress_state", "%q is in terminal_states; reconciliation would immediately cancel the worker", p)
		case t.HandoffState != "" && strings.EqualFold(p, t.HandoffState):
			b.invalid("tracker.in_progress_state", "must differ from tracker.handoff_state", p)
		}
	}
}

func (b *builder) validateAgent(a *AgentConfig) {
	if b.failed("agent.kind") {
		return
	}
	// The kinds are the adapters registered in this program (agent.Register), which
	// know their own configuration.
	meta, ok := agent.Lookup(a.Kind)
	if !ok {
		msg := "unknown agent kind; known kinds: " + strings.Join(agent.Kinds(), ", ")
		if len(agent.Kinds()) == 0 {
			// Only a program that links no adapter gets here, such as a test that
			// loads a WORKFLOW.md without importing internal/agent/all.
			msg = "unknown agent kind: this program links no agent adapter (internal/agent/all links them all)"
		}
		b.invalid("agent.kind", msg, a.Kind)
		return
	}
	// The adapter specs give each CLI a default command; the 1.9 README example relies
	// on it (its preflight wanted agent.command all the same: a documented drift).
	if a.Command == "" && !b.failed("agent.command") {
		a.Command = meta.DefaultCommand
	}
}
