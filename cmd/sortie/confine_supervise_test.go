package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sortie/internal/agent/sandbox"
)

// TestConfine_SupervisesInProcess: `sortie confine … -- sortie supervise …`, the chain
// a kernel with Landlock ABI 1 still gets, runs the supervisor in the confined process
// itself: the program is confined (the hidden file is out of reach, the workspace is
// not), its detached descendants are swept when it exits, and its status is returned.
func TestConfine_SupervisesInProcess(t *testing.T) {
	requireConfinement(t)
	t.Parallel()
	base := t.TempDir()
	ws, proj := filepath.Join(base, "ws"), filepath.Join(base, "proj")
	for _, d := range []string{ws, proj} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	secret := writeFile(t, proj, "state.db", "the daemon's database")
	p := sandbox.Policy{
		Write: append([]string{ws}, sandbox.SystemWrite...),
		Read:  append(slices.Clone(sandbox.SystemRead), proj),
		Hide:  []string{secret},
	}
	marker := sleepMarker(9)
	script := "setsid sleep 306" + marker + " </dev/null >/dev/null 2>&1 & " +
		"if cat " + secret + " >/dev/null 2>&1; then echo read-db ok; else echo read-db denied; fi; " +
		"if echo hi > " + ws + "/x; then echo write-ws ok; else echo write-ws denied; fi; exit 3"
	args := append([]string{"confine"}, p.Args()...)
	args = append(args, sortieBin, "supervise", "--grace", "1s", "--", "/bin/sh", "-c", script)
	r := runSortie(t, base, nil, args...)
	if r.code != 3 {
		t.Fatalf("exit %d, want the program's 3\n%s", r.code, r)
	}
	if got := strings.Fields(r.stdout); !slices.Equal(got, []string{"read-db", "denied", "write-ws", "ok"}) {
		t.Errorf("confined program said %q, want read-db denied, write-ws ok\n%s", r.stdout, r)
	}
	if left := sleepers(marker); len(left) > 0 {
		t.Errorf("descendants outlived the supervisor: %v", left)
	}
}
