package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const capture = "../../internal/agent/claude/testdata/two_blocks_tool_call.jsonl"

func TestTranscripts_HaveTheAskedShape(t *testing.T) {
	data, err := os.ReadFile(capture)
	if err != nil {
		t.Fatal(err)
	}
	eight, err := toolTranscript(data, 8)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(eight, []byte(`"type":"tool_use"`)); n != 8 {
		t.Errorf("the 8-tool transcript has %d tool uses", n)
	}
	if n := bytes.Count(eight, []byte(`"type":"tool_result"`)); n != 8 {
		t.Errorf("the 8-tool transcript has %d tool results", n)
	}
	for i := range 8 {
		if !bytes.Contains(eight, []byte(`"toolu_`+string(rune('0'+i))+`_`)) {
			t.Errorf("tool call %d lacks a fresh id", i)
		}
	}
	long, err := longTranscript(data, 20000)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(long), "\n"), "\n")
	if len(lines) != 20000 {
		t.Fatalf("the long transcript has %d lines, want 20000", len(lines))
	}
	if !strings.Contains(lines[0], `"subtype":"init"`) || !strings.Contains(lines[len(lines)-1], `"type":"result"`) {
		t.Error("the long transcript must start with init and end with the result")
	}
	if _, err := toolTranscript([]byte(`{"type":"system","subtype":"init"}`), 1); err == nil {
		t.Error("a capture without a tool call must be refused")
	}
}

func TestStatistics(t *testing.T) {
	xs := []float64{5, 1, 4, 2, 3}
	if m := median(xs); m != 3 {
		t.Errorf("median = %v", m)
	}
	if m := median([]float64{1, 2, 3, 4}); m != 2.5 {
		t.Errorf("even median = %v", m)
	}
	var hundred []float64
	for i := 1; i <= 100; i++ {
		hundred = append(hundred, float64(i))
	}
	if p := percentile(hundred, 99); p != 99 {
		t.Errorf("p99 of 1..100 = %v", p)
	}
	if p := percentile(hundred, 50); p != 50 {
		t.Errorf("p50 of 1..100 = %v", p)
	}
	if xs[0] != 5 {
		t.Error("median sorted its input")
	}
}

func TestMetricValue_ReadsUnlabelledSamples(t *testing.T) {
	text := []byte("# HELP go_goroutines x\n# TYPE go_goroutines gauge\ngo_goroutines 42\ngo_goroutines_other 7\nprocess_open_fds 1.5e+01\n")
	if v := metricValue(text, "go_goroutines"); v != 42 {
		t.Errorf("go_goroutines = %v", v)
	}
	if v := metricValue(text, "process_open_fds"); v != 15 {
		t.Errorf("process_open_fds = %v", v)
	}
	if v := metricValue(text, "absent"); v != 0 {
		t.Errorf("absent = %v", v)
	}
}

func TestStartsLog_RoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "starts.log")
	at := time.Unix(0, 1700000000123456789)
	if err := os.WriteFile(path, []byte("1700000000123456789 B-7\ngarbage\n1700000000223456789 B-9\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := readStarts(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].issue != "B-7" || !got[0].at.Equal(at) || got[1].issue != "B-9" {
		t.Fatalf("starts = %+v", got)
	}
	if s, err := readStarts(filepath.Join(t.TempDir(), "none")); err != nil || s != nil {
		t.Fatalf("a missing log: %v, %v", s, err)
	}
}

func TestResourcesUsed_ReadsTheDaemonsLastLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sortie.log")
	log := `{"msg":"sortie started"}
sortie: open the dashboard
{"time":"x","level":"INFO","msg":"resources used","cpu_user_s":1.25,"cpu_system_s":0.5,"max_rss_kb":40960,"children_cpu_s":3.5}
`
	if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	u, err := resourcesUsed(path)
	if err != nil || u != (usage{cpu: 1.75, childCPU: 3.5, rssKiB: 40960}) {
		t.Fatalf("resourcesUsed = %+v, %v", u, err)
	}
	if err := os.WriteFile(path, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := resourcesUsed(path); err == nil {
		t.Fatal("a log without the line must be an error")
	}
}

// -agent-cpu: the fake agent uses at least the CPU time it is asked to burn (what it
// costs on top is the machine's business, not asserted).
func TestBurnCPU_UsesAtLeastWhatItIsAsked(t *testing.T) {
	before := cpuUsed()
	burnCPU(30 * time.Millisecond)
	if used := cpuUsed() - before; used < 30*time.Millisecond {
		t.Errorf("burnCPU(30ms) used %v of CPU", used)
	}
	before = cpuUsed()
	burnCPU(0)
	burnCPU(-time.Second)
	if used := cpuUsed() - before; used >= 30*time.Millisecond {
		t.Errorf("burnCPU of nothing used %v", used)
	}
}
