package mock

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunTurn_ShellStepsRecordTheirResults: each shell step runs in the workspace with
// the agent's environment, and its exit status and output are recorded there, failures
// included.
func TestRunTurn_ShellStepsRecordTheirResults(t *testing.T) {
	a := newAdapter(t, "", map[string]any{"shell": []any{
		map[string]any{"name": "where", "run": "pwd; echo $MOCK_SHELL_VAR"},
		map[string]any{"name": "fails", "run": "echo nope >&2; exit 3"},
	}})
	ws := t.TempDir()
	s := startSession(t, a, ws, "MOCK_SHELL_VAR=from-the-agent-env")
	out := runTurn(t, context.Background(), a, s, 1)
	if out.err != nil {
		t.Fatal(out.err)
	}
	for name, want := range map[string]string{
		"where": "exit 0\n" + ws + "\nfrom-the-agent-env\n",
		"fails": "exit 3\nnope\n",
	} {
		b, err := os.ReadFile(filepath.Join(ws, shellDir, name+".out"))
		if err != nil || string(b) != want {
			t.Errorf("%s.out = %q, %v; want %q", name, b, err, want)
		}
	}
}

func TestOptions_ShellStepsAreChecked(t *testing.T) {
	for _, c := range []struct {
		shell any
		want  string
	}{
		{"ls", "must be a list of {name, run}"},
		{[]any{map[string]any{"name": "../x", "run": "ls"}}, "must be 1-64 letters"},
		{[]any{map[string]any{"name": "a", "run": ""}}, ".run: is required"},
		{[]any{map[string]any{"name": "a", "run": "ls"}, map[string]any{"name": "a", "run": "ls"}}, `"a" is used twice`},
		{[]any{map[string]any{"name": "a", "cmd": "ls"}}, "unknown key (known: name, run)"},
	} {
		_, err := parseOptions(map[string]any{"shell": c.shell})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("shell %v: err %v, want %q", c.shell, err, c.want)
		}
	}
}
