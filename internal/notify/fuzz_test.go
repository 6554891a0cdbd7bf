package notify

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
)

// fuzzSecret is the value of $FUZZ_SECRET; no error text may contain it.
const fuzzSecret = "zq9-fuzz-s3cr3t-9qz"

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`null`, `[]`, `{}`, `"x"`, `[1]`,
		`[{"kind":"slack","webhook_url":"$SLACK"}]`,
		`[{"kind":"webhook","url":"https://a.test/x","headers":{"Authorization":"Bearer $FUZZ_SECRET"},"timeout_ms":5000,"retries":2,"events":["agent"],"min_severity":"warning"}]`,
		`[{"kind":"webhook","url":"$URL"},{"kind":"webhook","name":"webhook#0","url":"http://h/"}]`,
		`[{"kind":"webhook","url":"${EMPTY}"}]`,
		`[{"kind":"webhook","url":"http://$FUZZ_SECRET/","headers":{"X":1}}]`,
		`[{"kind":"webhook","webhook_url":"https://h/${UNSET}","retries":"3","timeout_ms":1e3}]`,
	} {
		f.Add([]byte(s))
	}
	env := map[string]string{
		"SLACK":       "https://hooks.slack.test/services/" + fuzzSecret,
		"URL":         "http://example.test/" + fuzzSecret + "?q=" + fuzzSecret,
		"FUZZ_SECRET": fuzzSecret,
		"EMPTY":       "",
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var raw any
		if json.Unmarshal(data, &raw) != nil {
			return
		}
		n, err := Parse(raw, lookupIn(env))
		if err != nil {
			if n != nil {
				t.Errorf("Parse returned a Notifier with error %v", err)
			}
			if !strings.Contains(string(data), fuzzSecret) && strings.Contains(err.Error(), fuzzSecret) {
				t.Errorf("Parse error reveals a secret: %v", err)
			}
			return
		}
		names := map[string]bool{}
		for _, b := range n.backends {
			if b.url == "" {
				t.Fatalf("backend %s has an empty URL", b.name)
			}
			u, perr := url.Parse(b.url)
			if perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
				t.Errorf("backend %s has URL %q, want an http(s) URL with a host", b.name, b.url)
			}
			if b.name == "" || names[b.name] {
				t.Errorf("backend name %q is empty or repeated", b.name)
			}
			names[b.name] = true
			if b.timeout <= 0 || b.retries < 0 || b.encode == nil {
				t.Errorf("backend %s: timeout %v, retries %d, encoder set %v", b.name, b.timeout, b.retries, b.encode != nil)
			}
			for k, vs := range b.headers {
				for _, v := range vs {
					if strings.TrimSpace(v) == "" {
						t.Errorf("backend %s: header %s is empty", b.name, k)
					}
				}
			}
		}
	})
}
