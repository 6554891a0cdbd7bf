package checkpoint

import "testing"

func TestParseChoose(t *testing.T) {
	for body, want := range map[string]string{
		"/sortie choose approve":                  "approve",
		"  /sortie   choose  revise \r\nbecause…": "revise",
		"/sortie choose `hand-off`":               "hand-off",
		"please /sortie choose approve":           "",
		"Reply with /sortie choose <option>":      "",
		"Sortie checkpoint: x\n/sortie choose a":  "",
		"/sortie choose":                          "",
		"/sortie choose two words":                "",
	} {
		got, ok := parseChoose(body)
		if got != want || ok != (want != "") {
			t.Errorf("parseChoose(%q) = %q, %v; want %q", body, got, ok, want)
		}
	}
}
