package gemini

import (
	"strings"
	"testing"
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
