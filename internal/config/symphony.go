package config

import (
	"fmt"
	"slices"
	"strings"

	"sortie/internal/agent"
)

// This file reads the keys that Symphony's WORKFLOW.md has and Sortie's own schema did
// not (prompt.engine, in fields.go), tracker.project_slug, tracker.team_key, tracker.assignee, their
// tracker.provider forms, tracker.required_labels and the `codex:` block's timeouts (docs/configuration.md, "Symphony compatibility").

// linearProviderKeys are the keys of tracker.provider that a Linear tracker reads:
// Symphony's home for its Linear settings since its generic tracker interface (its
// flat tracker.* keys are legacy aliases there), plus Sortie's team_key.
var linearProviderKeys = []string{"endpoint", "api_key", "project_slug", "team_key", "assignee"}

// linearSetting says where a Linear setting comes from: sec is tracker.provider when
// the provider sets key, else the tracker section, and field is the path to report
// problems under. Symphony gives the provider's value precedence over the flat alias;
// a key set both ways to different values is an error naming both, since one of the
// two would be silently ignored. A flat value from a SORTIE_* override wins, as every
// override does.
func (b *builder) linearSetting(sec, provider map[string]any, key string) (map[string]any, string) {
	flat, pfield := "tracker."+key, "tracker.provider."+key
	pv, inProvider := b.value(provider, pfield)
	if !inProvider || b.sources[flat] != "" {
		return sec, flat
	}
	if fv, inFlat := b.value(sec, flat); inFlat && !sameSetting(fv, pv) {
		what := "different values"
		if !isSecretField(flat) {
			what = fmt.Sprintf("%s and %s", gotValue(pv), gotValue(fv))
		}
		b.errorf(pfield, "conflicts with %s (%s); keep one (Symphony reads %s, and %s is its legacy alias)", flat, what, pfield, flat)
	}
	return provider, pfield
}

// sameSetting reports whether two values of one setting, as written, are the same.
func sameSetting(a, b any) bool {
	as, aok := a.(string)
	bs, bok := b.(string)
	if aok && bok {
		return strings.TrimSpace(as) == strings.TrimSpace(bs)
	}
	return gotValue(a) == gotValue(b)
}

// buildLinear reads Linear's scope keys and applies Linear's defaults. project_slug is
// Linear's name for tracker.project; team_key scopes to a team instead. Each of
// endpoint, api_key, project_slug, team_key and assignee may also be set under
// tracker.provider, as Symphony's current WORKFLOW.md does (linearSetting).
func (b *builder) buildLinear(t *TrackerConfig, sec map[string]any) {
	if t.Kind != "linear" {
		b.ignoreLinearKeys(t, sec)
		return
	}
	provider := t.Provider
	for _, k := range sortedKeys(provider) {
		if !slices.Contains(linearProviderKeys, k) {
			b.warnf(CheckUnknownSubKey, "tracker.provider."+k, "is not read by tracker.kind linear; it is ignored (known: %s)", strings.Join(linearProviderKeys, ", "))
		}
	}
	if s, field := b.linearSetting(sec, provider, "endpoint"); field != "tracker.endpoint" {
		t.Endpoint = b.ref(s, field)
	}
	apiKeySec, apiKeyField := b.linearSetting(sec, provider, "api_key")
	if apiKeyField != "tracker.api_key" {
		t.APIKey = b.expandedKey(apiKeySec, apiKeyField)
	}
	s, field := b.linearSetting(sec, provider, "project_slug")
	if slug := b.ref(s, field); slug != "" {
		if t.Project != "" && t.Project != slug {
			b.errorf(field, "conflicts with tracker.project (%q and %q); keep one", slug, t.Project)
		}
		t.Project = slug
	}
	s, field = b.linearSetting(sec, provider, "team_key")
	t.Team = b.ref(s, field)
	s, field = b.linearSetting(sec, provider, "assignee")
	t.Assignee = b.assignee(s, field)
	if _, ok := b.value(apiKeySec, apiKeyField); !ok && b.sources["tracker.api_key"] == "" {
		if v, _ := b.env(LinearAPIKeyEnv); strings.TrimSpace(v) != "" {
			t.APIKey = strings.TrimSpace(v)
		}
	}
	b.secrets = append(b.secrets, LinearAPIKeyEnv)
	if t.Endpoint == "" && !b.failed("tracker.endpoint") && !b.failed("tracker.provider.endpoint") {
		t.Endpoint = DefaultLinearEndpoint
	}
	if _, ok := b.value(sec, "tracker.active_states"); !ok {
		t.ActiveStates = slices.Clone(linearActiveStates)
	}
	if _, ok := b.value(sec, "tracker.terminal_states"); !ok {
		t.TerminalStates = slices.Clone(linearTerminalStates)
	}
}

// ignoreLinearKeys reports Linear's keys on another tracker kind: ignored with a
// warning, except an assignee, whose silent loss would dispatch every teammate's
// issues.
func (b *builder) ignoreLinearKeys(t *TrackerConfig, sec map[string]any) {
	t.Team = b.ref(sec, "tracker.team_key")
	for _, k := range []string{"tracker.project_slug", "tracker.team_key"} {
		if _, ok := b.value(sec, k); ok && t.Kind != "" {
			b.warnf(CheckUnknownSubKey, k, "is read only by tracker.kind linear; it is ignored for tracker.kind %s", t.Kind)
		}
	}
	if _, ok := b.value(sec, "tracker.assignee"); ok && t.Kind != "" {
		b.errorf("tracker.assignee", "is only supported for tracker.kind linear (got tracker.kind %s); remove it, or scope with tracker.query_filter", t.Kind)
	}
}

// assignee reads a Linear tracker's assignee at field (tracker.assignee, or
// tracker.provider.assignee): "me", a user id or an e-mail, else $LINEAR_ASSIGNEE when
// it is set (Symphony's fallback). A key that is present but resolves to nothing is an
// error, never "no filter".
func (b *builder) assignee(sec map[string]any, field string) string {
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

// symphonyBlockedStates is where Symphony's Linear adapter gates an issue on its
// blockers: only in Todo. An issue already in progress keeps running there when a
// blocker reopens.
var symphonyBlockedStates = []string{"Todo"}

// blockedStates reads tracker.blocked_states: the states in which an issue with an
// unfinished blocker waits. Absent, Sortie's own files gate every active state (nil);
// a Symphony file (a `codex:` block and no agent.kind) gets Symphony's rule, Todo only.
// An empty list turns blocker gating off.
func (b *builder) blockedStates(raw, sec map[string]any) []string {
	if _, ok := b.value(sec, "tracker.blocked_states"); ok {
		list := b.stringList(sec, "tracker.blocked_states")
		if list == nil {
			list = []string{}
		}
		return list
	}
	if isSymphonyFile(raw) {
		return slices.Clone(symphonyBlockedStates)
	}
	return nil
}

// isSymphonyFile reports whether raw is laid out as Symphony's WORKFLOW.md: a `codex:`
// block and no agent.kind.
func isSymphonyFile(raw map[string]any) bool {
	if _, ok := raw["codex"]; !ok {
		return false
	}
	agentSec, _ := raw["agent"].(map[string]any)
	kind, _ := agentSec["kind"].(string)
	return strings.TrimSpace(kind) == ""
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
// its options, and declares its keys (agent.Meta.Options): any other key draws an
// unknown_sub_key warning here. The orchestrator's own timeouts come from the block
// when agent.* does not set them, with Symphony's meaning (stall_timeout_ms 0 or less
// turns stall detection off).
func (b *builder) buildCodex(cfg *Config, raw map[string]any) {
	if cfg.Agent.Kind != "codex" {
		return
	}
	meta, ok := agent.Lookup(cfg.Agent.Kind)
	if !ok {
		return // an unknown agent.kind, reported by validateAgent
	}
	sec := b.section(raw, "codex", meta.Options.Known())
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
