package server

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
	"time"

	"sortie/internal/orchestrator"
)

// awkward are strings that exercise every escaping rule of encoding/json.
var awkward = []string{
	"", "plain", `quote " and backslash \`, "tab\tnew\nline\rret\bback\fform", "\x00\x01\x1f\x7f",
	"<script>&amp;</script>", "line\u2028para\u2029", "invalid \xff\xfe utf-8 \xc3", "emoji 🚀 é ß 中文",
	"cut rune \xe2\x82", "\"\\/",
}

func TestAppendRunning_MatchesEncodingJSON(t *testing.T) {
	now := t0
	views := []orchestrator.RunningView{runningView(1), {}}
	for i, s := range awkward {
		v := runningView(i)
		v.IssueID, v.Identifier, v.Title, v.State, v.SessionID = s, s, s, s, s
		v.Host, v.Workspace, v.LastEvent, v.LastMessage, v.Model, v.Stopping = s, s, s, s, s, s
		views = append(views, v)
	}
	for i, f := range []float64{0, 0.42, 1e-7, 1.5e-6, 1e21, 123456789.123456, -3.25, 1e20, math.MaxFloat64, 5e-324} {
		v := runningView(i)
		v.CostUSD = f
		v.StartedAt = now.Add(-time.Duration(i*i*1000) * time.Millisecond)
		v.LastEventAt = time.Date(2026, 1, 2, 3, 4, 5, i*123456789%1e9, time.FixedZone("X", -7*3600))
		v.Tokens.Input, v.RunID, v.PID = -int64(i), math.MaxInt64, -i
		views = append(views, v)
	}
	future := runningView(1)
	future.StartedAt = now.Add(time.Hour) // elapsed is negative
	views = append(views, future)

	for i, v := range views {
		want, err := json.Marshal(runningOf(v, now))
		if err != nil {
			t.Fatal(err)
		}
		if got := appendRunning(nil, v, now); !bytes.Equal(got, want) {
			t.Errorf("view %d:\n got %s\nwant %s", i, got, want)
		}
	}
}

func TestAppendState_MatchesEncodingJSON(t *testing.T) {
	for _, snap := range []orchestrator.Snapshot{stateSnapshot(), baseSnapshot(), {}} {
		now := t0
		head, tail := stateParts(snap, now, "1.2.3", "/w/WORKFLOW.md")
		got, err := appendState(nil, head, snap.Running, now, tail)
		if err != nil {
			t.Fatal(err)
		}
		running := make([]runningJSON, len(snap.Running))
		for i, v := range snap.Running {
			running[i] = runningOf(v, now)
		}
		want, err := json.Marshal(stateBody{head, running, tail})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("appendState:\n got %s\nwant %s", got, want)
		}
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range awkward {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := appendString(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("appendString(%q) = %s, want %s", s, got, want)
		}
	})
}
