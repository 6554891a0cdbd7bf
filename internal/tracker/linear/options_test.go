package linear

import (
	"errors"
	"testing"

	"sortie/internal/tracker"
)

// TestParseOptions: the `linear:` block's agent_reads, written exactly, and the message
// of a wrong value, word for word.
func TestParseOptions(t *testing.T) {
	for _, c := range []struct {
		raw  map[string]any
		want bool
	}{
		{nil, false},
		{map[string]any{"agent_reads": nil}, false},
		{map[string]any{"agent_reads": ""}, false},
		{map[string]any{"agent_reads": "scoped"}, false},
		{map[string]any{"agent_reads": "unrestricted"}, true},
		{map[string]any{"agent_read": "unrestricted"}, false}, // unknown: config warns
	} {
		got, err := parseOptions(c.raw)
		if err != nil || got.agentReadsUnrestricted != c.want {
			t.Errorf("%v: got %v, %v; want %v", c.raw, got.agentReadsUnrestricted, err, c.want)
		}
	}
	for v, want := range map[any]string{
		"everything":    "config: linear.agent_reads: must be scoped (the default: an agent reads only its own issue, team and project) or unrestricted (got everything)",
		" unrestricted": "config: linear.agent_reads: must be scoped (the default: an agent reads only its own issue, team and project) or unrestricted (got  unrestricted)",
		true:            "config: linear.agent_reads: must be scoped (the default: an agent reads only its own issue, team and project) or unrestricted (got true)",
	} {
		_, err := parseOptions(map[string]any{"agent_reads": v})
		var te *tracker.Error
		if !errors.As(err, &te) || te.Kind != tracker.ErrPayload || te.Message != want {
			t.Errorf("%#v: err %v\nwant a %s: %s", v, err, tracker.ErrPayload, want)
		}
	}
}
