package pgtest

import (
	"os/exec"
	"strings"
	"testing"
)

// TestStart_AnswersQueries: the throwaway cluster takes connections on its port.
func TestStart_AnswersQueries(t *testing.T) {
	s := Start(t)
	psql, err := exec.LookPath("psql")
	if err != nil {
		t.Skipf("skipped: no psql client to ask the server with: %v", err)
	}
	out, err := exec.Command(psql, "-X", "-A", "-t", "-d", s.URL("postgres"), "-c", "SELECT 40 + 2").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "42" {
		t.Fatalf("psql: %q, %v", out, err)
	}
}
