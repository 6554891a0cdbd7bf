package gemini

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const repairID = "11111111-2222-4333-8444-555555555556"

// A transcript as 0.61.0 writes it (trimmed): the model's message records its tool
// call's result, and the user message after it holds the same response again; a
// resume writes the history back with both.
var brokenTranscript = strings.Join([]string{
	`{"sessionId":"` + repairID + `","kind":"main"}`,
	`{"id":"u1","type":"user","content":[{"text":"do it"}]}`,
	`{"id":"g1","type":"gemini","content":"","toolCalls":[{"id":"c1","result":[{"functionResponse":{"id":"c1","name":"run_shell_command","response":{"output":"ok"}}}]}]}`,
	`{"id":"u2","type":"user","content":[{"functionResponse":{"id":"c1","name":"run_shell_command","response":{"output":"ok"}}}]}`,
	`{"$set":{"lastUpdated":"x"}}`,
	`{"$set":{"messages":[{"id":"u1","type":"user","content":[{"text":"do it"}]},{"id":"g1","type":"gemini","content":[{"functionCall":{"id":"c1","name":"run_shell_command"}}]},{"id":"a","type":"user","content":[{"functionResponse":{"id":"c1","response":{}}}]},{"id":"b","type":"user","content":[{"functionResponse":{"id":"c1","response":{}}}]}],"other":1}}`,
	`{"id":"u3","type":"user","content":[{"text":"next"}]}`,
	``,
}, "\n")

func TestRepairTranscript_DropsRepeatedResponses(t *testing.T) {
	got := string(repairTranscript([]byte(brokenTranscript), repairID))
	if strings.Contains(got, `"id":"u2"`) {
		t.Errorf("the repeated user record stayed:\n%s", got)
	}
	if strings.Contains(got, `"id":"b"`) || !strings.Contains(got, `"id":"a"`) || !strings.Contains(got, `"other":1`) {
		t.Errorf("the written-back history was not repaired, or lost more than the repeat:\n%s", got)
	}
	for _, keep := range []string{`"id":"u1"`, `"id":"g1"`, `"id":"u3"`, `"lastUpdated":"x"`} {
		if !strings.Contains(got, keep) {
			t.Errorf("the repair lost %s:\n%s", keep, got)
		}
	}
	if again := string(repairTranscript([]byte(got), repairID)); again != got {
		t.Errorf("a second repair changed the transcript:\n%s", again)
	}
}

func TestRepairTranscript_LeavesOthersAlone(t *testing.T) {
	for _, in := range []string{brokenTranscript, "", "not json\n{}", `{"sessionId":"` + repairID + `"}` + "\n{broken"} {
		id := "another-session"
		if in != brokenTranscript {
			id = repairID
		}
		if got := string(repairTranscript([]byte(in), id)); got != in && in == brokenTranscript {
			t.Errorf("another session's transcript was changed")
		} else if in != brokenTranscript && got != in {
			t.Errorf("repair(%q) = %q, want it unchanged", in, got)
		}
	}
}

// prepareHome repairs a resumed session's transcript in the home, leaves one
// that needs no repair as it is (not rewritten), and never overwrites one it would not
// read (here: hard-linked, as statedir refuses) with nothing.
func TestPrepareHome_RepairsOnlyWhatItReadsAndNeedsIt(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	chatsDir := filepath.Join(home, ".gemini", "tmp", "p1", "chats")
	if err := os.MkdirAll(chatsDir, 0o700); err != nil {
		t.Fatal(err)
	}
	broken := filepath.Join(chatsDir, "session-2026-01-01T00-00-"+repairID[:8]+".jsonl")
	clean := filepath.Join(chatsDir, "session-2026-01-02T00-00-"+repairID[:8]+".jsonl")
	linked := filepath.Join(chatsDir, "session-2026-01-03T00-00-"+repairID[:8]+".jsonl")
	cleanText := `{"sessionId":"` + repairID + `"}` + "\n" + `{"id":"u1","type":"user","content":[{"text":"hi"}]}` + "\n"
	for name, text := range map[string]string{broken: brokenTranscript, clean: cleanText, linked: brokenTranscript} {
		if err := os.WriteFile(name, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(linked, filepath.Join(filepath.Dir(home), "elsewhere")); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(clean, old, old); err != nil {
		t.Fatal(err)
	}
	if err := prepareHome(home, nil, []byte("{}"), repairID, true); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(broken); strings.Contains(string(got), `"id":"u2"`) || !strings.Contains(string(got), `"id":"u1"`) {
		t.Errorf("the session's transcript was not repaired:\n%s", got)
	}
	if fi, err := os.Stat(clean); err != nil || !fi.ModTime().Equal(old) {
		t.Errorf("a transcript with nothing to repair was rewritten (or lost): %v", err)
	}
	if got, _ := os.ReadFile(linked); string(got) != brokenTranscript {
		t.Errorf("a transcript statedir would not read was overwritten:\n%q", got)
	}
}
