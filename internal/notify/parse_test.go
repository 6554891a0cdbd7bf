package notify

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParse_AbsentOrEmptyMeansDisabled(t *testing.T) {
	for name, raw := range map[string]any{"absent": nil, "empty list": []any{}} {
		t.Run(name, func(t *testing.T) {
			n, err := Parse(raw, lookupIn(testEnv))
			if err != nil {
				t.Fatalf("Parse(%v) = %v, want no error", raw, err)
			}
			if n.Enabled() || len(n.Backends()) != 0 {
				t.Errorf("Enabled() = %v, Backends() = %v; want false, none", n.Enabled(), n.Backends())
			}
		})
	}
}

func TestParse_DefaultsAndNames(t *testing.T) {
	n := parseYAML(t, `
  - kind: slack
    webhook_url: $SLACK_WEBHOOK_URL
  - kind: webhook
    name: pager
    url: https://${HOST}/sortie
    headers: {Authorization: "Bearer $OPS_TOKEN", X-Team: ops}
    timeout_ms: "1500"
    retries: 0
    min_severity: critical
    events: [blocked, budget_exhausted, blocked]
  - kind: webhook
    webhook_url: http://127.0.0.1:9/x
`, testEnv)
	if got, want := n.Backends(), []string{"slack#0", "pager", "webhook#2"}; !slices.Equal(got, want) {
		t.Fatalf("Backends() = %v, want %v", got, want)
	}
	if !n.Enabled() {
		t.Error("Enabled() = false with three backends")
	}
	slack, pager := n.backends[0], n.backends[1]
	if slack.url != testEnv["SLACK_WEBHOOK_URL"] || slack.target != "https://hooks.slack.test" {
		t.Errorf("slack url, target = %q, %q; want the expanded URL and https://hooks.slack.test", slack.url, slack.target)
	}
	if slack.timeout != 5*time.Second || slack.retries != 2 || slack.minRank != 0 || slack.events != nil {
		t.Errorf("slack defaults = timeout %v, retries %d, minRank %d, events %v; want 5s, 2, 0, all", slack.timeout, slack.retries, slack.minRank, slack.events)
	}
	if pager.url != "https://ops.example.test/sortie" {
		t.Errorf("pager url = %q, want ${HOST} expanded", pager.url)
	}
	if got := pager.headers.Get("Authorization"); got != "Bearer opsT0ken-s3cr3t" {
		t.Errorf("Authorization header = %q, want $OPS_TOKEN expanded", got)
	}
	if got := pager.headers.Get("X-Team"); got != "ops" {
		t.Errorf("X-Team header = %q, want ops", got)
	}
	if pager.timeout != 1500*time.Millisecond || pager.retries != 0 || pager.minRank != 2 {
		t.Errorf("pager = timeout %v, retries %d, minRank %d; want 1.5s, 0, 2", pager.timeout, pager.retries, pager.minRank)
	}
	if want := []string{"blocked", "budget_exhausted"}; !slices.Equal(pager.events, want) {
		t.Errorf("pager events = %v, want %v (duplicates dropped)", pager.events, want)
	}
	if got, want := n.SecretEnv(), []string{"HOST", "OPS_TOKEN", "SLACK_WEBHOOK_URL"}; !slices.Equal(got, want) {
		t.Errorf("SecretEnv() = %v, want %v", got, want)
	}
}

func TestParse_DefaultLookupIsTheEnvironment(t *testing.T) {
	t.Setenv("SORTIE_TEST_NOTIFY_URL", "https://env.example.test/hook")
	n, err := Parse([]any{map[string]any{"kind": "webhook", "url": "$SORTIE_TEST_NOTIFY_URL"}}, nil)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if n.backends[0].url != "https://env.example.test/hook" {
		t.Errorf("url = %q, want it read from the environment", n.backends[0].url)
	}
}

func TestParse_AcceptsMapsWithAnyKeys(t *testing.T) {
	raw := []any{map[any]any{"kind": "webhook", "url": "https://a.test/"}}
	if _, err := Parse(raw, lookupIn(testEnv)); err != nil {
		t.Fatalf("Parse(map[any]any entry) = %v, want no error", err)
	}
	raw = []any{map[any]any{"kind": "webhook", "url": "https://a.test/", 7: "x"}}
	_, err := Parse(raw, lookupIn(testEnv))
	if err == nil || !strings.Contains(err.Error(), "notifications[0].7: unknown key") {
		t.Errorf("Parse(non-string key) = %v, want notifications[0].7: unknown key", err)
	}
}

func TestParse_Errors(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want string // the error must contain this
	}{
		{"not a list", "  kind: slack", "notifications: must be a list of backends, each with a kind (got a map)"},
		{"scalar", "  hello", "notifications: must be a list of backends, each with a kind (got a string)"},
		{"entry not a map", "  - slack", "notifications[0]: must be a map with a kind"},
		{"missing kind", "  - url: https://a.test/", "notifications[0].kind: is required (known: slack, webhook)"},
		{"kind not a string", "  - {kind: [slack], url: https://a.test/}", "notifications[0].kind: must be a string (got a list)"},
		{"unknown kind", "  - {kind: teams, url: https://a.test/}", `notifications[0].kind: unknown kind "teams" (known: slack, webhook)`},
		{"unknown key", "  - {kind: webhook, url: https://a.test/, webhok_url: x}", "notifications[0].webhok_url: unknown key (known: kind, name, url, webhook_url, headers, timeout_ms, retries, min_severity, events)"},
		{"odd unknown key", "  - {kind: webhook, url: https://a.test/, \"a b\": x}", `notifications[0]."a b": unknown key`},
		{"missing url", "  - kind: webhook", "notifications[0].url: is required: the http(s) URL to POST to"},
		{"missing slack url", "  - kind: slack", "notifications[0].webhook_url: is required"},
		{"both urls", "  - {kind: webhook, url: https://a.test/, webhook_url: https://b.test/}", "notifications[0].webhook_url: set either url or webhook_url, not both"},
		{"url not a string", "  - {kind: webhook, url: 5}", "notifications[0].url: must be a string (got a number)"},
		{"unset var", "  - {kind: webhook, url: https://a.test/x}\n  - {kind: webhook, url: $OPS_URL}", "notifications[1].url: environment variable OPS_URL is not set"},
		{"empty var", "  - {kind: slack, webhook_url: $EMPTY}", "notifications[0].webhook_url: environment variable EMPTY is empty"},
		{"empty var braces", "  - {kind: webhook, url: \"https://a.test/${EMPTY}\"}", "notifications[0].url: environment variable EMPTY is empty"},
		{"literal empty url", "  - {kind: webhook, url: \"\"}", "notifications[0].url: is empty: set it to the http(s) URL to POST to"},
		{"ftp url", "  - {kind: webhook, url: \"ftp://a.test/x\"}", `notifications[0].url: must be an http:// or https:// URL with a host (got scheme "ftp")`},
		{"no host", "  - {kind: webhook, url: \"https:///path\"}", "notifications[0].url: must be an http:// or https:// URL with a host (it has no host)"},
		{"relative url", "  - {kind: webhook, url: /hooks/x}", "(it has no scheme)"},
		{"unparsable url", "  - {kind: webhook, url: \"http://a b.test/\"}", "(it does not parse)"},
		{"headers not a map", "  - {kind: webhook, url: https://a.test/, headers: [a]}", "notifications[0].headers: must be a map of header names to values (got a list)"},
		{"header value not a string", "  - {kind: webhook, url: https://a.test/, headers: {X-N: 5}}", "notifications[0].headers.X-N: must be a string (got a number)"},
		{"header unset var", "  - {kind: webhook, url: https://a.test/, headers: {Authorization: \"Bearer $NOPE\"}}", "notifications[0].headers.Authorization: environment variable NOPE is not set"},
		{"header empty var", "  - {kind: webhook, url: https://a.test/, headers: {Authorization: \"Bearer ${EMPTY}\"}}", "notifications[0].headers.Authorization: environment variable EMPTY is empty"},
		{"header empty literal", "  - {kind: webhook, url: https://a.test/, headers: {X-A: \" \"}}", "notifications[0].headers.X-A: is empty"},
		{"header bad name", "  - {kind: webhook, url: https://a.test/, headers: {\"X A\": b}}", `notifications[0].headers: "X A" is not a valid HTTP header name`},
		{"header reserved", "  - {kind: webhook, url: https://a.test/, headers: {content-type: text/plain}}", "notifications[0].headers.content-type: is set by Sortie and cannot be configured"},
		{"header twice", "  - {kind: webhook, url: https://a.test/, headers: {X-A: b, x-a: c}}", "is set twice (header names are case-insensitive)"},
		{"header newline", "  - {kind: webhook, url: https://a.test/, headers: {X-A: \"b\\nc\"}}", "notifications[0].headers.X-A: contains a control character"},
		{"timeout fraction", "  - {kind: webhook, url: https://a.test/, timeout_ms: 1.5}", "notifications[0].timeout_ms: must be a whole number (got 1.5)"},
		{"timeout bool", "  - {kind: webhook, url: https://a.test/, timeout_ms: true}", "notifications[0].timeout_ms: must be an integer (got true)"},
		{"timeout zero", "  - {kind: webhook, url: https://a.test/, timeout_ms: 0}", "notifications[0].timeout_ms: must be between 1 and 120000 milliseconds (got 0)"},
		{"timeout huge", "  - {kind: webhook, url: https://a.test/, timeout_ms: 99999999999999999999}", "notifications[0].timeout_ms: is too large"},
		{"retries negative", "  - {kind: webhook, url: https://a.test/, retries: -1}", "notifications[0].retries: must be between 0 and 10 (got -1)"},
		{"retries string", "  - {kind: webhook, url: https://a.test/, retries: many}", `notifications[0].retries: must be an integer (got "many")`},
		{"unknown severity", "  - {kind: webhook, url: https://a.test/, min_severity: error}", `notifications[0].min_severity: unknown severity "error" (known: info, warning, critical)`},
		{"severity not a string", "  - {kind: webhook, url: https://a.test/, min_severity: 2}", "notifications[0].min_severity: must be a string (got a number)"},
		{"events not a list", "  - {kind: webhook, url: https://a.test/, events: blocked}", "notifications[0].events: must be a list of events (got a string)"},
		{"events empty", "  - {kind: webhook, url: https://a.test/, events: []}", "notifications[0].events: is empty"},
		{"unknown event", "  - {kind: webhook, url: https://a.test/, events: [agent, stalled]}", `notifications[0].events[1]: unknown event "stalled" (known: agent, blocked, needs_human_review, awaiting_input, budget_warning, budget_exhausted, retries_exhausted, failed)`},
		{"bad name", "  - {kind: webhook, name: \"my pager\", url: https://a.test/}", `notifications[0].name: must be 1 to 64 letters`},
		{"duplicate name", "  - {kind: webhook, name: ops, url: https://a.test/}\n  - {kind: slack, name: ops, webhook_url: https://b.test/}", `notifications[1].name: "ops" is already the name of notifications[0]`},
		{"too many", strings.Repeat("  - {kind: webhook, url: https://a.test/}\n", 33), "notifications: lists 33 backends; at most 32 are supported"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := Parse(decodeYAML(t, tt.yaml), lookupIn(testEnv))
			if err == nil {
				t.Fatalf("Parse = %v backends, no error; want an error containing %q", n.Backends(), tt.want)
			}
			if n != nil {
				t.Errorf("Parse returned a Notifier along with error %v", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse error =\n  %v\nwant it to contain\n  %s", err, tt.want)
			}
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Errorf("Parse error %v is not a *ParseError", err)
			}
		})
	}
}

func TestParse_ReportsEveryProblem(t *testing.T) {
	_, err := Parse(decodeYAML(t, `
  - {kind: teams, url: $NOPE}
  - {kind: webhook, url: https://a.test/, retries: 11}
`), lookupIn(testEnv))
	if err == nil {
		t.Fatal("Parse = nil error, want three problems")
	}
	for _, want := range []string{"notifications[0].kind: unknown kind", "notifications[0].url: environment variable NOPE is not set", "notifications[1].retries: must be between 0 and 10"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Parse error =\n%v\nwant it to contain %q", err, want)
		}
	}
}

func TestParse_ErrorsNeverQuoteURLsOrHeaderValues(t *testing.T) {
	env := map[string]string{
		"BAD_URL":  "ftp://hooks.test/services/s3cr3tPath?token=s3cr3tQuery",
		"BAD_URL2": "https://hooks.test/s3cr3tPath/%zz",
	}
	_, err := Parse(decodeYAML(t, `
  - {kind: webhook, url: $BAD_URL}
  - {kind: webhook, url: $BAD_URL2}
  - {kind: webhook, url: "hooks.test/s3cr3tLiteral"}
  - {kind: webhook, url: https://a.test/, headers: {X-Key: ["s3cr3tHeader"]}}
  - {kind: webhook, url: https://a.test/, headers: {X-Key: "s3cr3tHeader\u0001"}}
`), lookupIn(env))
	if err == nil {
		t.Fatal("Parse = nil error, want errors for every entry")
	}
	mustContainNone(t, err.Error(), "s3cr3t")
}
