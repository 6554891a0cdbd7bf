package gemini

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sortie/internal/testkit/clis"
	"sortie/internal/testkit/fakemodel"
)

var update = flag.Bool("update", false, "re-capture testdata/*.jsonl from the real CLI")

// captures are the scripted runs whose stream-json output testdata keeps: each is
// what the pinned CLI printed for that script.
var captures = map[string][]fakemodel.GeminiReply{
	"tools.jsonl":     {shell("echo one > one.txt"), shell("exit 3"), {Text: "Both ran."}},
	"api_error.jsonl": {{Status: 400, ErrorMessage: "Request contains an invalid argument.", Times: 5}},
}

// TestContract_Capture re-captures testdata with -update (the temporary paths and the
// session id scrubbed); otherwise it checks that the committed transcripts still parse.
func TestContract_Capture(t *testing.T) {
	for name, script := range captures {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join("testdata", name)
			if !*update {
				data, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				tr := replay(t, data)
				if tr.malformed > 0 || tr.tr.result == nil {
					t.Errorf("%s: %d malformed lines, result %v", path, tr.malformed, tr.tr.result)
				}
				return
			}
			m := fakemodel.StartGemini(t, script...)
			home, ws := filepath.Join(t.TempDir(), "home"), t.TempDir()
			env := clis.GeminiEnv(os.Environ(), m.URL, home)
			settings, err := options{AuthType: "gemini-api-key"}.settings(nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := prepareHome(home, nil, settings, "", false); err != nil {
				t.Fatal(err)
			}
			id := "00000000-0000-4000-8000-000000000001"
			cmd := exec.Command(clis.Gemini(t), options{ApprovalMode: "yolo", Model: clis.GeminiModel}.args(id, false)...)
			cmd.Dir, cmd.Env, cmd.Stdin = ws, append(env, homeEnv+"="+home), strings.NewReader("capture "+name)
			out, _ := cmd.Output()
			out = bytes.ReplaceAll(out, []byte(ws), []byte("/workspace"))
			if err := os.WriteFile(path, out, 0o644); err != nil {
				t.Fatal(err)
			}
		})
	}
}
