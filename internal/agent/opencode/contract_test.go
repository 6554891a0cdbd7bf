package opencode

// Contract tests of what only OpenCode does: the real opencode CLI, at the version
// pinned in scripts/clis, driven through the adapter against the fake Anthropic API in
// internal/testkit/fakemodel, which OpenCode's anthropic provider reaches through a
// baseURL in the adapter's inline configuration. What every adapter does is the
// agenttest suite's (agenttest_test.go).

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sortie/internal/agent"
	"sortie/internal/agent/agenttest"
	"sortie/internal/testkit/clis"
	"sortie/internal/testkit/fakemodel"
)

var update = flag.Bool("update", false, "re-capture testdata/*.jsonl from the real CLI")

// model is the model the fake sees requested (clis.OpenCodeModel without the provider).
const model = "claude-sonnet-4-5"

// rig is one contract test's world: a fake model, a HOME, an isolated OpenCode state
// directory, and sessions of the adapter running the real CLI through a wrapper that
// records argv.
type rig struct {
	agenttest.Rig
	model    *fakemodel.Server
	home     string
	state    string
	argvFile string
	opts     map[string]any
}

func newRig(t *testing.T, opts map[string]any, script ...fakemodel.Reply) *rig {
	t.Helper()
	r := &rig{model: fakemodel.Start(t, script...), home: t.TempDir(), state: t.TempDir()}
	wrapper, argvFile := clis.WrapCLI(t, clis.OpenCode(t))
	r.argvFile = argvFile
	r.WS, r.Env = t.TempDir(), clis.OpenCodeEnv(os.Environ(), r.home, sharedCache)
	if opts == nil {
		opts = map[string]any{}
	}
	cfg := clis.OpenCodeConfig(r.model.URL)
	if extra, ok := opts["config"].(map[string]any); ok {
		for k, v := range extra {
			cfg[k] = v
		}
	}
	opts["config"] = cfg
	if _, ok := opts["state_dir"]; !ok {
		opts["state_dir"] = r.state
	}
	r.opts = opts
	a, err := New(agent.Config{Kind: Kind, Command: wrapper, Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	r.Adapter = a
	return r
}

// argvs returns the argument lists the CLI was started with, one per turn.
func (r *rig) argvs(t *testing.T) [][]string { return clis.ReadArgvs(t, r.argvFile) }

func TestContract_VersionIsThePinnedCLI(t *testing.T) {
	r := newRig(t, nil)
	v, err := r.Adapter.(agent.Versioner).Version(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if v != "1.18.33" {
		t.Errorf("version = %q, want the pinned 1.18.33", v)
	}
}

// A daemon restarted with the same state directory resumes the session it had.
func TestContract_ResumeAfterRestart(t *testing.T) {
	r := newRig(t, nil,
		fakemodel.Reply{Text: "Noted: KIWI."},
		fakemodel.Reply{Text: "It was KIWI."},
	)
	s := r.Start(t, agent.StartParams{})
	agenttest.MustComplete(t, r.Turn(t, s, 1, "Remember KIWI."))
	r.Adapter.StopSession(context.Background(), s)

	again, err := New(agent.Config{Kind: Kind, Command: clis.OpenCode(t), Options: r.opts})
	if err != nil {
		t.Fatal(err)
	}
	r.Adapter = again
	s2 := r.Start(t, agent.StartParams{ResumeSessionID: s.ID})
	o := r.Turn(t, s2, 1, "Which fruit?")
	agenttest.MustComplete(t, o)
	if s2.ID != s.ID {
		t.Errorf("resumed session id = %s, want %s", s2.ID, s.ID)
	}
	if tr := r.model.Messages()[1].Transcript(); !strings.Contains(tr, "Noted: KIWI.") {
		t.Errorf("the resumed turn's request lacks the first exchange:\n%s", tr)
	}
}

// With a permission configuration, turns run without --auto, and a request the
// configuration asks a human about ends the turn as needing input.
func TestContract_PermissionAskEndsTheTurnForInput(t *testing.T) {
	r := newRig(t, map[string]any{"permission": map[string]any{"bash": "ask"}},
		fakemodel.Reply{ToolUses: []fakemodel.ToolUse{{Name: "bash", Input: map[string]any{"command": "touch asked.txt", "description": "touch"}}}},
		fakemodel.Reply{Text: "never asked"},
	)
	s := r.Start(t, agent.StartParams{})
	o := r.Turn(t, s, 1, "touch a file")
	if agent.KindOf(o.Err) != agent.ErrTurnInputRequired || o.Result.ExitReason != agent.EventTurnInputRequired {
		t.Fatalf("turn = %s, %v; want turn_input_required; events %v", o.Result.ExitReason, o.Err, describe(o.Events))
	}
	if slices.Contains(r.argvs(t)[0], "--auto") {
		t.Errorf("argv %q: --auto with a permission configuration", r.argvs(t)[0])
	}
	if _, err := os.Stat(filepath.Join(r.WS, "asked.txt")); err == nil {
		t.Errorf("the command ran although its permission was only asked for")
	}
	if tools := o.Of(agent.EventToolResult); len(tools) != 1 || !tools[0].ToolError {
		t.Errorf("tool_result events = %+v, want one rejected bash call", tools)
	}
}

// The operator's personal OpenCode configuration (XDG_CONFIG_HOME/opencode) does not
// reach a run: here it names a model provider that does not exist.
func TestContract_PersonalConfigIsIgnored(t *testing.T) {
	r := newRig(t, nil, fakemodel.Reply{Text: "hello"})
	personal := filepath.Join(r.home, ".config", "opencode")
	if err := os.MkdirAll(personal, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(personal, "opencode.json"), []byte(`{"model": "nowhere/broken", "share": "auto"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(append([]string(nil), r.Env...), "OPENCODE_CONFIG="+filepath.Join(personal, "opencode.json"))
	s := r.Start(t, agent.StartParams{Env: env})
	agenttest.MustComplete(t, r.Turn(t, s, 1, "hi"))
	if reqs := r.model.Messages(); len(reqs) != 1 || reqs[0].Model != model {
		t.Errorf("requests = %+v, want one for %s", reqs, model)
	}
}

func describe(events []agent.Event) []string {
	var out []string
	for _, e := range events {
		out = append(out, string(e.Type)+": "+agent.Truncate(e.Message, 200))
	}
	return out
}
