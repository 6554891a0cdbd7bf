package store

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestCarryAnswers_OnlySupersededAnswersOfTheSameCheckpoint(t *testing.T) {
	t0 := time.Unix(1000, 0).UTC()
	answered := func(id int64, activity, cp, answer string) Checkpoint {
		return Checkpoint{ID: id, Activity: activity, CheckpointID: cp, Answer: answer, AnsweredBy: "alice",
			AnswerSource: AnswerDashboard, AnsweredAt: t0.Add(time.Duration(id) * time.Second)}
	}
	superseded := []Checkpoint{
		answered(3, "plan", "approve", "newer"),
		answered(1, "plan", "approve", "older"), // an older file's second pending row: the newest wins
		answered(2, "plan", "scope", ""),        // not answered: nothing to carry
		answered(4, "review", "scope", "wide"),  // another activity
	}
	cps := []Checkpoint{
		{Activity: "plan", CheckpointID: "approve", Answer: "stale", Resolution: ResolvedOption, ID: 99},
		{Activity: "plan", CheckpointID: "scope"},
		{Activity: "implement", CheckpointID: "approve"},
	}
	got := CarryAnswers(cps, superseded)
	want := []Checkpoint{
		{Activity: "plan", CheckpointID: "approve", Answer: "newer", AnsweredBy: "alice", AnswerSource: AnswerDashboard, AnsweredAt: t0.Add(3 * time.Second)},
		{Activity: "plan", CheckpointID: "scope"},
		{Activity: "implement", CheckpointID: "approve"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("CarryAnswers =\n%+v\nwant\n%+v", got, want)
	}
	if cps[0].Answer != "stale" {
		t.Errorf("CarryAnswers changed its argument: %+v", cps[0])
	}
}

func TestCheckArm_EarliestIssuanceAndWholeBatchRejected(t *testing.T) {
	t0 := time.Unix(1000, 0)
	cp := func(id string, issued time.Time) Checkpoint {
		return Checkpoint{SessionID: "s", Workflow: "w", Activity: "plan", CheckpointID: id, IssuedAt: issued}
	}
	if at, err := CheckArm("s", []Checkpoint{cp("a", t0.Add(time.Minute)), cp("b", t0)}); err != nil || !at.Equal(t0) {
		t.Errorf("CheckArm = %v, %v; want the earliest issuance %v", at, err, t0)
	}
	if at, err := CheckArm("s", nil); err != nil || !at.IsZero() {
		t.Errorf("CheckArm(none) = %v, %v; want the zero time", at, err)
	}
	if _, err := CheckArm("", nil); err == nil {
		t.Error("CheckArm without a session id succeeded")
	}
}

func TestAlreadyAnswered_SaysWhoAnsweredWhat(t *testing.T) {
	c := Checkpoint{Answer: "approve", AnsweredBy: "bob", AnswerSource: AnswerTracker, AnsweredAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	err := c.AlreadyAnswered()
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `"approve" by bob via tracker at 2026-01-02T03:04:05Z`) {
		t.Errorf("AlreadyAnswered = %v", err)
	}
	c.AnsweredBy = ""
	if err := c.AlreadyAnswered(); strings.Contains(err.Error(), " by ") {
		t.Errorf("AlreadyAnswered by no one (the timer) = %v, want no \"by\"", err)
	}
}

func TestCheckResolution_NamesEveryProblem(t *testing.T) {
	err := CheckResolution("", "", ResolvedAbandoned, time.Time{})
	want := "session id is empty\ncheckpoint id is empty\nresolution must be one of option, auto_advance, condition_not_met, superseded (got \"abandoned\")\nresolved at is zero"
	if err == nil || err.Error() != want {
		t.Errorf("CheckResolution = %v, want %q", err, want)
	}
	if err := CheckResolution("s", "c", ResolvedOption, time.Unix(1, 0)); err != nil {
		t.Errorf("CheckResolution of a valid resolution = %v", err)
	}
}
