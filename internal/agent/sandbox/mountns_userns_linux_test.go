package sandbox_test

import (
	"context"
	"io"
	"os"
	"testing"

	"sortie/internal/agent/proc"
	"sortie/internal/agent/sandbox"
)

func init() { sandbox.UserNSRun = userNSRun }

// userNSRun is sandbox.UserNSRun: this test binary is `sortie confine` when
// SORTIE_SANDBOX_TEST_CHILD is set (TestMain).
func userNSRun(t *testing.T, p sandbox.Policy, script string) string {
	t.Helper()
	pr, err := proc.Start(context.Background(), proc.Command{Path: "/bin/sh", Args: []string{"-c", script + " 2>&1"},
		Env: append(os.Environ(), "SORTIE_SANDBOX_TEST_CHILD=1"), Wrap: append([]string{os.Args[0]}, p.Args()...), UserNS: true})
	if err != nil {
		t.Fatalf("starting in a user namespace: %v", err)
	}
	out, _ := io.ReadAll(pr.Stdout())
	if ex := pr.Wait(); ex.Code != 0 {
		t.Fatalf("confined in a user namespace: %+v\n%s\n%s", ex, out, pr.Stderr())
	}
	return string(out)
}
