package jira

import (
	"testing"
	"time"
)

// TestParseOptions: the `jira:` block's defaults, the forms each key takes, and the
// messages of a wrong value, word for word.
func TestParseOptions(t *testing.T) {
	cases := []struct {
		name string
		raw  map[string]any
		want options
		err  string
	}{
		{name: "defaults", raw: nil, want: options{cloud: true, pageSize: DefaultPageSize, timeout: DefaultTimeout}},
		{name: "nulls keep the defaults", raw: map[string]any{"api": nil, "page_size": nil, "timeout_ms": nil},
			want: options{cloud: true, pageSize: DefaultPageSize, timeout: DefaultTimeout}},
		{name: "data center", raw: map[string]any{"api": " Server ", "page_size": "100", "timeout_ms": 2500.0},
			want: options{cloud: false, pageSize: 100, timeout: 2500 * time.Millisecond}},
		{name: "an unknown key is ignored", raw: map[string]any{"page_sise": 10},
			want: options{cloud: true, pageSize: DefaultPageSize, timeout: DefaultTimeout}},
		{name: "unknown api", raw: map[string]any{"api": "v4"},
			err: `config: jira.api: must be "cloud" (Jira Cloud, REST v3) or "datacenter" (Jira Server/Data Center, REST v2) (got v4)`},
		{name: "page size too large", raw: map[string]any{"page_size": 1000},
			err: "config: jira.page_size: must be an integer from 1 to 100 (got 1000)"},
		{name: "page size a fraction", raw: map[string]any{"page_size": 2.5},
			err: "config: jira.page_size: must be an integer from 1 to 100 (got 2.5)"},
		{name: "timeout not a number", raw: map[string]any{"timeout_ms": "soon"},
			err: "config: jira.timeout_ms: must be a positive integer of milliseconds (got soon)"},
		{name: "timeout zero", raw: map[string]any{"timeout_ms": 0},
			err: "config: jira.timeout_ms: must be a positive integer of milliseconds (got 0)"},
		{name: "every wrong key, in key order", raw: map[string]any{"timeout_ms": -1, "page_size": 0},
			err: "config: jira.page_size: must be an integer from 1 to 100 (got 0); jira.timeout_ms: must be a positive integer of milliseconds (got -1)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := parseOptions(c.raw)
			switch {
			case c.err != "":
				if err == nil || err.Error() != c.err {
					t.Fatalf("err %v\nwant %s", err, c.err)
				}
			case err != nil:
				t.Fatalf("err %v", err)
			case got != c.want:
				t.Errorf("got %+v, want %+v", got, c.want)
			}
		})
	}
}
