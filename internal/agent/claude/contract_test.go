package claude

// Contract tests of what only Claude Code does: the real claude CLI, at the version
// pinned in scripts/clis, driven through the adapter against the fake Anthropic API in
// internal/testkit/fakemodel. What every adapter does is the agenttest suite's
// (agenttest_test.go).

import (
	"context"
	"flag"
	"os"
	"strings"
	"testing"

	"sortie/internal/agent"
	"sortie/internal/agent/agenttest"
	"sortie/internal/testkit/clis"
	"sortie/internal/testkit/fakemodel"
)

var update = flag.Bool("update", false, "re-capture testdata/*.jsonl from the real CLI")

// model is the model every contract test asks for, so that names are deterministic.
const model = "claude-sonnet-4-5"

// rig is one contract test's world: a fake model, a HOME for the CLI's own files, and
// sessions of the adapter running the real CLI.
type rig struct {
	agenttest.Rig
	model *fakemodel.Server
	home  string
}

func newRig(t *testing.T, script ...fakemodel.Reply) *rig {
	t.Helper()
	r := &rig{model: fakemodel.Start(t, script...), home: t.TempDir()}
	r.WS, r.Env = t.TempDir(), clis.ClaudeEnv(os.Environ(), r.model.URL, r.home)
	a, err := New(agent.Config{Kind: Kind, Command: clis.Claude(t),
		Options: map[string]any{"permission_mode": "bypassPermissions", "model": model}})
	if err != nil {
		t.Fatal(err)
	}
	r.Adapter = a
	return r
}

// The CLI retries a 429 or 500 itself, saying so on its stream, then exits 1 with an
// error result naming the API status: the turn fails with port_exit, and the operator
// sees the retries and the error.
func TestContract_ModelErrorsSurfaceAndFail(t *testing.T) {
	cases := []struct {
		name   string
		reply  fakemodel.Reply
		status string
	}{
		{"429", fakemodel.Reply{Status: 429, RetryAfter: "0", Times: 2}, "status 429"},
		{"500", fakemodel.Reply{Status: 500, Times: 2}, "status 500"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, c.reply)
			o := r.Turn(t, r.Start(t, agent.StartParams{}), 1, "hello")
			if agent.KindOf(o.Err) != agent.ErrPortExit || o.Result.ExitReason != agent.EventTurnFailed {
				t.Fatalf("turn = %s, %v; want turn_failed with port_exit (the CLI exits 1)", o.Result.ExitReason, o.Err)
			}
			if !strings.Contains(o.Err.Error(), "API status "+c.name) {
				t.Errorf("error %q does not name the API status", o.Err)
			}
			var retry, apiErr bool
			for _, e := range o.Of(agent.EventNotification) {
				retry = retry || strings.Contains(e.Message, c.status)
				apiErr = apiErr || strings.Contains(e.Message, "API Error")
			}
			if !retry || !apiErr {
				t.Errorf("notifications %v: want the retry (%s) and the API error", o.Of(agent.EventNotification), c.status)
			}
			if reqs := r.model.Messages(); len(reqs) == 0 || reqs[0].Model != model {
				t.Errorf("model requests = %d; want them for %s (claude-code.model)", len(reqs), model)
			}
		})
	}
}

func TestContract_MalformedStreamFails(t *testing.T) {
	r := newRig(t, fakemodel.Reply{Malformed: true, Times: 4})
	o := r.Turn(t, r.Start(t, agent.StartParams{}), 1, "hello")
	if o.Err == nil || o.Result.ExitReason != agent.EventTurnFailed {
		t.Fatalf("turn = %s, %v; want a failure", o.Result.ExitReason, o.Err)
	}
}

func TestContract_VersionIsThePinnedCLI(t *testing.T) {
	r := newRig(t)
	v, err := r.Adapter.(agent.Versioner).Version(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(v, "(Claude Code)") {
		t.Errorf("version = %q, want \"<semver> (Claude Code)\"", v)
	}
}
