package mock

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParseEventLine(t *testing.T) {
	tests := []struct {
		line    string
		want    wireEvent
		wantErr bool
	}{
		{`{"type":"usage","input_tokens":5,"output_tokens":2,"model":"m"}`, wireEvent{Type: "usage", InputTokens: 5, OutputTokens: 2, Model: "m"}, false},
		{`  {"type":"result","outcome":"success","extra":{"x":1}}  `, wireEvent{Type: "result", Outcome: "success"}, false},
		{`{"type":"notification","message":"` + strings.Repeat("é", 3000) + `"}`, wireEvent{Type: "notification", Message: strings.Repeat("é", maxWireString/2)}, false},
		{`not json`, wireEvent{}, true},
		{`[1,2]`, wireEvent{}, true},
		{`{"message":"no type"}`, wireEvent{}, true},
		{`{"type":"usage","input_tokens":-1}`, wireEvent{}, true},
		{`{"type":"usage","input_tokens":1e30}`, wireEvent{}, true},
		{`{"type":"usage","output_tokens":"12"}`, wireEvent{}, true},
		{`{"type":"session_started","session_id":"` + strings.Repeat("x", 300) + `"}`, wireEvent{}, true},
	}
	for _, tt := range tests {
		got, err := parseEventLine([]byte(tt.line))
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("parseEventLine(%.60q): want (%+v, err=%v), got (%+v, %v)", tt.line, tt.want, tt.wantErr, got, err)
		}
	}
}

func TestExcerpt_CutsOnRuneBoundary(t *testing.T) {
	line := []byte(strings.Repeat("a", maxMalformed-1) + "é" + strings.Repeat("b", 1<<20))
	got := excerpt(line)
	if len(got) != maxMalformed-1 || !utf8.ValidString(got) {
		t.Errorf("excerpt: want %d valid bytes, got %d (valid %v)", maxMalformed-1, len(got), utf8.ValidString(got))
	}
}

// FuzzParseEventLine: any line either fails to parse (a malformed event) or yields an
// event with a type, counts in range and bounded valid UTF-8 strings, which survives a
// round trip through the child's encoder unchanged.
func FuzzParseEventLine(f *testing.F) {
	for _, seed := range []string{
		`{"type":"session_started","session_id":"0b7e1b8e-4a51-4f8e-9d1e-2a7a3f0c9b11","model":"mock-model"}`,
		`{"type":"notification","message":"mock: turn 1 step 1/3"}`,
		`{"type":"tool_result","name":"Bash","duration_ms":40,"error":true,"message":"boom"}`,
		`{"type":"usage","input_tokens":1200,"output_tokens":300,"cache_read_tokens":7,"api_duration_ms":3}`,
		`{"type":"result","outcome":"failure","message":"x"}`,
		`{"type":"result","outcome":"\u00e9\ud800"}`,
		`{"type":1}`, `{}`, `null`, `{"type":"x","input_tokens":9223372036854775807}`, "\xff\xfe", `{"type":"a"}{"type":"b"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		ev, err := parseEventLine(line)
		m := excerpt(line)
		if len(m) > maxMalformed || !utf8.ValidString(m) {
			t.Fatalf("excerpt: want at most %d valid bytes, got %d", maxMalformed, len(m))
		}
		if err != nil {
			return
		}
		if ev.Type == "" {
			t.Fatal("parsed event without a type")
		}
		for _, n := range []int64{ev.InputTokens, ev.OutputTokens, ev.CacheReadTokens, ev.APIDurationMS, ev.DurationMS} {
			if n < 0 || n > maxWireCount {
				t.Fatalf("count out of range: %d", n)
			}
		}
		for _, s := range []string{ev.Type, ev.SessionID, ev.Model, ev.Message, ev.Name, ev.Outcome} {
			if len(s) > maxWireString || !utf8.ValidString(s) {
				t.Fatalf("string not bounded valid UTF-8: %q", s)
			}
		}
		again, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		back, err := parseEventLine(again)
		if err != nil || back != ev {
			t.Fatalf("round trip: want %+v, got %+v (%v)", ev, back, err)
		}
	})
}

// BenchmarkParseEventLine is the mock's per-line cost (encoding/json; the mock is not
// the hot path, the real adapters are).
func BenchmarkParseEventLine(b *testing.B) {
	line := []byte(`{"type":"usage","input_tokens":1200,"output_tokens":300,"cache_read_tokens":0,"model":"mock-model","api_duration_ms":40}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := parseEventLine(line); err != nil {
			b.Fatal(err)
		}
	}
}
