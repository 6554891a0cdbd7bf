package config

import (
	"fmt"
	"slices"
	"strings"
)

// This file reads the keys that Symphony's WORKFLOW.md has and Sortie's own schema did
// not: prompt.engine, tracker.project_slug, tracker.team_key, tracker.assignee,
// tracker.required_labels and the `codex:` block's timeouts (docs/configuration.md, "Symphony compatibility").

// buildPrompt reads the `prompt:` section: the template dialect.
func (b *builder) buildPrompt(cfg *Config, raw map[string]any) {
	sec := b.section(raw, "prompt", promptKeys)
	s, ok := b.str(sec, "prompt.engine")
	if !ok || s == "" {
		return
	}
	switch s = strings.ToLower(s); s {
	case "go", "liquid":
		cfg.PromptEngine = s
	default:
		b.invalid("prompt.engine", "must be go or liquid; remove it to detect the dialect from the template", s)
	}
}

// buildLinear reads Linear's scope keys and applies Linear's defaults. project_slug is
// Linear's name for tracker.project; team_key scopes to a team instead.
func (b *builder) buildLinear(t *TrackerConfig, sec map[string]any) {
	if slug := b.ref(sec, "tracker.project_slug"); slug != "" {
		if t.Project != "" && t.Project != slug {
			b.errorf("tracker.project_slug", "conflicts with tracker.project (%q and %q); keep one", slug, t.Project)
		}
		t.Project = slug
	}
	t.Team = b.ref(sec, "tracker.team_key")
	if t.Kind != "linear" {
		for _, k := range []string{"tracker.project_slug", "tracker.team_key"} {
			if _, ok := b.value(sec, k); ok && t.Kind != "" {
				b.warnf(CheckUnknownSubKey, k, "is read only by tracker.kind linear; it is ignored for tracker.kind %s", t.Kind)
			}
		}
		// Ignoring an assignee would dispatch every teammate's issues: an error, not a
		// warning.
		if _, ok := b.value(sec, "tracker.assignee"); ok && t.Kind != "" {
			b.errorf("tracker.assignee", "is only supported for tracker.kind linear (got tracker.kind %s); remove it, or scope with tracker.query_filter", t.Kind)
		}
		return
	}
	t.Assignee = b.assignee(sec)
	if _, ok := b.value(sec, "tracker.api_key"); !ok && b.sources["tracker.api_key"] == "" {
		if v, _ := b.env(LinearAPIKeyEnv); strings.TrimSpace(v) != "" {
			t.APIKey = strings.TrimSpace(v)
		}
	}
	b.secrets = append(b.secrets, LinearAPIKeyEnv)
	if t.Endpoint == "" && !b.failed("tracker.endpoint") {
		t.Endpoint = DefaultLinearEndpoint
	}
	if _, ok := b.value(sec, "tracker.active_states"); !ok {
		t.ActiveStates = slices.Clone(linearActiveStates)
	}
	if _, ok := b.value(sec, "tracker.terminal_states"); !ok {
		t.TerminalStates = slices.Clone(linearTerminalStates)
	}
}

// assignee reads tracker.assignee of a Linear tracker: "me", a user id or an e-mail,
// else $LINEAR_ASSIGNEE when it is set (Symphony's fallback). A key that is present but
// resolves to nothing is an error, never "no filter".
func (b *builder) assignee(sec map[string]any) string {
	const field = "tracker.assignee"
	if _, ok := b.value(sec, field); !ok {
		v, _ := b.env(LinearAssigneeEnv)
		return strings.TrimSpace(v)
	}
	s := b.ref(sec, field)
	if s == "" && !b.failed(field) {
		b.errorf(field, "must not be empty (me, a user id or an e-mail); remove the key to dispatch every assignee's issues")
	}
	return s
}

// requiredLabels reads tracker.required_labels, trimmed and lower-cased. A blank entry
// is kept, as Symphony specifies: it matches no label, so nothing is dispatched.
func (b *builder) requiredLabels(sec map[string]any) []string {
	const field = "tracker.required_labels"
	v, ok := b.value(sec, field)
	if !ok {
		return nil
	}
	list, isList := v.([]any)
	if !isList {
		b.invalid(field, "must be a list of labels", v)
		return nil
	}
	var out []string
	for i, e := range list {
		s, isStr := e.(string)
		if !isStr {
			b.invalid(fmt.Sprintf("%s[%d]", field, i), "must be a string", e)
			continue
		}
		s = strings.ToLower(strings.TrimSpace(s))
		if s == "" {
			b.warnf(CheckTypeMismatch, fmt.Sprintf("%s[%d]", field, i), "is blank: a blank label matches no issue, so no issue will be dispatched")
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// buildCodex reads the `codex:` block of a codex agent. The adapter reads the block as
// its options; the orchestrator's own timeouts come from it when agent.* does not set
// them, with Symphony's meaning (stall_timeout_ms 0 or less turns stall detection off).
func (b *builder) buildCodex(cfg *Config, raw map[string]any) {
	if cfg.Agent.Kind != "codex" {
		return
	}
	sec := b.section(raw, "codex", codexKeys)
	if sec == nil {
		return
	}
	agentSec, _ := raw["agent"].(map[string]any)
	if _, set := b.value(agentSec, "agent.stall_timeout_ms"); !set {
		cfg.Agent.StallTimeout = b.millis(sec, "codex.stall_timeout_ms", cfg.Agent.StallTimeout, zeroDisables)
	}
	if _, set := b.value(agentSec, "agent.read_timeout_ms"); !set {
		cfg.Agent.ReadTimeout = b.millis(sec, "codex.read_timeout_ms", cfg.Agent.ReadTimeout, zeroIsDefault)
	}
}
