package store

import (
	"errors"
	"fmt"
	"time"
)

// The checkpoint rules every WorkflowStore implementation applies, so that the backends
// differ only in how they write.

// CheckArm checks a batch for ArmCheckpoints: a session id, every checkpoint valid and
// of that session, no checkpoint id twice. It returns the earliest IssuedAt of cps, the
// time the rows the batch supersedes are resolved at; zero when cps is empty.
func CheckArm(sessionID string, cps []Checkpoint) (time.Time, error) {
	if sessionID == "" {
		return time.Time{}, errors.New("session id is empty")
	}
	var issued time.Time
	seen := make(map[string]bool, len(cps))
	for _, cp := range cps {
		if err := cp.Validate(); err != nil {
			return time.Time{}, fmt.Errorf("checkpoint %q: %w", cp.CheckpointID, err)
		}
		if cp.SessionID != sessionID {
			return time.Time{}, fmt.Errorf("checkpoint %q belongs to workflow session %q", cp.CheckpointID, cp.SessionID)
		}
		if seen[cp.CheckpointID] {
			return time.Time{}, fmt.Errorf("checkpoint %q is armed twice", cp.CheckpointID)
		}
		seen[cp.CheckpointID] = true
		if issued.IsZero() || cp.IssuedAt.Before(issued) {
			issued = cp.IssuedAt
		}
	}
	return issued, nil
}

// CarryAnswers returns cps as ArmCheckpoints writes them, given the pending checkpoints
// the batch superseded: pending and unanswered, except that a checkpoint inherits the
// answer of the newest answered superseded row with the same activity and checkpoint id.
// Only rows this issuance supersedes carry theirs: an answer to an older issuance, already
// resolved, is not an answer to a new one.
func CarryAnswers(cps, superseded []Checkpoint) []Checkpoint {
	type key struct{ activity, checkpointID string }
	carried := map[key]Checkpoint{}
	for _, old := range superseded {
		k := key{old.Activity, old.CheckpointID}
		// The pending index allows one row per checkpoint id; the newest wins should an
		// older database hold more.
		if prev, ok := carried[k]; old.Answered() && (!ok || old.ID > prev.ID) {
			carried[k] = old
		}
	}
	out := make([]Checkpoint, len(cps))
	for i, cp := range cps {
		a := carried[key{cp.Activity, cp.CheckpointID}]
		cp.ID = 0
		cp.Answer, cp.AnsweredBy, cp.AnswerSource, cp.AnsweredAt = a.Answer, a.AnsweredBy, a.AnswerSource, a.AnsweredAt
		cp.Resolution, cp.ResolvedAt = "", time.Time{}
		out[i] = cp
	}
	return out
}

// AlreadyAnswered is AnswerCheckpoint's error for c, answered before: it wraps
// ErrConflict and says who answered what, how and when.
func (c Checkpoint) AlreadyAnswered() error {
	by := ""
	if c.AnsweredBy != "" {
		by = " by " + c.AnsweredBy
	}
	return fmt.Errorf("%w: already answered %q%s via %s at %s",
		ErrConflict, c.Answer, by, c.AnswerSource, c.AnsweredAt.Format(time.RFC3339))
}

// CheckResolution checks the arguments of ResolveCheckpoint, naming every problem:
// resolution must be one of the Resolved* constants an agent may give (not
// ResolvedAbandoned, which only EndIssueWorkflows writes).
func CheckResolution(sessionID, checkpointID, resolution string, at time.Time) error {
	var c checks
	c.empty("session id", sessionID)
	c.empty("checkpoint id", checkpointID)
	switch resolution {
	case ResolvedOption, ResolvedAutoAdvance, ResolvedConditionNot, ResolvedSuperseded:
	default:
		c.add(fmt.Errorf("resolution must be one of %s, %s, %s, %s (got %q)", ResolvedOption,
			ResolvedAutoAdvance, ResolvedConditionNot, ResolvedSuperseded, resolution))
	}
	c.zero("resolved at", at)
	return c.err()
}

// CheckEndIssue checks the arguments of EndIssueWorkflows: a standalone session's empty
// issue id is not an issue.
func CheckEndIssue(issueID string, at time.Time) error {
	var c checks
	c.empty("issue id", issueID)
	c.zero("ended at", at)
	return c.err()
}
