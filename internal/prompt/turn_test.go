package prompt

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"unsafe"
)

var sampleTools = []ToolDoc{
	{
		Name:        "tracker_api",
		Description: "Read and update issues in the configured tracker.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"operation":{"type":"string"}},"required":["operation"]}`),
	},
	{Name: "sortie_status", Description: "Turns left and tokens used.", InputSchema: json.RawMessage(`{"type":"object"}`)},
}

func TestTurnPrompt_FirstTurnAppendsToolsThenStatusProtocol(t *testing.T) {
	got := TurnPrompt("Fix PROJ-1.\n\n", 1, sampleTools)

	iBody := strings.Index(got, "Fix PROJ-1.")
	iTools := strings.Index(got, "## Available Sortie tools")
	iTracker := strings.Index(got, "### tracker_api")
	iStatus := strings.Index(got, "### sortie_status")
	iProtocol := strings.Index(got, StatusProtocolInstructions)
	if iBody != 0 || iTools <= iBody || iTracker <= iTools || iStatus <= iTracker || iProtocol <= iStatus {
		t.Fatalf("sections out of order (body %d, tools %d, tracker_api %d, sortie_status %d, protocol %d):\n%s",
			iBody, iTools, iTracker, iStatus, iProtocol, got)
	}
	for _, want := range []string{
		"Fix PROJ-1.\n\n## Available Sortie tools\n\n",
		"Read and update issues in the configured tracker.",
		"```json\n{\n  \"type\": \"object\",",
		`"required": [`,
		"Turns left and tokens used.",
		`mkdir -p .sortie && echo "blocked" > .sortie/status`,
		`"needs-human-review"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("first-turn prompt lacks %q:\n%s", want, got)
		}
	}
	if !strings.HasSuffix(got, StatusProtocolInstructions+"\n") {
		t.Errorf("first-turn prompt does not end with the status protocol instructions")
	}
}

func TestTurnPrompt_FirstTurnWithoutTools(t *testing.T) {
	got := TurnPrompt("Body", 1, nil)
	if want := "Body\n\n" + StatusProtocolInstructions + "\n"; got != want {
		t.Fatalf("TurnPrompt = %q, want %q", got, want)
	}
	if strings.Contains(got, "Available Sortie tools") {
		t.Error("tools section present with no tools")
	}
	// An empty template still gets the protocol, with no leading blank lines.
	if got := TurnPrompt(" \n", 1, nil); got != StatusProtocolInstructions+"\n" {
		t.Errorf("TurnPrompt(blank, 1) = %q", got)
	}
	// Turn 0 is not a valid turn number; it is treated as the first.
	if got := TurnPrompt("Body", 0, nil); !strings.Contains(got, StatusProtocolInstructions) {
		t.Errorf("TurnPrompt(turn 0) lacks the protocol: %q", got)
	}
}

func TestTurnPrompt_LaterTurns(t *testing.T) {
	tests := []struct {
		name, rendered string
		want           string
	}{
		{"rendered text as is", "Continue with PROJ-1.\n", "Continue with PROJ-1.\n"},
		{"blank falls back", "  \n\t\n", DefaultContinuationPrompt},
		{"empty falls back", "", DefaultContinuationPrompt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := TurnPrompt(tt.rendered, 2, sampleTools)
			if got != tt.want {
				t.Fatalf("TurnPrompt(%q, 2) = %q, want %q", tt.rendered, got, tt.want)
			}
			if strings.Contains(got, "Available Sortie tools") || strings.Contains(got, ".sortie/status") {
				t.Fatalf("continuation turn repeats first-turn suffixes: %q", got)
			}
		})
	}
}

func TestToolsSection_SchemaEdgeCases(t *testing.T) {
	got := toolsSection([]ToolDoc{
		{Name: "no_schema", Description: "none"},
		{Name: "bad_schema", InputSchema: json.RawMessage(`{not json`)},
	})
	if strings.Count(got, "Input schema:") != 1 || !strings.Contains(got, "{not json") {
		t.Fatalf("toolsSection =\n%s\nwant a schema only for bad_schema, shown as given", got)
	}
}

// A remembered section is reused only for the same tools, to the byte: a changed
// description or schema, even in the caller's own slice after the first call, gets a
// section of its own.
func TestToolsSection_ReusedOnlyForTheSameTools(t *testing.T) {
	tools := []ToolDoc{{Name: "memo_a", Description: "first", InputSchema: json.RawMessage(`{"type":"object"}`)}}
	first := toolsSection(tools)
	if again := toolsSection(slices.Clone(tools)); again != first || unsafe.StringData(again) != unsafe.StringData(first) {
		t.Errorf("the same tools got a section made again, not the remembered one:\n%s\nthen\n%s", first, again)
	}
	tools[0].InputSchema[2] = 'T' // the caller's bytes, changed in place
	if got := toolsSection(tools); got == first || !strings.Contains(got, `"Type"`) {
		t.Errorf("a changed schema got the remembered section:\n%s", got)
	}
	tools[0].Description = "second"
	if got := toolsSection(tools); !strings.Contains(got, "second") {
		t.Errorf("a changed description got a remembered section:\n%s", got)
	}
}
