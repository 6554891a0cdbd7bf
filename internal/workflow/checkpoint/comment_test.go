package checkpoint

import (
	"strings"
	"testing"

	"sortie/internal/store"
)

// The checkpoint comment tells the human how this tracker's checkpoints are really
// answered: a "/sortie choose" reply where comments answer, the dashboard and the API
// with the file tracker, whose comments never do.
func TestCheckpointComment_SaysHowThisTrackerAnswers(t *testing.T) {
	cp := store.Checkpoint{CheckpointID: "approve-plan", Name: "Plan", Message: "Approve?",
		Options: []store.CheckpointOption{{ID: "approve", Label: "Approve"}, {ID: "revise", Label: "Revise"}}}
	const link = "http://127.0.0.1:7678/issues/PROJ-8"

	byComment := comment(cp, "PROJ-8", link, true)
	for _, want := range []string{"/sortie choose approve", "Or answer on the dashboard: " + link} {
		if !strings.Contains(byComment, want) {
			t.Errorf("comment where comments answer lacks %q:\n%s", want, byComment)
		}
	}

	file := comment(cp, "PROJ-8", link, false)
	if strings.Contains(file, "/sortie choose") {
		t.Errorf("the file tracker's comment tells the human to reply with /sortie choose, which it refuses:\n%s", file)
	}
	for _, want := range []string{"do not answer", link, "POST /api/v1/PROJ-8/checkpoints/approve-plan", `{"option_id": "approve"}`, "sortie status --token"} {
		if !strings.Contains(file, want) {
			t.Errorf("the file tracker's comment lacks %q:\n%s", want, file)
		}
	}
	if noLink := comment(cp, "PROJ-8", "", false); !strings.Contains(noLink, "To answer, send POST /api/v1/PROJ-8/") {
		t.Errorf("without a dashboard link: %s", noLink)
	}
}
