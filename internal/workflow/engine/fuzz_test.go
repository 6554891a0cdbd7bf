package engine

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzCall sends arbitrary arguments to every tool, with "$tok" replaced by the
// session's newest token: a call never fails as internal_error (a recovered panic or
// an unexpected Go error), its body always encodes as JSON, and a successful token
// tool always returns a token in both _meta and the body.
func FuzzCall(f *testing.F) {
	for _, s := range []string{
		`{}`, `null`, `[]`, `"x"`, `{"session_token":"$tok"}`,
		`{"session_token":"$tok","activity_id":"start"}`,
		`{"session_token":"$tok","activity_id":"work","step_manifest":[{"step_id":"read","output":"x"}],"activity_manifest":[]}`,
		`{"session_token":"$tok","checkpoint_id":"go","option_id":"approve"}`,
		`{"session_token":"$tok","checkpoint_id":"go","auto_advance":false}`,
		`{"session_token":"$tok","checkpoint_id":"go","auto_advance":true,"condition_not_met":true}`,
		`{"session_token":"$tok","activity_id":"start","checkpoint_id":"go"}`,
		`{"session_token":"$tok","step_id":"read"}`,
		`{"session_token":"$tok","resource_index":"meta/005"}`,
		`{"session_token":"$tok","trace_tokens":["a.b","$tok"]}`,
		`{"session_token":"$tok","summary":false}`,
		`{"workflow_id":"flow","session_token":"$tok","agent_id":"a"}`,
		`{"workflow_id":"flow","unknown":1}`,
	} {
		for i := range specs {
			f.Add(uint8(i), []byte(s))
		}
	}
	lib := writeLibrary(f, flowFiles)
	f.Fuzz(func(t *testing.T, tool uint8, args []byte) {
		h := newHarness(t, lib)
		start := h.start("flow")
		tok, _ := start["session_token"].(string)
		spec := specs[int(tool)%len(specs)]
		args = bytes.ReplaceAll(args, []byte("$tok"), []byte(tok))
		// The first call enters an activity, so that checkpoint and skill tools have
		// something to act on; the second is the fuzzed one.
		if bytes.Contains(args, []byte(`"go"`)) {
			h.raw(Caller{}, ToolNextActivity, obj{"session_token": tok, "activity_id": "start"})
		}
		resp := h.e.Call(t.Context(), Caller{}, spec.Name, args)
		b, err := json.Marshal(resp.Body)
		if err != nil {
			t.Fatalf("%s: body does not encode: %v", spec.Name, err)
		}
		if eb, ok := resp.Body.(errorBody); ok && eb.Kind == KindInternal {
			t.Fatalf("%s(%s): internal error: %s", spec.Name, args, eb.Error)
		}
		if resp.IsError || !spec.traced {
			return
		}
		if resp.Meta["session_token"] == nil || !bytes.Contains(b, []byte(`"session_token"`)) {
			t.Fatalf("%s: success without a session token in _meta and body: %s", spec.Name, b)
		}
	})
}
