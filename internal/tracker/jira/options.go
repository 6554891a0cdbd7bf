package jira

import (
	"fmt"
	"strings"
	"time"

	"sortie/internal/option"
	"sortie/internal/tracker"
)

// options are the typed contents of the `jira:` block.
type options struct {
	cloud    bool
	pageSize int
	timeout  time.Duration
}

// optionSpecs declares the `jira:` block (tracker.Meta.Options): New reads it by this
// declaration, and config warns about any other key in it.
var optionSpecs = option.Set{Keys: []option.Option{
	{Key: "api", Default: APICloud, Doc: "cloud (Jira Cloud, REST v3) or datacenter (Jira Server/Data Center, REST v2)",
		Set: option.Field(apiFlavour, func(o *options) *bool { return &o.cloud })},
	{Key: "page_size", Default: DefaultPageSize, Doc: "issues per search request, 1 to 100",
		Set: option.Field(pageSize, func(o *options) *int { return &o.pageSize })},
	{Key: "timeout_ms", Default: int(DefaultTimeout / time.Millisecond), Doc: "limit of one HTTP request, in milliseconds",
		Set: option.Field(timeoutMillis, func(o *options) *time.Duration { return &o.timeout })},
}}

// parseOptions reads the `jira:` block. Its errors name the key, as
// `config: jira.page_size: must be an integer from 1 to 100 (got 1000)`.
func parseOptions(raw map[string]any) (options, error) {
	// An unknown key is ignored here; config warns about it (unknown_sub_key).
	opts, _, err := option.Read[options](optionSpecs, "jira", raw, "")
	if err != nil {
		return options{}, fmt.Errorf("config: %w", err)
	}
	return opts, nil
}

// apiFlavour reads jira.api: true for Jira Cloud. A value that is not a string, like an
// empty one, means Cloud.
func apiFlavour(v any) (bool, error) {
	s, _ := v.(string)
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", APICloud:
		return true, nil
	case APIDataCenter, "data_center", "server", "dc":
		return false, nil
	}
	return false, fmt.Errorf("must be %q (Jira Cloud, REST v3) or %q (Jira Server/Data Center, REST v2) (got %v)", APICloud, APIDataCenter, v)
}

// pageSize reads jira.page_size: a whole number from 1 to 100 (option.IntValue).
func pageSize(v any) (int, error) {
	n, reason := option.IntValue(v)
	if reason != "" || n < 1 || n > 100 {
		return 0, fmt.Errorf("must be an integer from 1 to 100 (got %v)", v)
	}
	return int(n), nil
}

// timeoutMillis reads jira.timeout_ms: a positive whole number of milliseconds
// (option.IntValue).
func timeoutMillis(v any) (time.Duration, error) {
	n, reason := option.IntValue(v)
	if reason != "" || n < 1 {
		return 0, fmt.Errorf("must be a positive integer of milliseconds (got %v)", v)
	}
	return time.Duration(n) * time.Millisecond, nil
}

func init() {
	tracker.Register("jira", tracker.Meta{RequiresProject: true, RequiresAPIKey: true, Options: optionSpecs}, New)
}
