package session

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
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
