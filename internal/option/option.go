// Package option reads a block of WORKFLOW.md that an adapter owns: an agent
// adapter's (`claude-code:`) or a tracker's (`jira:`). An adapter declares the block's
// keys once, as a Set it registers with its kind (agent.Meta.Options,
// tracker.Meta.Options), and reads the block by it (Read); internal/config learns the
// keys from the registry and warns about any other. The coercers here (String, Count,
// IntValue, ...) are the one place a WORKFLOW.md value becomes a Go value: config uses
// them for its typed sections too.
//
// The package is a leaf: it imports only the standard library, so every layer may use
// it.
package option

import (
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// The coercers below turn one value of an adapter's own block of WORKFLOW.md into the
// type its key needs, accepting every form the YAML decoder gives a value (an int,
// int64, uint64 or float64 for a number, say). A key that is present but empty
// (nothing) reads as the zero value. Their errors do not name the key: the adapter puts
// its path in front, as in
// `claude-code.max_turns: must be a non-negative whole number (got -1)`.

// String is a string with surrounding white space removed.
func String(v any) (string, error) {
	switch s := v.(type) {
	case nil:
		return "", nil
	case string:
		return strings.TrimSpace(s), nil
	}
	return "", fmt.Errorf("must be a string (got %s)", Describe(v))
}

// Enum is an String that, unless empty, is one of valid.
func Enum(v any, valid []string) (string, error) {
	s, err := String(v)
	if err != nil || s == "" {
		return s, err
	}
	if !slices.Contains(valid, s) {
		return "", fmt.Errorf("unknown value %q (valid: %s)", s, strings.Join(valid, ", "))
	}
	return s, nil
}

// Bool is true or false.
func Bool(v any) (bool, error) {
	switch b := v.(type) {
	case nil:
		return false, nil
	case bool:
		return b, nil
	}
	return false, fmt.Errorf("must be true or false (got %s)", Describe(v))
}

// ToolList is a list of tool names in the comma-separated form CLIs take. It is
// written as a YAML list, whose items are trimmed and must not be empty, or as one
// string, which is kept as written (trimmed): a CLI may read more in it than commas.
func ToolList(v any) (string, error) {
	list, ok := v.([]any)
	if !ok {
		return String(v)
	}
	names := make([]string, 0, len(list))
	for i, item := range list {
		s, ok := item.(string)
		if !ok || strings.TrimSpace(s) == "" {
			return "", fmt.Errorf("[%d]: must be a non-empty tool name (got %s)", i, Describe(item))
		}
		names = append(names, strings.TrimSpace(s))
	}
	return strings.Join(names, ","), nil
}

// Count is a non-negative whole number (IntValue): an integer, a float without a
// fraction, or a decimal string. Unsigned and float values above math.MaxInt32 are
// refused.
func Count(v any) (int64, error) {
	if v == nil {
		return 0, nil
	}
	n, reason := IntValue(v)
	switch v.(type) {
	case uint64, float64:
		if n > math.MaxInt32 {
			reason = "is too large"
		}
	}
	if reason != "" || n < 0 {
		return 0, fmt.Errorf("must be a non-negative whole number (got %s)", Describe(v))
	}
	return n, nil
}

// USD is a non-negative, finite amount in US dollars: a number or a decimal
// string (NumberValue).
func USD(v any) (float64, error) {
	if v == nil {
		return 0, nil
	}
	f, ok := anyNumber(v)
	if !ok {
		return 0, fmt.Errorf("must be an amount in USD (got %s)", Describe(v))
	}
	if f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("must be a non-negative amount in USD (got %s)", Describe(v))
	}
	return f, nil
}

// Describe names a configuration value for an error message: a string quoted,
// "a list", "a mapping", "nothing", and anything else as fmt prints it.
func Describe(v any) string {
	switch t := v.(type) {
	case nil:
		return "nothing"
	case string:
		return strconv.Quote(t)
	case []any:
		return "a list"
	case map[string]any, map[any]any:
		return "a mapping"
	}
	return fmt.Sprint(v)
}

// OneOf is Enum over valid, in the form Field takes.
func OneOf(valid ...string) func(any) (string, error) {
	return func(v any) (string, error) { return Enum(v, valid) }
}

// Word is an String that becomes the value of a CLI flag of its own: it
// must not start with '-', which the CLI would read as another flag.
func Word(v any) (string, error) {
	s, err := String(v)
	if err == nil && strings.HasPrefix(s, "-") {
		return "", fmt.Errorf("must not start with '-' (got %q)", s)
	}
	return s, err
}

// ResolvePath is p, a path an option gives, made absolute against dir,
// WORKFLOW.md's directory. An empty p stays empty, and p stays as written when dir is
// empty (a Config built by hand).
func ResolvePath(dir, p string) string {
	if p == "" || dir == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, p)
}

// Option declares one key of an adapter's own block of WORKFLOW.md. An adapter (an
// agent's or a tracker's) lists its keys once, in the Set it registers as Meta.Options:
// it reads its block by that set (Read, Set.Parse), and config and `sortie validate`
// learn its keys from the registry, so a key added to the set needs no edit anywhere
// else.
type Option struct {
	// Key is the key as the block writes it: "max_turns".
	Key string
	// Doc says in one line what the key does, such as the CLI flag it becomes.
	Doc string
	// Default is the value the key has when it is absent, written as WORKFLOW.md would
	// write it (true, 50, []any{"success"}) and read by Set like any value. nil is the
	// zero value of the field Set writes.
	Default any
	// Set reads v, the key's value as the YAML decoder gives it, into dst, a pointer to
	// the adapter's options, or returns an error that starts with at, the key's path
	// (`claude-code.max_turns: must be ...`); a wrong value is always an error. Field
	// and FieldAt build it. nil: the key is accepted, and read by someone else (the
	// daemon reads mock.mcp_config, the mock reads mock.issues itself).
	Set func(dst any, at string, v any) error
	// Path marks a key whose value is a path: Read makes a relative one
	// absolute against WORKFLOW.md's directory (ResolvePath) before Set reads it.
	Path bool
	// Retired, when not empty, marks a key the adapter no longer reads and says what to
	// write instead. The key is treated as unknown, with this text in place of the list
	// of known keys.
	Retired string
}

// Set declares an adapter's own block of WORKFLOW.md (agent.Meta.Options,
// tracker.Meta.Options): every key it reads, and what an unknown key is.
type Set struct {
	Keys []Option
	// Strict makes an unknown key an error, as a wrong value is. Otherwise it is a
	// warning and the key is ignored, so that a WORKFLOW.md written for the reference
	// system or a newer Sortie keeps starting.
	Strict bool
}

// Known returns the keys the set accepts (every key but the retired ones), sorted.
func (s Set) Known() []string {
	var keys []string
	for _, o := range s.Keys {
		if o.Retired == "" {
			keys = append(keys, o.Key)
		}
	}
	slices.Sort(keys)
	return keys
}

// Lookup returns the declaration of key.
func (s Set) Lookup(key string) (Option, bool) {
	i := slices.IndexFunc(s.Keys, func(o Option) bool { return o.Key == key })
	if i < 0 {
		return Option{}, false
	}
	return s.Keys[i], true
}

// Defaults sets in dst, a pointer to the adapter's options, the Default of every key
// that has one. A Default that its Set refuses is a mistake in the declaration, not in
// WORKFLOW.md: Defaults panics, and every test that builds the adapter finds it.
func (s Set) Defaults(dst any) {
	for _, o := range s.Keys {
		if o.Default == nil || o.Set == nil || o.Retired != "" {
			continue
		}
		if err := o.Set(dst, o.Key, o.Default); err != nil {
			panic("option: the declared default is refused: " + err.Error())
		}
	}
}

// Parse reads raw, a block (or a part of one) at the path at, into dst, a pointer to
// the adapter's options, key by key in sorted order. A key absent from raw leaves dst
// as it was: call Defaults first for a whole block. An unknown or retired key is
// returned as a warning, `<at>.<key>: unknown key, ignored (known: ...)`, or with
// Strict refused as `<at>.<key>: unknown key (known: ...)`. What is refused comes back
// as an *Error listing every problem, and dst is then partly written.
func (s Set) Parse(at string, raw map[string]any, dst any) (warnings []string, err error) {
	var problems []string
	var known string
	for _, k := range slices.Sorted(maps.Keys(raw)) {
		path := at + "." + k
		o, ok := s.Lookup(k)
		if ok && o.Retired == "" {
			if o.Set != nil {
				if err := o.Set(dst, path, raw[k]); err != nil {
					problems = append(problems, err.Error())
				}
			}
			continue
		}
		var msg string
		switch {
		case ok:
			msg = path + ": " + o.Retired
		case s.Strict:
			if known == "" {
				known = strings.Join(s.Known(), ", ")
			}
			msg = fmt.Sprintf("%s: unknown key (known: %s)", path, known)
		default:
			if known == "" {
				known = strings.Join(s.Known(), ", ")
			}
			msg = fmt.Sprintf("%s: unknown key, ignored (known: %s)", path, known)
		}
		if s.Strict {
			problems = append(problems, msg)
		} else {
			warnings = append(warnings, msg)
		}
	}
	if len(problems) > 0 {
		return warnings, &Error{Problems: problems}
	}
	return warnings, nil
}

// Read reads a whole block, raw at the path at (the adapter's kind), into a new
// O: the declared defaults (Defaults), then the block's keys (Parse), the value of a
// Path key made absolute against dir, WORKFLOW.md's directory.
func Read[O any](s Set, at string, raw map[string]any, dir string) (O, []string, error) {
	var o O
	s.Defaults(&o)
	if dir != "" {
		resolved := maps.Clone(raw)
		for k, v := range raw {
			if opt, ok := s.Lookup(k); ok && opt.Path {
				if p, isString := v.(string); isString {
					resolved[k] = ResolvePath(dir, strings.TrimSpace(p))
				}
			}
		}
		raw = resolved
	}
	warnings, err := s.Parse(at, raw, &o)
	if err != nil {
		var zero O
		return zero, warnings, err
	}
	return o, warnings, nil
}

// Error is what Set.Parse refused in a block: a problem per key, each
// starting with the key's path, in key order. Its text is the problems joined by "; ".
type Error struct {
	Problems []string
}

func (e *Error) Error() string { return strings.Join(e.Problems, "; ") }

// Field is an Option.Set that reads a value with coerce (String, Count,
// OneOf(...), or the adapter's own) into the field of the adapter's options that
// field returns, as in
//
//	Set: option.Field(option.Count, func(o *options) *int64 { return &o.MaxTurns })
//
// A key that is present but empty (nothing) keeps the field's default. An error from
// coerce follows the key's path: `claude-code.max_turns: must be a non-negative whole
// number (got -1)`.
func Field[O, T any](coerce func(any) (T, error), field func(*O) *T) func(dst any, at string, v any) error {
	return func(dst any, at string, v any) error {
		if v == nil {
			return nil
		}
		x, err := coerce(v)
		if err != nil {
			return fmt.Errorf("%s: %w", at, err)
		}
		*field(optionsOf[O](dst)) = x
		return nil
	}
}

// FieldAt is Field for a reader whose errors name the path themselves, as the parts of
// a list or mapping do (`mock.script[1]: unknown outcome ...`). It is given every
// value, nothing included.
func FieldAt[O, T any](read func(at string, v any) (T, error), field func(*O) *T) func(dst any, at string, v any) error {
	return func(dst any, at string, v any) error {
		x, err := read(at, v)
		if err != nil {
			return err
		}
		*field(optionsOf[O](dst)) = x
		return nil
	}
}

// optionsOf is dst as the options type a Field was declared for. Another type is a
// mistake in the adapter's declaration, found by any test that reads the key.
func optionsOf[O any](dst any) *O {
	p, ok := dst.(*O)
	if !ok {
		panic(fmt.Sprintf("option: an option declared for %T is read into %T", (*O)(nil), dst))
	}
	return p
}
