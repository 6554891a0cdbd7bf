package claude

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sortie/internal/agent"
)

// A reset leaves only the transcripts and the session directories beside them, and
// of .claude.json only the keys that are no instructions (statedir tests the rest).
func TestResetConfigDir_KeepsOnlyTranscripts(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cfg")
	write := func(rel, body string) {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	const session = "00000000-0000-4000-8000-000000000001"
	write("CLAUDE.md", "planted")
	write("settings.json", `{"hooks":{}}`)
	write("agents/a.md", "x")
	write("rules/r.md", "x")
	write("backups/.claude.json.backup.1", `{"mcpServers":{}}`)
	write("session-env/"+session+"/sessionstart-hook-0.sh", "x")
	write(".credentials.json", "planted login")
	write(".claude.json", `{"userID":"u1","mcpServers":{"evil":{"command":"sh"}},"projects":{}}`)
	write("projects/-ws/"+session+".jsonl", "{}")
	write("projects/-ws/"+session+"/subagents/agent-1.jsonl", "{}")
	write("projects/-ws/memory/MEMORY.md", "planted")
	write("projects/-ws/CLAUDE.md", "planted")

	if err := resetConfigDir(dir, nil, ""); err != nil {
		t.Fatal(err)
	}
	var left []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			left = append(left, rel)
		}
		return nil
	})
	want := []string{".claude.json", "projects/-ws/" + session + ".jsonl", "projects/-ws/" + session + "/subagents/agent-1.jsonl"}
	slices.Sort(left)
	slices.Sort(want)
	if !slices.Equal(left, want) {
		t.Errorf("left after the reset: %q, want %q", left, want)
	}
	var state map[string]any
	data, _ := os.ReadFile(filepath.Join(dir, ".claude.json"))
	if err := json.Unmarshal(data, &state); err != nil || len(state) != 1 || state["userID"] != "u1" {
		t.Errorf(".claude.json = %s, want only the userID", data)
	}
}

func TestNew_WarnsOfASharedConfigDir(t *testing.T) {
	a, err := New(agent.Config{Kind: Kind, Command: "claude", Env: []string{"HOME=/h", "CLAUDE_CONFIG_DIR=/shared"}})
	if err != nil {
		t.Fatal(err)
	}
	w := a.(agent.Warner).Warnings()
	if len(w) != 1 || !strings.Contains(w[0], "CLAUDE_CONFIG_DIR=/shared") || !strings.Contains(w[0], "every issue") {
		t.Errorf("warnings = %q, want one naming the shared directory", w)
	}
	a, _ = New(agent.Config{Kind: Kind, Command: "claude", Env: []string{"HOME=/h"}})
	if w := a.(agent.Warner).Warnings(); len(w) != 0 {
		t.Errorf("warnings = %q, want none", w)
	}
}

func TestAuthNotes(t *testing.T) {
	home := t.TempDir()
	env := []string{"HOME=" + home}
	if n := authNotes(env, ""); len(n) != 0 {
		t.Errorf("no login anywhere: notes %q", n)
	}
	os.MkdirAll(filepath.Join(home, ".claude"), 0o700)
	os.WriteFile(filepath.Join(home, ".claude", credentialsFile), []byte("{}"), 0o600)
	if n := authNotes(env, ""); len(n) != 1 || !strings.Contains(n[0], "use_login") || !strings.Contains(n[0], "CLAUDE_CODE_OAUTH_TOKEN") {
		t.Errorf("a login the agents do not get: notes %q", n)
	}
	if n := authNotes(append(env, "ANTHROPIC_API_KEY=k"), ""); len(n) != 0 {
		t.Errorf("with an API key: notes %q", n)
	}
}
