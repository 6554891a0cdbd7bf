package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"sortie/internal/store"
)

func TestHistory_NewestTenCompletedRunsOfTheIssue(t *testing.T) {
	var runs []seedRun
	for i := 1; i <= 12; i++ {
		r := seedRun{issue: "42", attempt: i, status: store.StatusSucceeded, started: t0.Add(time.Duration(i) * time.Hour)}
		if i%3 == 0 {
			r.status, r.err = store.StatusFailed, fmt.Sprintf("agent turn error: attempt %d", i)
		}
		runs = append(runs, r)
		// Another issue's runs interleave and must not show.
		runs = append(runs, seedRun{issue: "43", attempt: i, status: store.StatusFailed, err: "x", started: t0})
	}
	// The run in progress (this session's) is not history yet.
	runs = append(runs, seedRun{issue: "42", attempt: 13, status: store.StatusRunning, started: t0.Add(13 * time.Hour)})
	path, _ := seedDB(t, runs...)

	got, isErr := callTool(t, NewHistory(openRO(t, path), "42"), "{}")
	if isErr {
		t.Fatalf("workspace_history failed: %s", got)
	}
	var entries []string
	for i := 12; i >= 3; i-- {
		started := t0.Add(time.Duration(i) * time.Hour)
		errJSON := "null"
		status := "succeeded"
		if i%3 == 0 {
			status, errJSON = "failed", fmt.Sprintf(`"agent turn error: attempt %d"`, i)
		}
		entries = append(entries, fmt.Sprintf(`{"attempt":%d,"agent_adapter":"claude-code","started_at":"%s","completed_at":"%s","status":"%s","outcome":"%s","error":%s}`,
			i, started.Format(time.RFC3339), started.Add(15*time.Minute).Format(time.RFC3339), status, status, errJSON))
	}
	want := `{"issue_id":"42","entries":[` + strings.Join(entries, ",") + `]}`
	if got != want {
		t.Fatalf("workspace_history =\n%s\nwant\n%s", got, want)
	}
}

func TestHistory_NoRunsIsAnEmptyList(t *testing.T) {
	path, _ := seedDB(t, seedRun{issue: "7", attempt: 1, status: store.StatusRunning, started: t0})
	got, isErr := callTool(t, NewHistory(openRO(t, path), "7"), "")
	if want := `{"issue_id":"7","entries":[]}`; isErr || got != want {
		t.Fatalf("workspace_history = %s (isError %v); want %s", got, isErr, want)
	}
}

func TestHistory_QueryFailureIsAFlatError(t *testing.T) {
	got, isErr := callTool(t, NewHistory(failingReader{errors.New("database is locked")}, "42"), "{}")
	if want := `{"error":"query failed: database is locked","kind":"query_failed"}`; !isErr || got != want {
		t.Fatalf("workspace_history = %s (isError %v); want %s", got, isErr, want)
	}
}

func TestHistory_RejectsArguments(t *testing.T) {
	got, isErr := callTool(t, NewHistory(failingReader{errors.New("not reached")}, "42"), `{"limit":5}`)
	want := `{"error":"unknown field \"limit\": workspace_history takes no arguments (send {})","kind":"invalid_input"}`
	if !isErr || got != want {
		t.Fatalf("workspace_history = %s (isError %v); want %s", got, isErr, want)
	}
}

// TestHistory_StatusIsTheSpecsWordOutcomeSortiesOwn: every run status reads as one of
// the spec's five terminal statuses, with Sortie's finer word kept in outcome.
func TestHistory_StatusIsTheSpecsWordOutcomeSortiesOwn(t *testing.T) {
	want := map[store.RunStatus]string{
		store.StatusSucceeded:       "succeeded",
		store.StatusHandedOff:       "succeeded",
		store.StatusBlocked:         "succeeded",
		store.StatusBudgetExhausted: "cancelled",
		store.StatusFailed:          "failed",
		store.StatusTimedOut:        "timed_out",
		store.StatusStalled:         "stalled",
		store.StatusCancelled:       "cancelled",
		store.StatusInterrupted:     "cancelled",
	}
	var runs []seedRun
	for i, s := range store.RunStatuses {
		if s == store.StatusRunning {
			continue
		}
		if _, ok := want[s]; !ok {
			t.Fatalf("run status %q has no expected spec status: add it to this test and to specStatus", s)
		}
		runs = append(runs, seedRun{issue: "42", attempt: i, status: s, started: t0.Add(time.Duration(i) * time.Hour)})
	}
	path, _ := seedDB(t, runs...)
	got, isErr := callTool(t, NewHistory(openRO(t, path), "42"), "{}")
	if isErr {
		t.Fatalf("workspace_history failed: %s", got)
	}
	var resp struct {
		Entries []struct{ Status, Outcome string }
	}
	if err := json.Unmarshal([]byte(got), &resp); err != nil {
		t.Fatal(err)
	}
	if len(resp.Entries) != len(want) {
		t.Fatalf("%d entries, want %d: %s", len(resp.Entries), len(want), got)
	}
	for _, e := range resp.Entries {
		if w := want[store.RunStatus(e.Outcome)]; e.Status != w {
			t.Errorf("outcome %q: status %q, want %q", e.Outcome, e.Status, w)
		}
	}
}

// staticRuns is a RunReader with fixed runs.
type staticRuns []store.Run

func (s staticRuns) RunsForIssue(context.Context, string, int) ([]store.Run, error) { return s, nil }
func (s staticRuns) IssueTotals(context.Context, []string) (map[string]store.Totals, error) {
	return nil, nil
}

func TestHistory_SaysWhichRunsAReactionStartedAndTheirSelfReview(t *testing.T) {
	runs := staticRuns{
		{Attempt: 3, AgentKind: "claude-code", Status: store.StatusHandedOff, StartedAt: t0, EndedAt: t0.Add(time.Minute),
			Reaction: store.ReactionReview, ReviewMetadata: `{"final_verdict":"pass","iterations":[]}`},
		{Attempt: 2, AgentKind: "claude-code", Status: store.StatusHandedOff, StartedAt: t0, EndedAt: t0.Add(time.Minute),
			Reaction: store.ReactionCI},
		{Attempt: 1, AgentKind: "claude-code", Status: store.StatusHandedOff, StartedAt: t0, EndedAt: t0.Add(time.Minute)},
	}
	got, isErr := callTool(t, NewHistory(runs, "9"), "{}")
	if isErr {
		t.Fatal(got)
	}
	for _, want := range []string{`"attempt":3,`, `"reaction":"review","self_review":"pass"}`, `"outcome":"handed_off","error":null,"reaction":"ci"}`,
		`"attempt":1,"agent_adapter":"claude-code","started_at":"` + t0.Format(time.RFC3339) + `","completed_at":"` + t0.Add(time.Minute).Format(time.RFC3339) + `","status":"succeeded","outcome":"handed_off","error":null}`} {
		if !strings.Contains(got, want) {
			t.Errorf("workspace_history lacks %s:\n%s", want, got)
		}
	}
}
