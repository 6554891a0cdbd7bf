package orchestrator

import (
	"errors"

	"context"
	"fmt"
	"slices"
	"sortie/internal/testkit/faketracker"
	"strings"
	"sync"
	"testing"

	"sortie/internal/config"
	"sortie/internal/store"
)

// fakeReactions is Options.Reactions for these tests: the test offers reactions; it
// records what the orchestrator did with them.
type fakeReactions struct {
	mu         sync.Mutex
	due        []Reaction
	ch         chan struct{}
	watched    []HandOff
	forgot     []string
	dispatched []Reaction
	deferred   []string // "<kind> <why>"
	refuse     bool     // Dispatched answers false: another daemon acted on it
	ended      []string // "<kind> started=<bool>"
}

func newFakeReactions() *fakeReactions { return &fakeReactions{ch: make(chan struct{}, 1)} }

func (f *fakeReactions) offer(r Reaction) {
	f.mu.Lock()
	f.due = append(f.due, r)
	f.mu.Unlock()
	select {
	case f.ch <- struct{}{}:
	default:
	}
}

func (f *fakeReactions) Watch(h HandOff) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.watched = append(f.watched, h)
}

func (f *fakeReactions) Forget(id string, terminal bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.forgot = append(f.forgot, id)
}

func (f *fakeReactions) Due() <-chan struct{} { return f.ch }

func (f *fakeReactions) Next() (Reaction, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.due) == 0 {
		return Reaction{}, false
	}
	r := f.due[0]
	f.due = f.due[1:]
	return r, true
}

func (f *fakeReactions) Dispatched(_ context.Context, r Reaction) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.refuse {
		return false
	}
	f.dispatched = append(f.dispatched, r)
	return true
}

func (f *fakeReactions) Ended(r Reaction, started bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ended = append(f.ended, fmt.Sprintf("%s started=%v", r.Kind, started))
}

func (f *fakeReactions) Deferred(r Reaction, why string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deferred = append(f.deferred, r.Kind+" "+why)
}

func (f *fakeReactions) snapshot() (watched []HandOff, dispatched []Reaction, deferred []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.watched), slices.Clone(f.dispatched), slices.Clone(f.deferred)
}

func reactionConfig(t *testing.T, mutate func(*config.Config)) *config.Config {
	return testConfig(t, func(c *config.Config) {
		c.Tracker.HandoffState = "Human Review"
		c.Agent.MaxTurns = 2
		if mutate != nil {
			mutate(c)
		}
	})
}

// handedOff starts a harness with reactions fr whose issue id ran once and was
// handed off (mutate changes reactionConfig's configuration).
func handedOff(t *testing.T, id string, fr *fakeReactions, mutate func(*config.Config)) (*harness, *config.Config) {
	t.Helper()
	cfg := reactionConfig(t, mutate)
	h := newHarness(t, cfg, harnessOptions{pollOnly: true, reactions: fr})
	h.trk.Put(issue(id, "Todo"))
	h.start()
	h.awaitStep(StepExit, id)
	return h, cfg
}

// A hand-off is watched; a reaction resumes the run's session with the failure in its
// first prompt, after moving the issue back to an active state; the run hands the
// issue off again, which is watched again.
func TestReaction_ResumesTheSessionAndHandsOffAgain(t *testing.T) {
	fr := newFakeReactions()
	h, _ := handedOff(t, "RX-1", fr, nil)
	watched, _, _ := fr.snapshot()
	if len(watched) != 1 || watched[0].IssueID != "RX-1" || watched[0].SessionID == "" || watched[0].Workspace == "" {
		t.Fatalf("watched = %+v, want RX-1's hand-off with its session and workspace", watched)
	}
	session := watched[0].SessionID

	fr.offer(Reaction{IssueID: "RX-1", Identifier: "RX-1", Kind: "ci", Fingerprint: "sha1", SessionID: session, PR: 7,
		Vars:    map[string]any{"ci_failure": map[string]any{"ref": "sha1"}},
		Section: "## CI failed on pull request #7\n\n- build: failure"})
	o := h.awaitStep(StepExit, "RX-1")
	if isRunning(o.Snapshot, "RX-1") {
		t.Fatal("still running after its exit")
	}
	if got := h.trk.TransitionsOf("RX-1"); !slices.Equal(got, []string{"Human Review", "Todo", "Human Review"}) {
		t.Fatalf("transitions = %q, want handed off, back to Todo, handed off again", got)
	}
	watched, dispatched, deferred := fr.snapshot()
	if len(dispatched) != 1 || len(deferred) != 0 {
		t.Fatalf("dispatched %+v, deferred %q", dispatched, deferred)
	}
	if len(watched) != 2 {
		t.Fatalf("watched %d times, want 2 (each hand-off)", len(watched))
	}
	h.agent.mu.Lock()
	starts, prompts := slices.Clone(h.agent.starts), slices.Clone(h.agent.prompts)
	h.agent.mu.Unlock()
	if last := starts[len(starts)-1]; last.params.ResumeSessionID != session {
		t.Fatalf("the reaction run resumed %q, want the handed-off session %q", last.params.ResumeSessionID, session)
	}
	var first string
	for _, p := range prompts {
		if strings.Contains(p.prompt, "## CI failed on pull request #7") {
			first = p.prompt
		}
	}
	if first == "" {
		t.Fatalf("no prompt carried the CI failure; prompts: %+v", prompts)
	}
	runs := h.runs("RX-1")
	if len(runs) != 2 || runs[0].Status != store.StatusHandedOff {
		t.Fatalf("runs = %v, want two, handed off", h.statuses("RX-1"))
	}
}

// A reaction waits for what any run waits for: a hold, the issue's budget, a slot.
func TestReaction_DeferredByHoldsBudgetsAndOtherDaemons(t *testing.T) {
	t.Run("max_sessions", func(t *testing.T) {
		fr := newFakeReactions()
		h, cfg := handedOff(t, "RB-1", fr, func(c *config.Config) { c.Agent.MaxSessions = 1 })
		// A poll first: the handed-off issue is no candidate, so the loop forgets its
		// figures (forgetBudgets); the reaction must read them again.
		h.advance(cfg.Polling.Interval)
		h.awaitStep(StepTick, "")
		fr.offer(Reaction{IssueID: "RB-1", Identifier: "RB-1", Kind: "ci", Fingerprint: "x"})
		h.awaitStep(StepReaction, "")
		_, dispatched, deferred := fr.snapshot()
		if len(dispatched) != 0 || len(deferred) != 1 || !strings.Contains(deferred[0], "budget") {
			t.Fatalf("dispatched %+v, deferred %q; want deferred for the budget", dispatched, deferred)
		}
		if got := h.trk.TransitionsOf("RB-1"); !slices.Equal(got, []string{"Human Review"}) {
			t.Fatalf("transitions = %q: a deferred reaction moved the issue", got)
		}
	})
	t.Run("held", func(t *testing.T) {
		fr := newFakeReactions()
		h, _ := handedOff(t, "RH-1", fr, func(c *config.Config) {
			c.Extensions = map[string]any{"mock": map[string]any{"status": "blocked"}}
		})
		fr.offer(Reaction{IssueID: "RH-1", Identifier: "RH-1", Kind: "review", Fingerprint: "x"})
		h.awaitStep(StepReaction, "")
		_, dispatched, deferred := fr.snapshot()
		if len(dispatched) != 0 || len(deferred) != 1 || !strings.Contains(deferred[0], "held") {
			t.Fatalf("dispatched %+v, deferred %q; want deferred for the hold", dispatched, deferred)
		}
	})
	t.Run("another daemon dispatched it", func(t *testing.T) {
		fr := newFakeReactions()
		fr.refuse = true
		h, _ := handedOff(t, "RD-1", fr, nil)
		fr.offer(Reaction{IssueID: "RD-1", Identifier: "RD-1", Kind: "ci", Fingerprint: "x"})
		o := h.awaitStep(StepReaction, "")
		if isRunning(o.Snapshot, "RD-1") || len(h.runs("RD-1")) != 1 {
			t.Fatalf("a reaction Dispatched refused was run: %s", describe(o.Snapshot))
		}
	})
}

// A reaction to an issue a human moved on (closed, or out of the hand-off state)
// starts no agent and stops the watch.
func TestReaction_IssueMovedOnByAHuman(t *testing.T) {
	fr := newFakeReactions()
	h, _ := handedOff(t, "RM-1", fr, nil)
	h.trk.SetState("RM-1", "Done")
	fr.offer(Reaction{IssueID: "RM-1", Identifier: "RM-1", Kind: "ci", Fingerprint: "x"})
	h.awaitStep(StepExit, "RM-1")
	if n := len(h.runs("RM-1")); n != 1 {
		t.Fatalf("runs = %d, want 1: a reaction to a closed issue ran an agent", n)
	}
	fr.mu.Lock()
	forgot := slices.Clone(fr.forgot)
	fr.mu.Unlock()
	if !slices.Contains(forgot, "RM-1") {
		t.Fatalf("forgot = %q, want RM-1", forgot)
	}
	if got := h.trk.TransitionsOf("RM-1"); !slices.Equal(got, []string{"Human Review"}) {
		t.Fatalf("transitions = %q", got)
	}
}

// A reaction run that fails before the agent saw the failure (moving the issue back
// to work failed) gives the dispatch back; one that ends after its turns without a
// hand-off says the agent had it.
func TestReaction_EndedTellsWhetherTheAgentGotIt(t *testing.T) {
	fr := newFakeReactions()
	h, _ := handedOff(t, "RE-1", fr, nil)
	h.trk.FailNext(faketracker.OpTransition, 1, errors.New("tracker down"))
	fr.offer(Reaction{IssueID: "RE-1", Identifier: "RE-1", Kind: "ci", Fingerprint: "x"})
	h.awaitStep(StepExit, "RE-1")
	fr.mu.Lock()
	ended := slices.Clone(fr.ended)
	fr.mu.Unlock()
	if !slices.Equal(ended, []string{"ci started=false"}) {
		t.Fatalf("ended = %q, want the dispatch given back (started=false)", ended)
	}
}

func TestTemplateUses_OnlyInsideActions(t *testing.T) {
	for _, c := range []struct {
		tmpl string
		want bool
	}{
		{"Fix it. {{ if .ci_failure }}{{ .ci_failure.log_excerpt }}{{ end }}", true},
		{"{% if ci_failure %}{{ ci_failure.ref }}{% endif %}", true},
		{"{{- with .ci_failure -}}x{{ end }}", true},
		{"Read the ci_failure section below if there is one.", false},
		{"{{ .issue.title }} mentions ci_failure_count", false},
	} {
		if got := templateUses(c.tmpl, "ci_failure"); got != c.want {
			t.Errorf("templateUses(%q) = %v, want %v", c.tmpl, got, c.want)
		}
	}
}
