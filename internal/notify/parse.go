package notify

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"sortie/internal/option"
)

// kinds is the registry of backend kinds: each kind's payload encoder.
var kinds = map[string]func(Notification) ([]byte, error){
	"slack":   slackBody,
	"webhook": webhookBody,
}

// knownKinds returns the registered kinds, sorted, for error messages.
func knownKinds() string {
	names := make([]string, 0, len(kinds))
	for k := range kinds {
		names = append(names, k)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// entryKeys are the keys a backend entry may have, in the order problems are reported.
var entryKeys = []string{"kind", "name", "url", "webhook_url", "headers", "timeout_ms", "retries", "min_severity", "events"}

// Defaults and bounds of a backend entry.
const (
	defaultTimeout = 5 * time.Second
	maxTimeoutMS   = 120_000
	defaultRetries = 2
	maxRetries     = 10
	maxBackends    = 32
	maxHeaders     = 32
)

// reservedHeaders are set by Sortie for every request; an entry may not override them.
var reservedHeaders = []string{"Host", "Content-Type", "Content-Length", "Transfer-Encoding", "Connection"}

// nameRE is what a backend name may look like: it appears in logs and errors.
var nameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.#-]{0,63}$`) })

// headerNameRE is an HTTP token (RFC 9110 §5.6.2).
var headerNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$") })

// ParseError is one problem in the notifications list. Path is the field, such as
// `notifications[1].url`; Msg says what is wrong and never quotes a URL or header value.
type ParseError struct {
	Path, Msg string
}

func (e *ParseError) Error() string { return e.Path + ": " + e.Msg }

// backend is one configured destination.
type backend struct {
	name, kind string
	url        string // the full URL: a credential
	target     string // scheme://host, safe to show
	headers    http.Header
	timeout    time.Duration
	retries    int
	minRank    int
	events     []string // nil means every event
	encode     func(Notification) ([]byte, error)
	envNames   []string // variables referenced by url and header values
	secrets    []string // strings scrubbed from error text, longest first
}

// accepts reports whether msg passes the backend's min_severity and events filters.
func (b *backend) accepts(msg Notification) bool {
	sev := msg.Severity
	if sev == "" {
		sev = DefaultSeverity(msg.Event)
	}
	return severityRank(sev) >= b.minRank && (b.events == nil || slices.Contains(b.events, msg.Event))
}

// Parse builds a Notifier from raw, the value of the top-level `notifications:` key of
// WORKFLOW.md as decoded from YAML (nil when the key is absent: the Notifier then has no
// backends). $VAR and ${VAR} in url, webhook_url and header values are resolved with
// lookup (os.LookupEnv when nil); a variable that is unset or empty is an error. The
// error joins one *ParseError per problem; any error is fatal for the caller.
func Parse(raw any, lookup func(string) (string, bool)) (*Notifier, error) {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	n := newNotifier()
	if raw == nil {
		return n, nil
	}
	list, ok := raw.([]any)
	if !ok {
		return nil, &ParseError{"notifications", "must be a list of backends, each with a kind (got " + typeName(raw) + ")"}
	}
	if len(list) > maxBackends {
		return nil, &ParseError{"notifications", fmt.Sprintf("lists %d backends; at most %d are supported", len(list), maxBackends)}
	}
	var problems []error
	names := map[string]int{}
	for i, entry := range list {
		b, errs := parseEntry(i, entry, lookup)
		problems = append(problems, errs...)
		if b == nil {
			continue
		}
		if j, dup := names[b.name]; dup {
			problems = append(problems, &ParseError{fmt.Sprintf("notifications[%d].name", i), fmt.Sprintf("%q is already the name of notifications[%d]; names must be unique", b.name, j)})
			continue
		}
		names[b.name] = i
		n.backends = append(n.backends, b)
	}
	if len(problems) > 0 {
		return nil, errors.Join(problems...)
	}
	return n, nil
}

// parseEntry parses notifications[i]. It returns a nil backend when there are problems.
func parseEntry(i int, entry any, lookup func(string) (string, bool)) (*backend, []error) {
	path := fmt.Sprintf("notifications[%d]", i)
	var problems []error
	bad := func(key, format string, args ...any) {
		p := path
		if key != "" {
			p += "." + key
		}
		problems = append(problems, &ParseError{p, fmt.Sprintf(format, args...)})
	}
	m, nonString := asMap(entry)
	if m == nil {
		bad("", "must be a map with a kind, such as {kind: slack, webhook_url: $SLACK_WEBHOOK_URL} (got %s)", typeName(entry))
		return nil, problems
	}
	for _, k := range nonString {
		bad(keyPath(k), "unknown key (known: %s)", strings.Join(entryKeys, ", "))
	}
	for _, k := range sortedKeys(m) {
		if !slices.Contains(entryKeys, k) {
			bad(keyPath(k), "unknown key (known: %s)", strings.Join(entryKeys, ", "))
		}
	}

	b := &backend{timeout: defaultTimeout, retries: defaultRetries}
	switch v := m["kind"].(type) {
	case nil:
		bad("kind", "is required (known: %s)", knownKinds())
	case string:
		if enc, ok := kinds[v]; ok {
			b.kind, b.encode = v, enc
		} else {
			bad("kind", "unknown kind %q (known: %s)", clip(v, 64), knownKinds())
		}
	default:
		bad("kind", "must be a string (got %s)", typeName(v))
	}

	b.name = fmt.Sprintf("%s#%d", b.kind, i)
	if b.kind == "" {
		b.name = fmt.Sprintf("backend#%d", i)
	}
	if v, ok := m["name"]; ok {
		s, isStr := v.(string)
		switch {
		case !isStr:
			bad("name", "must be a string (got %s)", typeName(v))
		case !nameRE().MatchString(s):
			bad("name", "must be 1 to 64 letters, digits, '_', '.', '#' or '-', starting with a letter or digit (got %q)", clip(s, 64))
		default:
			b.name = s
		}
	}

	// The URL: `url` or `webhook_url`, whichever the operator prefers; webhook_url's name
	// marks it as a secret for the loader (docs/configuration.md#credentials).
	urlKey := "url"
	_, hasURL := m["url"]
	_, hasWebhookURL := m["webhook_url"]
	switch {
	case hasURL && hasWebhookURL:
		bad("webhook_url", "set either url or webhook_url, not both")
	case hasWebhookURL:
		urlKey = "webhook_url"
	case !hasURL:
		if b.kind == "slack" {
			urlKey = "webhook_url"
		}
		bad(urlKey, "is required: the http(s) URL to POST to")
	}
	if v, ok := m[urlKey]; ok && !(hasURL && hasWebhookURL) {
		if s, isStr := v.(string); !isStr {
			bad(urlKey, "must be a string (got %s)", typeName(v))
		} else if val, envs, msgs := expand(s, lookup); len(msgs) > 0 {
			for _, msg := range msgs {
				bad(urlKey, "%s", msg)
			}
		} else if u, msg := checkURL(val); msg != "" {
			bad(urlKey, "%s", msg)
		} else {
			b.url, b.target = strings.TrimSpace(val), u.Scheme+"://"+u.Host
			b.envNames = append(b.envNames, envs...)
			b.secrets = append(b.secrets, urlSecrets(u)...)
			b.secrets = append(b.secrets, envValues(envs, lookup)...)
		}
	}

	b.headers = http.Header{}
	if v, ok := m["headers"]; ok {
		hm, unknownKeys := asMap(v)
		switch {
		case hm == nil:
			bad("headers", "must be a map of header names to values (got %s)", typeName(v))
		case len(hm)+len(unknownKeys) > maxHeaders:
			bad("headers", "has %d headers; at most %d are supported", len(hm)+len(unknownKeys), maxHeaders)
		default:
			for _, k := range unknownKeys {
				bad("headers", "header name %s is not a string", k)
			}
			for _, k := range sortedKeys(hm) {
				hp := "headers." + keyPath(k)
				canon := http.CanonicalHeaderKey(k)
				s, isStr := hm[k].(string)
				switch {
				case !headerNameRE().MatchString(k):
					bad("headers", "%q is not a valid HTTP header name", clip(k, 128))
				case slices.Contains(reservedHeaders, canon):
					bad(hp, "is set by Sortie and cannot be configured")
				case b.headers.Get(canon) != "":
					bad(hp, "is set twice (header names are case-insensitive)")
				case !isStr:
					// The type only: a header value is a credential.
					bad(hp, "must be a string (got %s)", typeName(hm[k]))
				default:
					val, envs, msgs := expand(s, lookup)
					for _, msg := range msgs {
						bad(hp, "%s", msg)
					}
					if len(msgs) > 0 {
						continue
					}
					if strings.TrimSpace(val) == "" {
						bad(hp, "is empty")
						continue
					}
					if strings.ContainsFunc(val, func(r rune) bool { return r < 0x20 && r != '\t' || r == 0x7f }) {
						bad(hp, "contains a control character (such as a newline)")
						continue
					}
					b.headers.Set(canon, val)
					b.envNames = append(b.envNames, envs...)
					b.secrets = append(b.secrets, valueSecrets(val)...)
					b.secrets = append(b.secrets, envValues(envs, lookup)...)
				}
			}
		}
	}

	if v, ok := m["timeout_ms"]; ok {
		if ms, msg := option.IntValue(v); msg != "" {
			bad("timeout_ms", "%s (got %s)", msg, gotValue(v))
		} else if ms < 1 || ms > maxTimeoutMS {
			bad("timeout_ms", "must be between 1 and %d milliseconds (got %d)", maxTimeoutMS, ms)
		} else {
			b.timeout = time.Duration(ms) * time.Millisecond
		}
	}
	if v, ok := m["retries"]; ok {
		if r, msg := option.IntValue(v); msg != "" {
			bad("retries", "%s (got %s)", msg, gotValue(v))
		} else if r < 0 || r > maxRetries {
			bad("retries", "must be between 0 and %d (got %d)", maxRetries, r)
		} else {
			b.retries = int(r)
		}
	}
	if v, ok := m["min_severity"]; ok {
		s, isStr := v.(string)
		switch {
		case !isStr:
			bad("min_severity", "must be a string (got %s)", typeName(v))
		case !slices.Contains(Severities, s):
			bad("min_severity", "unknown severity %q (known: %s)", clip(s, 64), strings.Join(Severities, ", "))
		default:
			b.minRank = severityRank(s)
		}
	}
	if v, ok := m["events"]; ok {
		list, isList := v.([]any)
		switch {
		case !isList:
			bad("events", "must be a list of events (got %s)", typeName(v))
		case len(list) == 0:
			bad("events", "is empty, so nothing would be sent; list events or remove the key to receive all")
		default:
			b.events = []string{}
			for j, e := range list {
				s, isStr := e.(string)
				switch {
				case !isStr:
					bad(fmt.Sprintf("events[%d]", j), "must be a string (got %s)", typeName(e))
				case !slices.Contains(Events, s):
					bad(fmt.Sprintf("events[%d]", j), "unknown event %q (known: %s)", clip(s, 64), strings.Join(Events, ", "))
				case !slices.Contains(b.events, s):
					b.events = append(b.events, s)
				}
			}
		}
	}

	if len(problems) > 0 {
		return nil, problems
	}
	b.secrets = scrubList(b.secrets)
	return b, nil
}

// checkURL parses an expanded URL. Its message never quotes the URL: the path and query
// of a webhook URL are often the credential.
func checkURL(s string) (*url.URL, string) {
	const want = "must be an http:// or https:// URL with a host"
	if strings.TrimSpace(s) == "" {
		return nil, "is empty: set it to the http(s) URL to POST to"
	}
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil {
		return nil, want + " (it does not parse)"
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		if u.Scheme == "" {
			return nil, want + " (it has no scheme)"
		}
		return nil, fmt.Sprintf("%s (got scheme %q)", want, clip(u.Scheme, 16))
	}
	if u.Hostname() == "" {
		return nil, want + " (it has no host)"
	}
	return u, ""
}

// urlSecrets returns the parts of u that may be a credential: everything but the scheme
// and host.
func urlSecrets(u *url.URL) []string {
	s := []string{u.String(), u.Path, u.EscapedPath(), u.RawQuery, u.Fragment}
	if u.User != nil {
		s = append(s, u.User.String(), u.User.Username())
		if p, ok := u.User.Password(); ok {
			s = append(s, p)
		}
	}
	for seg := range strings.SplitSeq(u.Path, "/") {
		s = append(s, seg)
	}
	for _, vs := range u.Query() {
		s = append(s, vs...)
	}
	return s
}

// valueSecrets returns a header value and its words, so "Bearer abc" also hides "abc".
func valueSecrets(v string) []string {
	return append([]string{v}, strings.Fields(v)...)
}

func envValues(names []string, lookup func(string) (string, bool)) []string {
	var vals []string
	for _, n := range names {
		if v, ok := lookup(n); ok {
			vals = append(vals, v)
		}
	}
	return vals
}

// minSecretLen is the shortest string scrubbed from error text; shorter ones would
// mangle ordinary words and reveal little.
const minSecretLen = 4

// scrubList sorts secrets longest first, so a whole URL is replaced before its parts,
// and drops duplicates and fragments too short to matter.
func scrubList(secrets []string) []string {
	out := slices.DeleteFunc(slices.Clone(secrets), func(s string) bool { return len(s) < minSecretLen })
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return slices.Compact(out)
}

// asMap returns v as a string-keyed map; non-string keys of a map[any]any are returned
// separately, rendered for an error message. It returns nil if v is not a map.
func asMap(v any) (map[string]any, []string) {
	switch t := v.(type) {
	case map[string]any:
		return t, nil
	case map[any]any:
		m := make(map[string]any, len(t))
		var bad []string
		for k, e := range t {
			if s, ok := k.(string); ok {
				m[s] = e
			} else {
				bad = append(bad, clip(fmt.Sprint(k), 64))
			}
		}
		slices.Sort(bad)
		return m, bad
	}
	return nil, nil
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// typeName names the YAML type of a decoded value.
func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int, int64, uint64, float64:
		return "a number"
	case []any:
		return "a list"
	case map[string]any, map[any]any:
		return "a map"
	}
	return fmt.Sprintf("a %T", v)
}

// gotValue renders a non-secret scalar for a `(got …)` suffix.
func gotValue(v any) string {
	switch t := v.(type) {
	case string:
		return strconv.Quote(clip(t, 64))
	case bool:
		return strconv.FormatBool(t)
	case float64:
		return strconv.FormatFloat(t, 'g', -1, 64)
	case int, int64, uint64:
		return fmt.Sprint(t)
	}
	return typeName(v)
}

// keyPath renders an operator-written key for a field path, quoted unless it is plain.
func keyPath(k string) string {
	if plainKeyRE().MatchString(k) {
		return k
	}
	return strconv.Quote(clip(k, 64))
}

var plainKeyRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`) })

// clip shortens s to at most n bytes on a UTF-8 boundary, for echoing input in errors.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return truncate(s, n)
}
