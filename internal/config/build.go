package config

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"sortie/internal/agent"
	"sortie/internal/option"
	"sortie/internal/tracker"
)

// knownExtensionKeys are untyped top-level keys that other parts of Sortie read, so they
// draw no unknown_key warning. Adapter blocks named after a kind are known too.
var knownExtensionKeys = []string{"notifications"}

// unsupportedKeys are the reference daemon's top-level blocks for features Sortie does
// not have: kept, so its files load, but each draws a not_supported warning, since an
// operator migrating would otherwise believe them in force. None at present:
// reactions:, ci_feedback: and self_review: are read (reactionfields.go), and the
// reaction kinds Sortie does not have are warned about there (unsupportedReactions).
var unsupportedKeys = map[string]string{}

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
	return field == "tracker.api_key" || field == "tracker.provider.api_key" || field == "tracker.webhook_secret" ||
		field == "github.api_key"
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
	list := strings.Join(known, ", ")
	if list == "" {
		list = "none" // a tracker that reads no block of its own (github)
	}
	for _, k := range sortedKeys(m) {
		if !slices.Contains(known, k) && !slices.Contains(exempt, k) {
			b.warnf(CheckUnknownSubKey, field+"."+k, "unknown key in %s; it is ignored (known: %s)", field, list)
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
	s, err := option.String(v)
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
	n, reason := option.IntValue(v)
	if reason != "" {
		b.invalid(field, reason, v)
		return 0, false
	}
	return n, true
}

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
func (b *builder) count(sec map[string]any, field string, def int64, zero zeroRule) int64 {
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
	case n == 0 && zero == zeroIsDefault:
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
	t, err := option.Bool(v)
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

// isTrackerKind reports whether kind is a registered tracker adapter's
// (tracker.Register; config links them all, internal/tracker/all).
func isTrackerKind(kind string) bool {
	_, ok := tracker.Lookup(kind)
	return ok
}

// checkTrackerBlock warns about every key of the tracker's own block (`jira:`) that the
// adapter does not declare (tracker.Meta.Options), as the `codex:` block's are
// (buildCodex): the adapter ignores such a key. A block that is not a mapping is left
// to the adapter, which reads nothing from it.
func (b *builder) checkTrackerBlock(cfg *Config, raw map[string]any) {
	meta, ok := tracker.Lookup(cfg.Tracker.Kind)
	if !ok {
		return // an unknown tracker.kind, reported by validateTrackerKind
	}
	if slices.Contains(typedKeys, cfg.Tracker.Kind) {
		return // a typed section reads the block (github:, readGitHub)
	}
	if _, isMap := raw[cfg.Tracker.Kind].(map[string]any); isMap {
		b.section(raw, cfg.Tracker.Kind, meta.Options.Known())
	}
}

// build assembles a Config from raw. Path, Dir, Prompt and SecretEnv are filled by Load.
func (b *builder) build(raw map[string]any) *Config {
	cfg := &Config{Extensions: map[string]any{}}
	for _, sec := range sections {
		b.readSection(cfg, sec, raw)
	}
	b.buildCodex(cfg, raw)
	b.checkTrackerBlock(cfg, raw)

	for _, k := range sortedKeys(raw) {
		if slices.Contains(typedKeys, k) {
			continue
		}
		cfg.Extensions[k] = raw[k]
		known := slices.Contains(knownExtensionKeys, k) || isTrackerKind(k) ||
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

// fileBlockPath returns the trimmed `file.path` string, or "".
func fileBlockPath(raw map[string]any) string {
	block, _ := raw["file"].(map[string]any)
	p, _ := block["path"].(string)
	return strings.TrimSpace(p)
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
