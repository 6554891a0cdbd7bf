package session

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// MaxTokenLen bounds the length of a token accepted by Parse, in bytes. A
// payload holds ids and a short list of pending checkpoints; anything longer
// is rejected before any decoding.
const MaxTokenLen = 16 << 10

// Payload is the signed content of a session token, with the spec's field
// names (workflow-tools-api.md, "Session Token"). The field order here is the
// encoding order.
type Payload struct {
	Workflow  string   `json:"wf"`    // workflow id, bound at start_session
	Activity  string   `json:"act"`   // current activity id, "" before the first next_activity
	Skill     string   `json:"skill"` // last skill loaded by get_skill
	Cond      string   `json:"cond"`  // transition condition last claimed by next_activity
	Version   string   `json:"v"`     // workflow version at session start
	Seq       uint64   `json:"seq"`   // session sequence the token was issued at
	TS        int64    `json:"ts"`    // Unix seconds when the token was issued
	SessionID string   `json:"sid"`   // session UUID
	AgentID   string   `json:"aid"`   // agent id stamped by start_session(agent_id)
	Pending   []string `json:"pcp"`   // pending checkpoint ids; never nil once decoded
	PendingAt int64    `json:"pcpt"`  // Unix seconds when pcp was filled, 0 when empty
}

// payloadFields are the JSON keys of Payload, all required on decode.
var payloadFields = []string{"wf", "act", "skill", "cond", "v", "seq", "ts", "sid", "aid", "pcp", "pcpt"}

const sigHexLen = 2 * sha256.Size

// Sign encodes p as a token signed with key. A nil Pending is encoded as an
// empty array. It fails if key is empty or a pending checkpoint id is empty
// (Parse would reject the result).
func Sign(key []byte, p Payload) (string, error) {
	if len(key) == 0 {
		return "", fmt.Errorf("session: sign: empty key")
	}
	if slices.Contains(p.Pending, "") {
		return "", fmt.Errorf("session: sign: empty pending checkpoint id in pcp %q", p.Pending)
	}
	if p.Pending == nil {
		p.Pending = []string{}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	if err := enc.Encode(p); err != nil {
		// Only strings, integers and a string slice: cannot fail.
		return "", fmt.Errorf("session: sign: %w", err)
	}
	body := base64.RawURLEncoding.EncodeToString(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	return body + "." + mac(key, body), nil
}

func mac(key []byte, body string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(body))
	return hex.EncodeToString(m.Sum(nil))
}

// Parse checks token's signature under key and decodes its payload. It does
// not consult any Store, so a genuine but stale token parses; use
// Store.Verify on every tool call. Errors are *Error of KindMalformed or
// KindBadSignature.
func Parse(key []byte, token string) (Payload, error) {
	if token == "" {
		return Payload{}, malformed("it is empty")
	}
	if len(token) > MaxTokenLen {
		return Payload{}, malformed(fmt.Sprintf("it is %d bytes, longer than the %d allowed", len(token), MaxTokenLen))
	}
	body, sig, ok := strings.Cut(token, ".")
	if !ok || sig == "" {
		return Payload{}, malformed("missing signature")
	}
	if body == "" {
		return Payload{}, malformed("missing payload")
	}
	if len(sig) != sigHexLen {
		return Payload{}, badSignature()
	}
	// Compare the hex text itself, in constant time: an upper-case or
	// otherwise re-spelled signature is not the token that was issued.
	if !hmac.Equal([]byte(mac(key, body)), []byte(sig)) {
		return Payload{}, badSignature()
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(body)
	if err != nil {
		return Payload{}, malformed("payload is not unpadded base64url")
	}
	return decodePayload(raw)
}

// decodePayload decodes signed JSON, demanding exactly the spec's fields.
// Reaching it requires a valid signature, so a failure here means the key is
// shared with a signer of another format (a trace token, say).
func decodePayload(raw []byte) (Payload, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return Payload{}, malformed("payload is not a JSON object")
	}
	var bad []string
	for _, f := range payloadFields {
		if v, ok := fields[f]; !ok || string(v) == "null" {
			bad = append(bad, f)
		}
	}
	for f := range fields {
		if !slices.Contains(payloadFields, f) {
			bad = append(bad, f)
		}
	}
	var p Payload
	if len(bad) == 0 {
		if err := json.Unmarshal(raw, &p); err != nil {
			return Payload{}, malformed("missing or invalid token fields: " + err.Error())
		}
		if slices.Contains(p.Pending, "") {
			bad = append(bad, "pcp")
		}
	}
	if len(bad) > 0 {
		slices.Sort(bad)
		return Payload{}, malformed("missing or invalid token fields: " + strings.Join(bad, ", "))
	}
	return p, nil
}

func malformed(why string) *Error {
	return &Error{Kind: KindMalformed, msg: "session token is malformed (" + why +
		"); pass the session_token exactly as the most recent response returned it, or call start_session for a new session"}
}

func badSignature() *Error {
	return &Error{Kind: KindBadSignature, msg: "session token signature verification failed: the token was altered or was not issued by this server; " +
		"pass the session_token from the most recent response unchanged, or call start_session for a new session"}
}
