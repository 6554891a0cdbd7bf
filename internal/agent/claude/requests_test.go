package claude

import (
	"path/filepath"
	"testing"

	"sortie/internal/agent"
)

// requests counts the token_usage events that are new API requests (not revisions).
func requests(events []agent.Event) int {
	n := 0
	for _, e := range events {
		if e.Type == agent.EventTokenUsage && !e.Revision {
			n++
		}
	}
	return n
}

// TestTranslate_APIRequestsOnePerMessage: transcripts captured from claude 2.1.330 count
// one API request per assistant message id, however many content blocks repeat its usage,
// and the result's turn totals revise those figures rather than counting a request of
// their own (spec: claude-code-adapter, token accounting).
func TestTranslate_APIRequestsOnePerMessage(t *testing.T) {
	for _, c := range []struct {
		file       string
		want       int
		wantOutput int64
	}{
		{"two_blocks_tool_call.jsonl", 2, 50},
		{"tool_error.jsonl", 2, 15},
	} {
		t.Run(c.file, func(t *testing.T) {
			events, tr := run(t, readLines(t, filepath.Join("testdata", c.file))...)
			if got := requests(events); got != c.want {
				t.Errorf("API requests counted = %d, want %d (one per assistant message)", got, c.want)
			}
			if got := tr.usage().Output; got != c.wantOutput {
				t.Errorf("output tokens = %d, want the result's %d", got, c.wantOutput)
			}
			last := events[len(events)-1]
			for i := len(events) - 1; i >= 0; i-- {
				if events[i].Type == agent.EventTokenUsage {
					last = events[i]
					break
				}
			}
			if !last.Revision || last.Message != "turn totals from the result" {
				t.Errorf("last token_usage = %+v, want the result's totals as a revision", last)
			}
		})
	}
}

// TestTranslate_ResultUsageIsFallback: a turn whose assistant messages reported no usage
// takes its figures from the result, and that counts as the turn's one request.
func TestTranslate_ResultUsageIsFallback(t *testing.T) {
	events, tr := run(t,
		`{"type":"system","subtype":"init","session_id":"s1","model":"claude-sonnet-4-5"}`,
		`{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"done"}]}}`,
		`{"type":"result","subtype":"success","is_error":false,"session_id":"s1","usage":{"input_tokens":12,"output_tokens":7,"cache_read_input_tokens":3}}`,
	)
	if got := requests(events); got != 1 {
		t.Errorf("API requests counted = %d, want 1 (the result's usage is the fallback)", got)
	}
	if u := tr.usage(); u.Input != 12 || u.Output != 7 || u.CacheRead != 3 || u.Total != 19 {
		t.Errorf("usage = %+v, want the result's 12/7/3, total 19", u)
	}
}
