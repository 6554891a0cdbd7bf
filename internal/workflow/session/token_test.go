package session

import (
	"bytes"
	"encoding/base64"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// signRaw signs arbitrary payload JSON the way Sign does, to reach the
// payload checks that only run after a valid signature.
func signRaw(json string) string {
	body := base64.RawURLEncoding.EncodeToString([]byte(json))
	return body + "." + mac(testKey, body)
}

const validJSON = `{"wf":"w","act":"","skill":"","cond":"","v":"1","seq":0,"ts":0,"sid":"s","aid":"","pcp":[],"pcpt":0}`

func TestParse_PayloadFieldsAreStrict(t *testing.T) {
	if _, err := Parse(testKey, signRaw(validJSON)); err != nil {
		t.Fatalf("valid payload: %v", err)
	}
	cases := []struct {
		name, json, field string
	}{
		{"missing field", strings.Replace(validJSON, `"skill":"",`, "", 1), "skill"},
		{"null field", strings.Replace(validJSON, `"pcp":[]`, `"pcp":null`, 1), "pcp"},
		{"extra field", strings.Replace(validJSON, `"pcpt":0`, `"pcpt":0,"events":[]`, 1), "events"},
		{"other-case key", strings.Replace(validJSON, `"wf":"w"`, `"WF":"w"`, 1), "WF"},
		{"negative seq", strings.Replace(validJSON, `"seq":0`, `"seq":-1`, 1), "seq"},
		{"string ts", strings.Replace(validJSON, `"ts":0`, `"ts":"0"`, 1), "ts"},
		{"empty pending id", strings.Replace(validJSON, `"pcp":[]`, `"pcp":[""]`, 1), "pcp"},
		{"not an object", `[1,2]`, "JSON object"},
		// A trace token signed with the same key must not pass as a session token.
		{"trace token payload", `{"sid":"s","act":"a","from":"","to":"","n":0,"t0":0,"t1":0,"ts":0,"events":[]}`, "wf"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(testKey, signRaw(tc.json))
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("Parse(%s) error = %v, want malformed", tc.json, err)
			}
			if !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("error %q does not name %q", err, tc.field)
			}
		})
	}
}

func TestParse_RejectsNonCanonicalBase64(t *testing.T) {
	json := validJSON
	for len(json)%3 == 0 { // make the padded encoding differ from the raw one
		json += " "
	}
	body := base64.URLEncoding.EncodeToString([]byte(json))
	_, err := Parse(testKey, body+"."+mac(testKey, body))
	if !errors.Is(err, ErrMalformed) {
		t.Fatalf("padded payload: error = %v, want malformed", err)
	}
}

func TestSign_RejectsEmptyPendingID(t *testing.T) {
	if _, err := Sign(testKey, Payload{Pending: []string{"a", ""}}); err == nil {
		t.Fatal("Sign accepted an empty pending checkpoint id")
	}
	if _, err := Sign(nil, Payload{}); err == nil {
		t.Fatal("Sign accepted an empty key")
	}
}

// FuzzParse checks the token verifier on its own: it never panics, a token
// verifies only under the key that signed it, and Sign then Parse returns the
// payload signed.
func FuzzParse(f *testing.F) {
	otherKey := bytes.Repeat([]byte{2}, KeySize)
	good, _ := Sign(testKey, Payload{Workflow: "w", Version: "1.0.0", SessionID: "s", Pending: []string{"cp"}, PendingAt: 5})
	for _, seed := range []string{good, signRaw(validJSON), "", ".", "a.b", good + "x", strings.ToUpper(good)} {
		f.Add(seed, "w", "act", "s", uint64(3), "cp")
	}
	f.Fuzz(func(t *testing.T, token, wf, act, sid string, seq uint64, pending string) {
		p, err := Parse(testKey, token)
		if err == nil {
			body, sig, _ := strings.Cut(token, ".")
			if mac(testKey, body) != sig {
				t.Fatalf("Parse accepted %q without its key's signature", token)
			}
			if _, err := Parse(otherKey, token); err == nil {
				t.Fatalf("token %q verified under two keys", token)
			}
			if again, err := Sign(testKey, p); err != nil {
				t.Fatalf("Sign(parsed %+v): %v", p, err)
			} else if q, err := Parse(testKey, again); err != nil || !reflect.DeepEqual(p, q) {
				t.Fatalf("re-signed %+v parses as %+v, %v", p, q, err)
			}
		} else {
			var e *Error
			if !errors.As(err, &e) || (e.Kind != KindMalformed && e.Kind != KindBadSignature) {
				t.Fatalf("Parse error %v is not malformed or bad signature", err)
			}
		}
		// Payload strings come from JSON (tool arguments, library files), so they
		// are valid UTF-8; encoding/json would replace anything else.
		for _, s := range []string{wf, act, sid, pending} {
			if !utf8.ValidString(s) {
				return
			}
		}
		in := Payload{Workflow: wf, Activity: act, SessionID: sid, Seq: seq, TS: int64(seq >> 1), Pending: []string{}}
		if pending != "" {
			in.Pending = []string{pending}
		}
		tok, err := Sign(testKey, in)
		if err != nil {
			t.Fatalf("Sign(%+v): %v", in, err)
		}
		out, err := Parse(testKey, tok)
		if len(tok) > MaxTokenLen {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("over-long token: %v", err)
			}
			return
		}
		if err != nil {
			t.Fatalf("Parse(Sign(%+v)): %v", in, err)
		}
		if !reflect.DeepEqual(in, out) {
			t.Fatalf("round trip %+v → %+v", in, out)
		}
		if _, err := Parse(otherKey, tok); !errors.Is(err, ErrBadSignature) {
			t.Fatalf("token verified under another key: %v", err)
		}
	})
}
