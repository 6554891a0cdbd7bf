package orchestrator

import (
	"path/filepath"
	"testing"
	"time"

	"sortie/internal/config"
)

// TestHold_SortiesOwnCommentsDoNotLiftIt: on GitHub and Jira every comment moves the
// issue's updated_at, Sortie's own lifecycle comments included (the fake tracker does
// the same). A hold must not take Sortie's comment on the run that caused it for a
// human's answer: that would run the agent again, have it block again, comment again,
// and so on, every poll, at the operator's expense. Nor must the in-progress transition
// of a run that then failed. A human's comment still lifts it.
func TestHold_SortiesOwnCommentsDoNotLiftIt(t *testing.T) {
	cases := []struct {
		name    string
		mutate  func(*config.Config)
		reason  string
		comment string // what Sortie's comment on the held run says, "" for none
		fails   int    // failed runs before the hold
	}{
		{name: "blocked, on_completion", reason: holdBlocked, comment: "Sortie session completed", mutate: func(c *config.Config) {
			c.Tracker.Comments.OnCompletion = true
			c.Extensions = map[string]any{"mock": map[string]any{"status": "blocked"}}
		}},
		{name: "blocked, on_dispatch and on_completion", reason: holdBlocked, comment: "Sortie session completed", mutate: func(c *config.Config) {
			c.Tracker.Comments.OnDispatch, c.Tracker.Comments.OnCompletion = true, true
			c.Tracker.InProgressState = "In Progress"
			c.Extensions = map[string]any{"mock": map[string]any{"status": "blocked"}}
		}},
		{name: "needs-human-review without handoff_state, on_completion", reason: holdHumanReview, comment: "Sortie session completed",
			mutate: func(c *config.Config) {
				c.Tracker.Comments.OnCompletion = true
				c.Extensions = map[string]any{"mock": map[string]any{"status": "needs-human-review"}}
			}},
		{name: "error retrying cannot fix, on_failure", reason: holdError, comment: "Sortie session failed", mutate: func(c *config.Config) {
			c.Tracker.Comments.OnFailure = true
			c.Agent.Command = filepath.Join(c.Dir, "no-such-agent")
		}},
		{name: "error retrying cannot fix, after the in-progress transition", reason: holdError, mutate: func(c *config.Config) {
			c.Tracker.InProgressState = "In Progress"
			c.Agent.Command = filepath.Join(c.Dir, "no-such-agent")
		}},
		{name: "retries exhausted, on_failure", reason: holdRetries, comment: "agent.max_retries reached", fails: 1, mutate: func(c *config.Config) {
			c.Tracker.Comments.OnFailure = true
			c.Agent.MaxRetries = 1
			c.Agent.StallTimeout = 0
			c.Extensions = map[string]any{"mock": failingAgent}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := testConfig(t, c.mutate)
			h := newHarness(t, cfg, harnessOptions{pollOnly: true})
			h.trk.Put(issue("OWN-1", "Todo"))
			h.start()
			for range c.fails {
				h.awaitStep(StepExit, "OWN-1")
				h.advance(10 * time.Second)
			}
			o := h.awaitStep(StepExit, "OWN-1")
			if held, ok := heldOf(o.Snapshot, "OWN-1"); !ok || held.Reason != c.reason {
				t.Fatalf("after the run: %s, want OWN-1 held as %s", describe(o.Snapshot), c.reason)
			}
			if c.comment != "" {
				awaitComment(t, h, "OWN-1", c.comment)
			}
			for poll := 1; poll <= 3; poll++ {
				h.advance(cfg.Polling.Interval)
				o = h.awaitStep(StepTick, "")
				if held, ok := heldOf(o.Snapshot, "OWN-1"); !ok || held.Reason != c.reason || isRunning(o.Snapshot, "OWN-1") {
					t.Fatalf("poll %d after Sortie's own comment: %s, want OWN-1 still held as %s", poll, describe(o.Snapshot), c.reason)
				}
			}
			if n := len(h.runs("OWN-1")); n != c.fails+1 {
				t.Fatalf("runs = %d, want %d: Sortie's comment lifted the hold and the agent ran again", n, c.fails+1)
			}

			// A human's comment lifts it.
			h.awaitOwnWrites("OWN-1")
			must(t, h.trk.AddComment("OWN-1", "alice", "try the staging database"))
			h.advance(cfg.Polling.Interval)
			h.awaitStep(StepExit, "OWN-1")
			if n := len(h.runs("OWN-1")); n != c.fails+2 {
				t.Fatalf("runs after a human commented = %d, want %d", n, c.fails+2)
			}
		})
	}
}
