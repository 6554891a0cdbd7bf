package tools

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestStatus_ReportsTheStateFile(t *testing.T) {
	two := 2
	tests := []struct {
		name   string
		state  func(*State)
		maxCfg int
		now    time.Time
		want   string
	}{
		{
			name: "spec example",
			now:  t0.Add(142537 * time.Millisecond),
			want: `{"turn_number":3,"max_turns":20,"turns_remaining":17,"attempt":null,"session_duration_seconds":142.537,` +
				`"tokens":{"input_tokens":45000,"output_tokens":12000,"total_tokens":57000,"cache_read_tokens":8000}}`,
		},
		{
			name:  "a retry reports its attempt",
			state: func(s *State) { s.Attempt = &two },
			now:   t0.Add(time.Second),
			want: `{"turn_number":3,"max_turns":20,"turns_remaining":17,"attempt":2,"session_duration_seconds":1,` +
				`"tokens":{"input_tokens":45000,"output_tokens":12000,"total_tokens":57000,"cache_read_tokens":8000}}`,
		},
		{
			name:  "turns remaining never go below zero",
			state: func(s *State) { s.TurnNumber, s.MaxTurns, s.Tokens = 25, 20, Tokens{} },
			now:   t0.Add(1500 * time.Microsecond), // rounds to the millisecond
			want: `{"turn_number":25,"max_turns":20,"turns_remaining":0,"attempt":null,"session_duration_seconds":0.002,` +
				`"tokens":{"input_tokens":0,"output_tokens":0,"total_tokens":0,"cache_read_tokens":0}}`,
		},
		{
			name:   "max_turns from WORKFLOW.md when the file has none",
			state:  func(s *State) { s.MaxTurns, s.Tokens = 0, Tokens{} },
			maxCfg: 5,
			now:    t0.Add(-time.Second), // our clock behind the daemon's: no negative duration
			want: `{"turn_number":3,"max_turns":5,"turns_remaining":2,"attempt":null,"session_duration_seconds":0,` +
				`"tokens":{"input_tokens":0,"output_tokens":0,"total_tokens":0,"cache_read_tokens":0}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := t.TempDir()
			st := validState()
			if tt.state != nil {
				tt.state(&st)
			}
			writeState(t, ws, st)
			got, isErr := callTool(t, NewStatus(ws, tt.maxCfg, func() time.Time { return tt.now }), "{}")
			if isErr || got != tt.want {
				t.Fatalf("sortie_status = %s (isError %v)\nwant %s", got, isErr, tt.want)
			}
		})
	}
}

func TestStatus_RefusesUnsafeOrBadStateFiles(t *testing.T) {
	tests := []struct {
		name    string
		prepare func(t *testing.T, ws string)
		want    string // the whole error message
	}{
		{
			name:    "not written yet",
			prepare: func(*testing.T, string) {},
			want:    "state file unavailable: open .sortie/state.json: no such file or directory",
		},
		{
			name: "no state file in .sortie",
			prepare: func(t *testing.T, ws string) {
				mkdir(t, filepath.Join(ws, ".sortie"))
			},
			want: "state file unavailable: open .sortie/state.json: no such file or directory",
		},
		{
			name: "symlinked .sortie directory",
			prepare: func(t *testing.T, ws string) {
				elsewhere := t.TempDir()
				writeState(t, elsewhere, validState())
				symlink(t, filepath.Join(elsewhere, ".sortie"), filepath.Join(ws, ".sortie"))
			},
			want: "state file unavailable: .sortie is a symlink; refusing to follow it",
		},
		{
			name: "symlinked state file",
			prepare: func(t *testing.T, ws string) {
				elsewhere := t.TempDir()
				writeState(t, elsewhere, validState())
				mkdir(t, filepath.Join(ws, ".sortie"))
				symlink(t, filepath.Join(elsewhere, StateFile), filepath.Join(ws, StateFile))
			},
			want: "state file unavailable: .sortie/state.json is a symlink; refusing to follow it",
		},
		{
			name: "larger than 4 KiB",
			prepare: func(t *testing.T, ws string) {
				writeStateBytes(t, ws, []byte(`{"version":1,"pad":"`+strings.Repeat("x", MaxStateFileSize)+`"}`))
			},
			want: fmt.Sprintf("state file unavailable: .sortie/state.json is %d bytes, larger than the 4096-byte limit",
				len(`{"version":1,"pad":""}`)+MaxStateFileSize),
		},
		{
			name: "a directory",
			prepare: func(t *testing.T, ws string) {
				mkdir(t, filepath.Join(ws, StateFile))
			},
			want: "state file unavailable: .sortie/state.json is not a regular file",
		},
		{
			name:    "truncated JSON",
			prepare: func(t *testing.T, ws string) { writeStateBytes(t, ws, []byte(`{"version":1,"turn_`)) },
			want:    "state file unavailable: .sortie/state.json: invalid JSON: unexpected end of JSON input",
		},
		{
			name: "another format version",
			prepare: func(t *testing.T, ws string) {
				st := validState()
				st.Version = 2
				writeState(t, ws, st)
			},
			want: "state file unavailable: .sortie/state.json: version 2, this sidecar reads version 1 (is the daemon a different sortie release?)",
		},
		{
			name: "negative counter",
			prepare: func(t *testing.T, ws string) {
				st := validState()
				st.Tokens.Input = -1
				writeState(t, ws, st)
			},
			want: "state file unavailable: .sortie/state.json: negative counter",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := t.TempDir()
			tt.prepare(t, ws)
			got, isErr := callTool(t, NewStatus(ws, 20, nil), "{}")
			want := `{"error":` + quote(tt.want) + `,"kind":"state_unavailable"}`
			if !isErr || got != want {
				t.Fatalf("sortie_status = %s (isError %v)\nwant %s", got, isErr, want)
			}
		})
	}
}

func TestStatus_RejectsArguments(t *testing.T) {
	ws := t.TempDir()
	writeState(t, ws, validState())
	for _, args := range []string{`{"turn":1}`, `[]`, `7`} {
		got, isErr := callTool(t, NewStatus(ws, 20, nil), args)
		if m := decodeJSON(t, got); !isErr || m["kind"] != KindInvalidInput {
			t.Errorf("sortie_status(%s) = %s (isError %v); want an invalid_input error", args, got, isErr)
		}
	}
}

func mkdir(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(p, 0o700); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
