package orchestrator

import (
	"strings"
	"testing"
)

// The alert of an issue held at a checkpoint tells the human how this tracker's
// checkpoints are really answered: not with a comment on the file tracker.
func TestHoldAlert_SaysHowThisTrackerAnswers(t *testing.T) {
	if a := holdAlert(issue("PROJ-8", "Todo"), holdAwaiting, "Plan: Approve?", false); strings.Contains(a.Message, "/sortie choose") {
		t.Errorf("the file tracker's alert tells the human to comment: %q", a.Message)
	}
	if a := holdAlert(issue("PROJ-8", "Todo"), holdAwaiting, "Plan: Approve?", true); !strings.Contains(a.Message, "/sortie choose") {
		t.Errorf("the alert where comments answer does not say how: %q", a.Message)
	}
}
