package orchestrator

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sortie/internal/selfreview"
	"strings"
	"testing"
	"time"

	"sortie/internal/config"
	"sortie/internal/store"
)

// Self-review runs after the turns, before the hand-off: the verification commands'
// results reach the agent in a review turn on the same session, its pass verdict ends
// the loop, the result is in the run's history, and after_run is told.
func TestSelfReview_RunsBeforeTheHandoffAndIsRecorded(t *testing.T) {
	envFile := filepath.Join(t.TempDir(), "after_run.env")
	cfg := testConfig(t, func(c *config.Config) {
		c.Tracker.HandoffState = "Human Review"
		c.Agent.MaxTurns = 1
		c.Hooks.AfterRun = `echo "$SORTIE_SELF_REVIEW_STATUS $SORTIE_SELF_REVIEW_SUMMARY_PATH" > '` + envFile + `'`
		c.SelfReview = config.SelfReviewConfig{Enabled: true, MaxIterations: 2,
			VerificationCommands: []string{"echo verified-by-sortie; exit 3"},
			VerificationTimeout:  time.Minute, MaxDiffBytes: 1 << 10, Reviewer: "same"}
		c.Extensions = map[string]any{"mock": map[string]any{"events_per_turn": 1, "shell": []any{
			map[string]any{"name": "verdict", "run": `mkdir -p .sortie && printf '{"verdict":"pass"}' > .sortie/review_verdict.json`},
		}}}
	})
	h := newHarness(t, cfg, harnessOptions{pollOnly: true})
	h.trk.Put(issue("SR-1", "Todo"))
	h.start()
	h.awaitStep(StepExit, "SR-1")

	runs := h.runs("SR-1")
	if len(runs) != 1 || runs[0].Status != store.StatusHandedOff {
		t.Fatalf("runs = %v, want one handed off", h.statuses("SR-1"))
	}
	if runs[0].Turns != 2 {
		t.Errorf("turns = %d, want 2 (the work, one review turn)", runs[0].Turns)
	}
	var meta struct {
		FinalVerdict string `json:"final_verdict"`
		Iterations   []struct {
			VerificationResults []struct {
				ExitCode   int    `json:"exit_code"`
				OutputTail string `json:"output_tail"`
			} `json:"verification_results"`
		} `json:"iterations"`
	}
	if err := json.Unmarshal([]byte(runs[0].ReviewMetadata), &meta); err != nil {
		t.Fatalf("review metadata %q: %v", runs[0].ReviewMetadata, err)
	}
	if meta.FinalVerdict != "pass" || len(meta.Iterations) != 1 || len(meta.Iterations[0].VerificationResults) != 1 ||
		meta.Iterations[0].VerificationResults[0].ExitCode != 3 {
		t.Fatalf("review metadata = %s", runs[0].ReviewMetadata)
	}
	h.agent.mu.Lock()
	prompts := slices.Clone(h.agent.prompts)
	h.agent.mu.Unlock()
	if len(prompts) != 2 || !strings.Contains(prompts[1].prompt, "## Self-Review: Iteration 1 of 2") ||
		!strings.Contains(prompts[1].prompt, "verified-by-sortie") {
		t.Fatalf("prompts = %+v, want the review turn with the command's output", prompts)
	}
	got, err := os.ReadFile(envFile)
	if err != nil || !strings.HasPrefix(string(got), "passed ") || !strings.Contains(string(got), "review_summary.md") {
		t.Fatalf("after_run saw %q (%v), want passed and the summary path", got, err)
	}
	if got := h.trk.TransitionsOf("SR-1"); !slices.Equal(got, []string{"Human Review"}) {
		t.Fatalf("transitions = %q", got)
	}
}

// A self-review result too large for the run history is recorded without its command
// output (then without its iterations), never dropped.
func TestSelfReview_MetadataIsBoundedNotDropped(t *testing.T) {
	o := &Orchestrator{log: testLogger(t)}
	w := &worker{o: o}
	res := selfreview.Result{Enabled: true, FinalVerdict: "iterate", CapReached: true, TotalIterations: 10}
	for i := range 10 {
		it := selfreview.Iteration{Iteration: i + 1, Verdict: "iterate", VerdictRaw: strings.Repeat("v", 4000)}
		for range 3 {
			it.VerificationResults = append(it.VerificationResults, selfreview.VerificationResult{
				Command: "go test ./...", ExitCode: 1, OutputTail: strings.Repeat("<fail>", 700)})
		}
		res.Iterations = append(res.Iterations, it)
	}
	got := w.boundedReviewMetadata(res)
	if got == "" || len(got) > store.MaxReviewMetadataBytes || !json.Valid([]byte(got)) {
		t.Fatalf("metadata of %d bytes (valid %v), want valid JSON within %d", len(got), json.Valid([]byte(got)), store.MaxReviewMetadataBytes)
	}
	var back selfreview.Result
	if err := json.Unmarshal([]byte(got), &back); err != nil || back.FinalVerdict != "iterate" || !back.CapReached ||
		len(back.Iterations) != 10 || back.Iterations[0].VerificationResults[0].ExitCode != 1 {
		t.Fatalf("recorded %+v (%v), want the outcome and every iteration's exit codes", back, err)
	}
}
