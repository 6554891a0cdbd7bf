package gemini

import (
	"bytes"
	"encoding/json"
	"slices"
)

// repairTranscript is the transcript old of session id, fit to resume. The CLI
// (0.61.0) records each tool call's result twice: in the model's message (its
// toolCalls' result) and as the user message that follows it; on --resume it sends
// both, so every function response of the session reaches the API twice, and the
// Gemini API rejects a request whose function responses do not pair with its calls
// (400; upstream google-gemini/gemini-cli issue 29365). The repair drops every user
// message that holds only function responses to calls that already have one, in the
// record lines and in the history a resume writes back ({"$set": {"messages": ...}}).
// Everything else is kept byte for byte; a file that is not this session's, or that
// is not JSON lines, is returned as it was.
func repairTranscript(old []byte, id string) []byte {
	lines := bytes.Split(old, []byte("\n"))
	var head struct {
		SessionID string `json:"sessionId"`
	}
	if len(lines) == 0 || json.Unmarshal(lines[0], &head) != nil || head.SessionID != id {
		return old
	}
	out := make([][]byte, 0, len(lines))
	answered := map[string]bool{} // the calls whose response the history holds so far
	changed := false
	for _, l := range lines {
		var rec, set map[string]json.RawMessage
		var msgs []json.RawMessage
		switch {
		case json.Unmarshal(l, &rec) != nil:
		case rec["$set"] != nil:
			if json.Unmarshal(rec["$set"], &set) != nil || json.Unmarshal(set["messages"], &msgs) != nil || msgs == nil {
				break
			}
			answered = map[string]bool{} // the history from here on: what came before no longer counts
			kept := slices.DeleteFunc(slices.Clone(msgs), func(m json.RawMessage) bool { return duplicate(m, answered) })
			if len(kept) != len(msgs) {
				set["messages"], _ = json.Marshal(kept)
				rec["$set"], _ = json.Marshal(set)
				l, _ = json.Marshal(rec)
				changed = true
			}
		case duplicate(l, answered):
			changed = true
			continue
		}
		out = append(out, l)
	}
	if !changed {
		return old
	}
	return bytes.Join(out, []byte("\n"))
}

// duplicate reports whether message m is a user message of function responses only,
// each to a call answered already; otherwise it marks the calls m answers.
func duplicate(m []byte, answered map[string]bool) bool {
	var msg struct {
		Type    string          `json:"type"`
		Content json.RawMessage `json:"content"`
		Calls   []struct {
			Result []part `json:"result"`
		} `json:"toolCalls"`
	}
	if json.Unmarshal(m, &msg) != nil {
		return false
	}
	for _, c := range msg.Calls {
		for _, p := range c.Result {
			if p.Response != nil && p.Response.ID != "" {
				answered[p.Response.ID] = true
			}
		}
	}
	var parts []part
	if msg.Type != "user" || json.Unmarshal(msg.Content, &parts) != nil || len(parts) == 0 {
		return false
	}
	all := true
	for _, p := range parts {
		if p.Response == nil || p.Response.ID == "" {
			return false
		}
		all = all && answered[p.Response.ID]
	}
	if all {
		return true
	}
	for _, p := range parts {
		answered[p.Response.ID] = true
	}
	return false
}

// part is a content part of a transcript message, as far as the repair reads it.
type part struct {
	Response *struct {
		ID string `json:"id"`
	} `json:"functionResponse"`
}
