package webhook

import (
	"errors"
	"net/http"
	"strings"
	"testing"
)

func TestVerify(t *testing.T) {
	body := []byte(`{"webhookEvent":"jira:issue_updated"}`)
	good := signHex(testSecret, body)
	cases := []struct {
		name, kind, secret string
		h                  http.Header
		ok                 bool
	}{
		{"github", GitHub, testSecret, http.Header{"X-Hub-Signature-256": {"sha256=" + good}}, true},
		{"linear", Linear, testSecret, http.Header{"Linear-Signature": {good}}, true},
		{"jira signature", Jira, testSecret, http.Header{"X-Hub-Signature": {"sha256=" + good}}, true},
		{"jira token", Jira, testSecret, http.Header{"X-Sortie-Webhook-Token": {testSecret}}, true},
		{"jira wrong signature, good token", Jira, testSecret, http.Header{"X-Hub-Signature": {"sha256=00"}, "X-Sortie-Webhook-Token": {testSecret}}, true},
		{"jira good signature, wrong token", Jira, testSecret, http.Header{"X-Hub-Signature": {"sha256=" + good}, "X-Sortie-Webhook-Token": {"nope"}}, true},

		{"github in Jira's header", GitHub, testSecret, http.Header{"X-Hub-Signature": {"sha256=" + good}}, false},
		{"the token is Jira's only", GitHub, testSecret, http.Header{"X-Sortie-Webhook-Token": {testSecret}}, false},
		{"linear token", Linear, testSecret, http.Header{"X-Sortie-Webhook-Token": {testSecret}}, false},
		{"jira sha1", Jira, testSecret, http.Header{"X-Hub-Signature": {"sha1=" + good[:40]}}, false},
		{"jira sha512 prefix", Jira, testSecret, http.Header{"X-Hub-Signature": {"sha512=" + good}}, false},
		{"signature with trailing bytes", GitHub, testSecret, http.Header{"X-Hub-Signature-256": {"sha256=" + good + "00"}}, false},
		{"odd hex", Linear, testSecret, http.Header{"Linear-Signature": {good[1:]}}, false},
		{"empty secret", GitHub, "", http.Header{"X-Hub-Signature-256": {"sha256=" + signHex("", body)}}, false},
		{"empty token and empty secret", Jira, "", http.Header{"X-Sortie-Webhook-Token": {""}}, false},
		{"unknown kind", "gitlab", testSecret, http.Header{"X-Gitlab-Token": {testSecret}}, false},
		{"nothing", GitHub, testSecret, http.Header{}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := Verify(c.kind, c.secret, c.h, body)
			if c.ok {
				if err != nil {
					t.Errorf("Verify: %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, ErrUnauthorized) {
				t.Fatalf("Verify: %v, want an error wrapping ErrUnauthorized", err)
			}
			msg := err.Error()
			for _, vs := range c.h {
				for _, v := range vs {
					if len(v) >= 8 && strings.Contains(msg, v) {
						t.Errorf("the error repeats a header's value: %s", msg)
					}
				}
			}
			if strings.Contains(msg, testSecret) || strings.Contains(msg, good) {
				t.Errorf("the error repeats the secret or the signature: %s", msg)
			}
		})
	}
}

// A signature is over the exact bytes received: one byte changed anywhere fails it.
func TestVerify_EveryByteCounts(t *testing.T) {
	body := readFixture(t, "linear_comment_create.json")
	h := http.Header{"Linear-Signature": {signHex(testSecret, body)}}
	for i := 0; i < len(body); i += 97 {
		changed := append([]byte(nil), body...)
		changed[i] ^= 0x20
		if err := Verify(Linear, testSecret, h, changed); err == nil {
			t.Fatalf("a body changed at byte %d verified", i)
		}
	}
	if err := Verify(Linear, testSecret, h, body); err != nil {
		t.Fatalf("the unchanged body: %v", err)
	}
}
