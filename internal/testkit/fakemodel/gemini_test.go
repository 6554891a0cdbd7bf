package fakemodel

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func postGemini(t *testing.T, s *GeminiServer, model, method, body string) *http.Response {
	t.Helper()
	url := s.URL + "/v1beta/models/" + model + ":" + method
	if method == "streamGenerateContent" {
		url += "?alt=sse"
	}
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// geminiChunks reads a Gemini stream into its chunks, in order.
func geminiChunks(t *testing.T, r io.Reader) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			var m map[string]any
			if err := json.Unmarshal([]byte(d), &m); err != nil {
				t.Fatalf("chunk is not JSON: %v: %s", err, d)
			}
			out = append(out, m)
		}
	}
	return out
}

func candidateParts(t *testing.T, chunk map[string]any) []any {
	t.Helper()
	cand := chunk["candidates"].([]any)[0].(map[string]any)
	return cand["content"].(map[string]any)["parts"].([]any)
}

const geminiUserBody = `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],
	"systemInstruction":{"role":"user","parts":[{"text":"be brief"}]},
	"tools":[{"functionDeclarations":[{"name":"run_shell_command"},{"name":"mcp_tools_ping"}]}]}`

func TestGemini_StreamsTextFunctionCallsAndUsage(t *testing.T) {
	s := StartGemini(t, GeminiReply{Text: "Listing.", FunctionCalls: []GeminiCall{
		{Name: "run_shell_command", Args: map[string]any{"command": "ls"}},
		{Name: "mcp_tools_ping", ID: "call_x"},
	}, Usage: Usage{InputTokens: 40, OutputTokens: 7, CacheReadInputTokens: 3}})
	resp := postGemini(t, s, "gemini-2.5-pro", "streamGenerateContent", geminiUserBody)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	chunks := geminiChunks(t, resp.Body)
	if len(chunks) != 2 {
		t.Fatalf("%d chunks, want text then calls: %v", len(chunks), chunks)
	}
	if p := candidateParts(t, chunks[0]); p[0].(map[string]any)["text"] != "Listing." {
		t.Errorf("first chunk %v", p)
	}
	if _, ok := chunks[0]["usageMetadata"]; ok {
		t.Error("usage on a chunk before the last")
	}
	last := chunks[1]
	calls := candidateParts(t, last)
	if len(calls) != 2 {
		t.Fatalf("last chunk's parts %v", calls)
	}
	fc := calls[0].(map[string]any)["functionCall"].(map[string]any)
	if fc["name"] != "run_shell_command" || fc["args"].(map[string]any)["command"] != "ls" || fc["id"] != nil {
		t.Errorf("first call %v", fc)
	}
	if calls[0].(map[string]any)["thoughtSignature"] == nil {
		t.Error("first call carries no thoughtSignature")
	}
	if fc := calls[1].(map[string]any)["functionCall"].(map[string]any); fc["id"] != "call_x" || len(fc["args"].(map[string]any)) != 0 {
		t.Errorf("second call %v", fc)
	}
	if cand := last["candidates"].([]any)[0].(map[string]any); cand["finishReason"] != "STOP" {
		t.Errorf("finishReason %v", cand["finishReason"])
	}
	u := last["usageMetadata"].(map[string]any)
	if u["promptTokenCount"] != 40.0 || u["candidatesTokenCount"] != 7.0 || u["totalTokenCount"] != 47.0 || u["cachedContentTokenCount"] != 3.0 {
		t.Errorf("usage %v", u)
	}
	if last["modelVersion"] != "gemini-2.5-pro" {
		t.Errorf("modelVersion %v", last["modelVersion"])
	}

	reqs := s.Turns()
	if len(reqs) != 1 {
		t.Fatalf("%d turns recorded", len(reqs))
	}
	r := reqs[0]
	if r.Model != "gemini-2.5-pro" || r.Action != "streamGenerateContent" || r.System != "be brief" ||
		strings.Join(r.Tools, ",") != "run_shell_command,mcp_tools_ping" || r.Transcript() != "user: hi" || r.Reply != 0 {
		t.Errorf("recorded %+v", r)
	}
}

func TestGemini_PlainTextIsOneChunkAndDefaultReplyAfterScript(t *testing.T) {
	s := StartGemini(t, GeminiReply{Text: "one"})
	for i, want := range []string{"one", "done"} {
		chunks := geminiChunks(t, postGemini(t, s, "m", "streamGenerateContent", geminiUserBody).Body)
		if len(chunks) != 1 || candidateParts(t, chunks[0])[0].(map[string]any)["text"] != want {
			t.Fatalf("reply %d: %v", i, chunks)
		}
		if u := chunks[0]["usageMetadata"].(map[string]any); u["promptTokenCount"] != 10.0 {
			t.Errorf("default usage %v", u)
		}
	}
	if got := s.Turns()[1].Reply; got != -1 {
		t.Errorf("default reply recorded as %d", got)
	}
}

func TestGemini_ErrorHasTheAPIShape(t *testing.T) {
	s := StartGemini(t,
		GeminiReply{Status: 429, ErrorMessage: "slow down", RetryAfter: "3"},
		GeminiReply{Status: 500},
		GeminiReply{Status: 403, ErrorStatus: "CUSTOM", ErrorMessage: "no"})
	for _, want := range []struct {
		code        int
		status, msg string
	}{{429, "RESOURCE_EXHAUSTED", "slow down"}, {500, "INTERNAL", "fakemodel: scripted 500"}, {403, "CUSTOM", "no"}} {
		resp := postGemini(t, s, "m", "streamGenerateContent", geminiUserBody)
		var body struct {
			Error struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
				Status  string `json:"status"`
			} `json:"error"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != want.code || body.Error.Code != want.code || body.Error.Status != want.status || body.Error.Message != want.msg {
			t.Errorf("got %d %+v, want %+v", resp.StatusCode, body.Error, want)
		}
		if want.code == 429 && resp.Header.Get("Retry-After") != "3" {
			t.Errorf("Retry-After %q", resp.Header.Get("Retry-After"))
		}
	}
}

func TestGemini_RejectsUnpairedFunctionResponses(t *testing.T) {
	call := `{"role":"model","parts":[{"functionCall":{"name":"run_shell_command","args":{"command":"ls"}}}]}`
	resp1 := `{"functionResponse":{"name":"run_shell_command","response":{"output":"a.txt"}}}`
	cases := []struct {
		name, contents, want string
	}{
		{"paired", `[{"role":"user","parts":[{"text":"hi"}]},` + call + `,{"role":"user","parts":[` + resp1 + `]}]`, ""},
		{"doubled", `[{"role":"user","parts":[{"text":"hi"}]},` + call + `,{"role":"user","parts":[` + resp1 + `,` + resp1 + `]}]`, GeminiMismatchedResponses},
		{"missing", `[{"role":"user","parts":[{"text":"hi"}]},` + call + `,{"role":"user","parts":[{"text":"go on"}]}]`, GeminiMismatchedResponses},
		{"orphan", `[{"role":"user","parts":[{"text":"hi"}]},{"role":"model","parts":[{"text":"ok"}]},{"role":"user","parts":[` + resp1 + `]}]`, GeminiOrphanResponse},
		{"pending call", `[{"role":"user","parts":[{"text":"hi"}]},` + call + `]`, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := StartGemini(t, GeminiReply{Text: "scripted"})
			resp := postGemini(t, s, "m", "streamGenerateContent", `{"contents":`+c.contents+`}`)
			rec := s.Turns()[0]
			if c.want == "" {
				if resp.StatusCode != 200 || rec.Rejected != "" || rec.Reply != 0 {
					t.Fatalf("status %d, rejected %q, reply %d", resp.StatusCode, rec.Rejected, rec.Reply)
				}
				return
			}
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 400 || !strings.Contains(string(b), c.want) || !strings.Contains(string(b), "INVALID_ARGUMENT") {
				t.Fatalf("status %d body %s", resp.StatusCode, b)
			}
			if rec.Rejected != c.want || rec.Reply != -1 || len(s.Rejected()) != 1 {
				t.Errorf("recorded rejected %q reply %d", rec.Rejected, rec.Reply)
			}
			if s.Remaining() != 1 {
				t.Error("a rejected request took the scripted reply")
			}
		})
	}
}

func TestGemini_RecordsFunctionResponses(t *testing.T) {
	s := StartGemini(t)
	postGemini(t, s, "m", "streamGenerateContent", `{"contents":[{"role":"user","parts":[{"text":"hi"}]},
		{"role":"model","parts":[{"text":"thinking","thought":true},{"functionCall":{"name":"a","id":"c1","args":{"x":1}},"thoughtSignature":"sig"},{"functionCall":{"name":"b","id":"c2"}}]},
		{"role":"user","parts":[{"functionResponse":{"name":"a","id":"c1","response":{"output":"fine"}}},{"functionResponse":{"name":"b","id":"c2","response":{"error":"boom"}}}]}]}`)
	r := s.Turns()[0]
	if r.Rejected != "" {
		t.Fatal(r.Rejected)
	}
	calls, res := r.FunctionCalls(), r.FunctionResponses()
	if len(calls) != 2 || calls[0].ID != "c1" || string(calls[0].Args) != `{"x":1}` || r.Contents[1].Parts[0].Kind != "thought" {
		t.Errorf("calls %+v", calls)
	}
	if len(res) != 2 || res[0].Text != "fine" || res[0].IsError || res[1].Text != "boom" || !res[1].IsError {
		t.Errorf("responses %+v", res)
	}
	if last, _ := r.LastFunctionResponse(); last.ID != "c2" {
		t.Errorf("last %+v", last)
	}
	if r.Transcript() != "user: hi\nmodel: \nuser: " {
		t.Errorf("transcript %q", r.Transcript())
	}
}

func TestGemini_HelpersAnswerJSONWithoutTakingTheScript(t *testing.T) {
	s := StartGemini(t, GeminiReply{Text: "scripted"})
	resp := postGemini(t, s, "gemini-2.5-flash-lite", "generateContent", `{"contents":[{"role":"user","parts":[{"text":"who speaks?"}]}],
		"generationConfig":{"responseMimeType":"application/json","responseJsonSchema":{"type":"OBJECT","properties":{
		"reasoning":{"type":"STRING"},"next_speaker":{"type":"STRING","enum":["model","user"]},"score":{"type":"INTEGER"}}}}}`)
	var body map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(candidateParts(t, body)[0].(map[string]any)["text"].(string)), &v); err != nil {
		t.Fatal(err)
	}
	if v["next_speaker"] != "user" || v["score"] != 10.0 || v["reasoning"] == nil {
		t.Errorf("helper answered %v", v)
	}
	if _, ok := body["usageMetadata"]; ok {
		t.Error("a helper reports usage")
	}
	if s.Remaining() != 1 || len(s.Helpers()) != 1 || len(s.Turns()) != 0 {
		t.Errorf("remaining %d helpers %d turns %d", s.Remaining(), len(s.Helpers()), len(s.Turns()))
	}
	s.SetHelper(func(GeminiRequest) string { return "custom" })
	body = nil
	json.NewDecoder(postGemini(t, s, "m", "generateContent", geminiUserBody).Body).Decode(&body)
	if got := candidateParts(t, body)[0].(map[string]any)["text"]; got != "custom" {
		t.Errorf("SetHelper: %v", got)
	}
	// A non-streaming request marked for the script takes it.
	body = nil
	resp, err := http.Post(s.URL+"/v1beta/models/m:generateContent?fakemodel=script", "application/json", strings.NewReader(geminiUserBody))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	json.NewDecoder(resp.Body).Decode(&body)
	if got := candidateParts(t, body)[0].(map[string]any)["text"]; got != "scripted" || body["usageMetadata"] == nil {
		t.Errorf("scripted non-streaming: %v", body)
	}
}

func TestGemini_StallHoldsTheStreamUntilClose(t *testing.T) {
	s := NewGemini(GeminiReply{Stall: true})
	done := make(chan []byte, 1)
	go func() {
		resp, err := http.Post(s.URL+"/v1beta/models/m:streamGenerateContent?alt=sse", "application/json", strings.NewReader(geminiUserBody))
		if err != nil {
			done <- nil
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		done <- b
	}()
	if idx := s.WaitStall(t, 10*time.Second); idx != 0 {
		t.Fatalf("stalled reply %d", idx)
	}
	s.Close()
	if chunks := geminiChunks(t, bytes.NewReader(<-done)); len(chunks) != 1 {
		t.Errorf("stalled stream sent %v", chunks)
	}
}

func TestGemini_MalformedCountTokensAndModels(t *testing.T) {
	s := StartGemini(t, GeminiReply{Malformed: true})
	b, _ := io.ReadAll(postGemini(t, s, "m", "streamGenerateContent", geminiUserBody).Body)
	if !strings.HasPrefix(string(b), "data: {") || json.Valid(b[len("data: "):]) {
		t.Errorf("malformed stream %q", b)
	}
	var n map[string]int
	json.NewDecoder(postGemini(t, s, "m", "countTokens", geminiUserBody).Body).Decode(&n)
	if n["totalTokens"] <= 0 {
		t.Errorf("countTokens %v", n)
	}
	resp, err := http.Get(s.URL + "/v1beta/models")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct{ Models []map[string]any }
	json.NewDecoder(resp.Body).Decode(&list)
	if len(list.Models) != 1 {
		t.Errorf("models %v", list)
	}
}
