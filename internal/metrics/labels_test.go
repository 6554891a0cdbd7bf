package metrics

import (
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"sortie/internal/orchestrator"
)

func TestSanitizeLabel(t *testing.T) {
	tests := []struct {
		name, raw, want string
	}{
		{"clean model", "claude-sonnet-4-5-20250929", "claude-sonnet-4-5-20250929"},
		{"mcp tool", "mcp__sortie-tools__tracker_api", "mcp__sortie-tools__tracker_api"},
		{"bedrock model", "us.anthropic.claude-opus-4:0@v1/x+y", "us.anthropic.claude-opus-4:0@v1/x+y"},
		{"empty", "", "unknown"},
		{"blank", " \t\n", "unknown"},
		{"surrounding space", "  Bash ", "Bash"},
		{"spaces and quotes", `rm -rf "/"`, "rm_-rf__/_"},
		{"control characters", "a\x00b\nc", "a_b_c"},
		{"invalid UTF-8", "a\xffb", "a_b"},
		{"non-ASCII", "outil-été", "outil-_t_"},
		{"too long", strings.Repeat("x", 500), strings.Repeat("x", maxLabelLen)},
		{"too long and dirty", strings.Repeat("é", 500), strings.Repeat("_", maxLabelLen)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := sanitizeLabel(tt.raw); got != tt.want {
				t.Errorf("sanitizeLabel(%q) = %q, want %q", tt.raw, got, tt.want)
			}
		})
	}
}

func TestToolLabel_DistinctValuesAreCappedAndTheRestFoldIntoOther(t *testing.T) {
	m := New("1.2.3")
	const tools = 3 * maxLabelValues
	for i := range tools {
		m.Observe(toolEvent(fmt.Sprintf("tool_%03d", i), false))
	}
	m.Observe(toolEvent("tool_000", true)) // admitted early: still its own series
	m.Observe(toolEvent("tool_999", true)) // never admitted: other

	fams := gather(t, m)
	// Two series (success, error) per admitted tool and for other.
	if got, want := len(fams["sortie_tool_calls_total"].GetMetric()), 2*(maxLabelValues+1); got != want {
		t.Errorf("sortie_tool_calls_total has %d series, want %d (%d tools, other, × 2 results)", got, want, maxLabelValues)
	}
	other := series(t, fams, "sortie_tool_calls_total", map[string]string{"tool": "other", "result": "success"})
	if got, want := other.GetCounter().GetValue(), float64(tools-maxLabelValues); got != want {
		t.Errorf("tool=other result=success counts %g, want %g", got, want)
	}
	if got := series(t, fams, "sortie_tool_calls_total", map[string]string{"tool": "other", "result": "error"}).GetCounter().GetValue(); got != 1 {
		t.Errorf("tool=other result=error counts %g, want 1", got)
	}
	if got := series(t, fams, "sortie_tool_calls_total", map[string]string{"tool": "tool_000", "result": "error"}).GetCounter().GetValue(); got != 1 {
		t.Errorf("tool=tool_000 result=error counts %g, want 1", got)
	}
}

func TestModelLabel_CappedAcrossTokensCostAndRequests(t *testing.T) {
	m := New("1.2.3")
	for i := range 2 * maxLabelValues {
		model := fmt.Sprintf("model-%d", i)
		m.Observe(tokenEvent(model, 1, 1, 1))
		m.Observe(orchestrator.Activity{Kind: orchestrator.ActivityRunFinished, Result: "succeeded", CostUSD: 0.5, Model: model})
	}
	for _, family := range []string{"sortie_tokens_total", "sortie_cost_usd_total", "sortie_api_requests_total"} {
		if got := testutil.CollectAndCount(m.reg, family); got > 3*(maxLabelValues+1) {
			t.Errorf("%s has %d series, want at most %d", family, got, 3*(maxLabelValues+1))
		}
	}
	fams := gather(t, m)
	if got := series(t, fams, "sortie_api_requests_total", map[string]string{"model": "other"}).GetCounter().GetValue(); got != maxLabelValues {
		t.Errorf("api_requests{model=other} = %g, want %d", got, maxLabelValues)
	}
	if got := series(t, fams, "sortie_cost_usd_total", map[string]string{"model": "other"}).GetCounter().GetValue(); got != 0.5*maxLabelValues {
		t.Errorf("cost_usd{model=other} = %g, want %g", got, 0.5*maxLabelValues)
	}
}

func TestBoundedLabel_RawValuesThatSanitizeAlikeShareASeries(t *testing.T) {
	m := New("1.2.3")
	m.Observe(toolEvent("my tool", false))
	m.Observe(toolEvent("my_tool", false))
	m.Observe(toolEvent(" my_tool ", false))
	got := series(t, gather(t, m), "sortie_tool_calls_total", map[string]string{"tool": "my_tool", "result": "success"})
	if v := got.GetCounter().GetValue(); v != 3 {
		t.Errorf("tool=my_tool counts %g, want 3", v)
	}
}

func TestBoundedLabel_RawCacheIsBounded(t *testing.T) {
	calls := 0
	b := newBoundedLabel(func(string) int { calls++; return calls })
	// Many raw strings that all sanitize to one value.
	for i := range 10 * maxRawValues {
		b.get(strings.Repeat(" ", i%7) + "x" + strings.Repeat(" ", i/7))
	}
	if len(b.byRaw) > maxRawValues {
		t.Errorf("raw cache holds %d entries, want at most %d", len(b.byRaw), maxRawValues)
	}
	if calls != 1 {
		t.Errorf("made %d series for one sanitized value, want 1", calls)
	}
}
