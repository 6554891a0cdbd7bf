package metrics

import (
	"encoding/json"
	"os"
	"regexp"
	"runtime"
	"slices"
	"sortie/internal/tracker"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
)

const dashboardPath = "../../examples/grafana-dashboard.json"

// dashboardQueries returns every PromQL text of a Grafana dashboard: panel targets'
// expr and template variables' query and definition, wherever they nest.
func dashboardQueries(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if s, ok := x.(string); ok && (k == "expr" || k == "query" || k == "definition") {
					out = append(out, s)
				}
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(doc)
	return out
}

var (
	// Label matchers and the label lists of by, without, on, ignoring and group_*
	// hold label names (go_version) and values, never metric names.
	labelSelector = regexp.MustCompile(`\{[^}]*\}`)
	labelList     = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	metricName    = regexp.MustCompile(`\b(?:sortie|go|process|promhttp)_[A-Za-z0-9_:]*`)
)

// referencedMetrics returns the metric names a PromQL text uses, for the families this
// daemon exports (sortie_*, and the Go, process and handler collectors').
func referencedMetrics(query string) []string {
	q := labelSelector.ReplaceAllString(query, "{}")
	q = labelList.ReplaceAllString(q, "")
	return metricName.FindAllString(q, -1)
}

func TestReferencedMetrics(t *testing.T) {
	tests := []struct {
		query string
		want  []string
	}{
		{`sum(sortie_sessions_running{job=~"$job"})`, []string{"sortie_sessions_running"}},
		{`max by (version, go_version) (sortie_build_info{go_version!="x"})`, []string{"sortie_build_info"}},
		{`histogram_quantile(0.9, sum by (le) (rate(sortie_run_duration_seconds_bucket[1h])))`, []string{"sortie_run_duration_seconds_bucket"}},
		{`rate(a_sum[5m]) / on (instance) group_left (go_version) sortie_build_info`, []string{"sortie_build_info"}},
		{`label_values(sortie_build_info{job=~"$job"}, instance)`, []string{"sortie_build_info"}},
		{`sum(go_goroutines) + process_resident_memory_bytes`, []string{"go_goroutines", "process_resident_memory_bytes"}},
	}
	for _, tt := range tests {
		if got := referencedMetrics(tt.query); !slices.Equal(got, tt.want) {
			t.Errorf("referencedMetrics(%q) = %q, want %q", tt.query, got, tt.want)
		}
	}
}

// exportedBy reports whether name is a family fams holds, or a _bucket, _sum or _count
// series of one of its histograms (or _sum, _count of a summary).
func exportedBy(fams map[string]*dto.MetricFamily, name string) bool {
	if _, ok := fams[name]; ok {
		return true
	}
	for suffix, types := range map[string][]dto.MetricType{
		"_bucket": {dto.MetricType_HISTOGRAM},
		"_sum":    {dto.MetricType_HISTOGRAM, dto.MetricType_SUMMARY},
		"_count":  {dto.MetricType_HISTOGRAM, dto.MetricType_SUMMARY},
	} {
		base, ok := strings.CutSuffix(name, suffix)
		if mf, found := fams[base]; ok && found && slices.Contains(types, mf.GetType()) {
			return true
		}
	}
	return false
}

func TestGrafanaDashboard_UsesOnlyMetricsWeExport(t *testing.T) {
	m := New("1.2.3")
	m.ReadSessions(fakeSnapshot(twoRunning()))
	observeAll(m, script())
	// A remote tracker's budget, as GitHub reports it.
	m.SetRateLimits(func() []tracker.RateLimit {
		return []tracker.RateLimit{{Resource: "core", Limit: 5000, Remaining: 4999}}
	})
	fams := gather(t, m)

	queries := dashboardQueries(t, dashboardPath)
	if len(queries) < 10 {
		t.Fatalf("%s: found %d queries, want a dashboard (is the file a Grafana export?)", dashboardPath, len(queries))
	}
	used := map[string]bool{}
	for _, q := range queries {
		for _, name := range referencedMetrics(q) {
			if strings.HasPrefix(name, "process_") && runtime.GOOS != "linux" {
				continue // the process collector exports these on Linux only
			}
			used[strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_sum"), "_count")] = true
			if !exportedBy(fams, name) {
				t.Errorf("%s: query %q uses %s, which New's registry does not export", dashboardPath, q, name)
			}
		}
	}
	// And the other way: a family nobody can see on the dashboard is one an operator
	// will not know about.
	for name := range families {
		if !used[name] {
			t.Errorf("%s: no panel uses %s", dashboardPath, name)
		}
	}
}

func TestExportedBy_HistogramSuffixesOnlyForHistograms(t *testing.T) {
	m := New("1.2.3")
	m.ReadSessions(fakeSnapshot(twoRunning()))
	observeAll(m, script())
	fams := gather(t, m)
	tests := []struct {
		name string
		want bool
	}{
		{"sortie_run_duration_seconds_bucket", true},
		{"sortie_poll_duration_seconds_count", true},
		{"sortie_poll_duration_seconds_sum", true},
		{"sortie_dispatches_total", true},
		{"sortie_dispatches_total_count", false}, // a counter has no _count series
		{"sortie_runs_total", false},
		{"sortie_run_duration_seconds_quantile", false},
	}
	for _, tt := range tests {
		if got := exportedBy(fams, tt.name); got != tt.want {
			t.Errorf("exportedBy(%s) = %v, want %v", tt.name, got, tt.want)
		}
	}
}
