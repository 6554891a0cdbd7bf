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

func TestIssueConfigDir_PerIssueAndStable(t *testing.T) {
	env := []string{"HOME=/home/u"}
	a := issueConfigDir(append(env, "SORTIE_ISSUE_ID=1"), "/wf", "/ws/a")
	if again := issueConfigDir(append(env, "SORTIE_ISSUE_ID=1"), "/wf", "/ws/other"); again != a {
		t.Errorf("the same issue got %s, then %s", a, again)
	}
	if !strings.HasPrefix(a, "/home/u/.cache/sortie/claude/") {
		t.Errorf("dir = %s, want it below ~/.cache/sortie/claude", a)
	}
	others := []string{
		issueConfigDir(append(env, "SORTIE_ISSUE_ID=2"), "/wf", "/ws/a"),
		issueConfigDir(append(env, "SORTIE_ISSUE_ID=1"), "/wf2", "/ws/a"),
		issueConfigDir(env, "/wf", "/ws/a"),
	}
	for _, o := range others {
		if o == a {
			t.Errorf("another issue or workflow shares %s", a)
		}
	}
	if got := issueConfigDir([]string{"HOME=/home/u", "XDG_CACHE_HOME=/c"}, "/wf", "/ws/b"); !strings.HasPrefix(got, "/c/sortie/claude/") {
		t.Errorf("with XDG_CACHE_HOME: %s", got)
	}
}

func TestResetConfigDir_KeepsOnlyTranscripts(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cfg")
	outside := t.TempDir()
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
	if err := os.WriteFile(filepath.Join(outside, "victim"), []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "commands")); err != nil {
		t.Fatal(err)
	}

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
	if b, err := os.ReadFile(filepath.Join(outside, "victim")); err != nil || string(b) != "keep me" {
		t.Errorf("the reset reached through a link: %q, %v", b, err)
	}
}

func TestResetConfigDir_CopiesTheLoginOnlyWhenAsked(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cfg")
	login := filepath.Join(t.TempDir(), ".credentials.json")
	if err := os.WriteFile(login, []byte(`{"claudeAiOauth":{}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := resetConfigDir(dir, nil, login); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, credentialsFile)); err != nil || string(b) != `{"claudeAiOauth":{}}` {
		t.Fatalf("copied login = %q, %v", b, err)
	}
	// The CLI refreshes its tokens in the copy, which is then newer: it is kept.
	if err := os.WriteFile(filepath.Join(dir, credentialsFile), []byte("refreshed"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := resetConfigDir(dir, nil, login); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, credentialsFile)); string(b) != "refreshed" {
		t.Errorf("the refreshed copy was replaced: %q", b)
	}
	if err := resetConfigDir(dir, nil, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, credentialsFile)); err == nil {
		t.Errorf("without use_login, the copied login stays")
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

func TestResetConfigDir_RefusesALinkOnTheWay(t *testing.T) {
	base, elsewhere := t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(base, "sortie", "claude"), 0o700)
	if err := os.Symlink(elsewhere, filepath.Join(base, "sortie", "claude", "wf")); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(elsewhere, "issue"), 0o700)
	os.WriteFile(filepath.Join(elsewhere, "issue", "precious"), []byte("x"), 0o600)
	if err := resetConfigDir(filepath.Join(base, "sortie", "claude", "wf", "issue"), nil, ""); err == nil {
		t.Errorf("reset through a link: no error")
	}
	if _, err := os.Stat(filepath.Join(elsewhere, "issue", "precious")); err != nil {
		t.Errorf("the reset removed a file through a link: %v", err)
	}
}

// A new issue's directory gets an empty .claude.json, written in place; and a fresh
// write that finds something at the name after all (it appeared once the directory
// was found empty) replaces it by rename, never writing through it.
func TestResetConfigDir_NewDirectoryAndALateArrival(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sortie", "claude", "wf", "issue")
	if err := resetConfigDir(dir, nil, ""); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != globalStateFile {
		t.Fatalf("a new directory holds %v, want only %s", entries, globalStateFile)
	}
	fi, err := os.Lstat(filepath.Join(dir, globalStateFile))
	if b, _ := os.ReadFile(filepath.Join(dir, globalStateFile)); err != nil || string(b) != "{}" || fi.Mode() != 0o600 {
		t.Errorf("%s = %q (%v, %v), want {} with mode 0600", globalStateFile, b, fi.Mode(), err)
	}

	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(dir, "late")); err != nil {
		t.Fatal(err)
	}
	root, err := agent.OpenStateDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if err := writeFile(root, "late", []byte("new"), nil, true); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep me" {
		t.Errorf("the fresh write went through a link: the victim holds %q", b)
	}
	if fi, err := os.Lstat(filepath.Join(dir, "late")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("the link was not replaced by a file: %v, %v", fi, err)
	}
	if _, err := os.Lstat(filepath.Join(dir, ".sortie-late")); err == nil {
		t.Error("the temporary file was left behind")
	}
}
