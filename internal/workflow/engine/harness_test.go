package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sortie/internal/store"
	"sortie/internal/workflow"
)

// testKey signs the tokens of every test engine.
var testKey = bytes.Repeat([]byte{0x5a}, 32)

// flowFiles is the library most tests run against, in all three formats:
//
//	start (yaml): steps read (skill own-skill), note (no skill), loop step
//	  loop-step (skill proto); blocking checkpoint go {approve → approved=true,
//	  reject → transitionTo done}; transitions work (approved == true), done (default)
//	work (json): step build; checkpoints auto (non-blocking, default ok after 2500 ms),
//	  maybe (conditional), later (not required); transition done (default)
//	done (toon): no steps, no transitions
var flowFiles = map[string]string{
	"flow/workflow.yaml": `id: flow
version: 1.0.0
title: Test flow
description: A small flow for engine tests.
tags: [test]
initialActivity: start
skills: [proto]
variables:
  - {name: approved, type: boolean}
  - {name: size, type: number}
`,
	"flow/activities/01-start.yaml": `id: start
version: 1.0.0
name: Start
steps:
  - {id: read, name: Read, skill: own-skill}
  - {id: note, name: Note}
loops:
  - id: again
    name: Again
    type: while
    condition: {type: simple, variable: size, operator: ">", value: 0}
    steps:
      - {id: loop-step, name: Loop step, skill: proto}
checkpoints:
  - id: go
    name: Go?
    message: Go on?
    options:
      - {id: approve, label: Approve, effect: {setVariable: {approved: true}}}
      - {id: reject, label: Reject, effect: {transitionTo: done, skipActivities: [work]}}
transitions:
  - to: work
    condition: {type: simple, variable: approved, operator: "==", value: true}
  - to: done
    isDefault: true
`,
	"flow/activities/02-work.json": `{
  "id": "work", "version": "1.0.0", "name": "Work",
  "steps": [{"id": "build", "name": "Build"}],
  "checkpoints": [
    {"id": "auto", "name": "Auto", "message": "Auto?", "blocking": false, "defaultOption": "ok", "autoAdvanceMs": 2500,
     "options": [{"id": "ok", "label": "OK", "effect": {"setVariable": {"size": 1}}}, {"id": "stop", "label": "Stop"}]},
    {"id": "maybe", "name": "Maybe", "message": "Maybe?",
     "condition": {"type": "simple", "variable": "size", "operator": ">=", "value": 2},
     "options": [{"id": "yes", "label": "Yes"}]},
    {"id": "later", "name": "Later", "message": "Later?", "required": false, "options": [{"id": "fine", "label": "Fine"}]}
  ],
  "transitions": [{"to": "done", "isDefault": true}]
}
`,
	"flow/activities/03-done.toon": `id: done
version: 1.0.0
name: Done
`,
	"flow/skills/01-own-skill.yaml": `id: own-skill
version: 1.0.0
capability: Read things.
resources: ["5", "meta/1"]
rules: {care: Read carefully.}
`,
	"flow/resources/005-notes.md": "---\nid: notes\nversion: 2.0.0\n---\nFlow notes.\n",
	"meta/workflow.toon":          "id: meta\nversion: 1.0.0\ntitle: Meta\n",
	"meta/skills/00-proto.yaml": `id: proto
version: 1.0.0
capability: Keep the token current.
resources: ["01"]
`,
	"meta/resources/00-discovery.md": "Start with list_workflows.\n",
	"meta/resources/01-guide.md":     "---\nid: guide\nversion: 1.1.0\n---\nThe guide.\n",
	"other/workflow.toon":            "id: other\nversion: 3.0.0\ntitle: Other\n",
	"other/activities/01-only.toon":  "id: only\nversion: 1.0.0\nname: Only\n",
}

// writeLibrary writes files (path → content) under a new directory and loads it.
func writeLibrary(t testing.TB, files map[string]string) *workflow.Library {
	t.Helper()
	dir := t.TempDir()
	for p, c := range files {
		path := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	lib, err := workflow.LoadLibrary(dir)
	if err != nil {
		t.Fatalf("test library: %v", err)
	}
	return lib
}

// withFiles returns a copy of base with changes applied ("" deletes a file).
func withFiles(base map[string]string, changes map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range changes {
		if v == "" {
			delete(out, k)
		} else {
			out[k] = v
		}
	}
	return out
}

// clock is an injected clock tests move by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// harness is one engine over a MemoryState with an injected clock, plus the
// session token of the session under test.
type harness struct {
	t     testing.TB
	e     *Engine
	st    *MemoryState
	clk   *clock
	lib   atomic.Pointer[workflow.Library]
	opts  Options
	tok   string
	calls []hookCall
	mu    sync.Mutex
}

type hookCall struct {
	hook   string
	caller Caller
	cps    []store.Checkpoint
}

type option func(*Options)

func humans(o *Options) { o.Humans = true }

func newHarness(t testing.TB, lib *workflow.Library, opts ...option) *harness {
	t.Helper()
	st, err := NewMemoryState("")
	if err != nil {
		t.Fatal(err)
	}
	return newHarnessState(t, lib, st, opts...)
}

func newHarnessState(t testing.TB, lib *workflow.Library, st *MemoryState, opts ...option) *harness {
	t.Helper()
	h := &harness{t: t, st: st, clk: &clock{t: time.Unix(1_750_000_000, 0)}}
	h.lib.Store(lib)
	h.opts = Options{Library: h.lib.Load, Key: testKey, State: st, Now: h.clk.Now, Server: "test", Version: "9.9.9",
		Hooks: Hooks{
			Armed: func(c Caller, cps []store.Checkpoint) {
				h.mu.Lock()
				defer h.mu.Unlock()
				h.calls = append(h.calls, hookCall{hook: "armed", caller: c, cps: cps})
			},
			Resolved: func(c Caller, cp store.Checkpoint) {
				h.mu.Lock()
				defer h.mu.Unlock()
				h.calls = append(h.calls, hookCall{hook: "resolved", caller: c, cps: []store.Checkpoint{cp}})
			},
		}}
	for _, o := range opts {
		o(&h.opts)
	}
	e, err := New(h.opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Restore(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.e = e
	return h
}

// raw calls tool with args (a JSON string, a json.RawMessage or a value to marshal).
func (h *harness) raw(c Caller, tool string, args any) Response {
	h.t.Helper()
	var b json.RawMessage
	switch a := args.(type) {
	case nil:
	case string:
		b = json.RawMessage(a)
	case json.RawMessage:
		b = a
	default:
		var err error
		if b, err = json.Marshal(a); err != nil {
			h.t.Fatal(err)
		}
	}
	return h.e.Call(context.Background(), c, tool, b)
}

// obj is a tool's arguments or body.
type obj = map[string]any

// body returns a response body as decoded JSON.
func body(t testing.TB, r Response) any {
	t.Helper()
	b, err := json.Marshal(r.Body)
	if err != nil {
		t.Fatalf("body does not marshal: %v", err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// withTok adds the current session token to args unless it names one.
func (h *harness) withTok(args obj) obj {
	out := obj{}
	for k, v := range args {
		out[k] = v
	}
	if _, ok := out["session_token"]; !ok && h.tok != "" {
		out["session_token"] = h.tok
	}
	return out
}

// ok calls a token tool as caller c with the session's token, expects success, checks
// that the new token and the validation are in both body and Meta, and keeps the token.
func (h *harness) okAs(c Caller, tool string, args obj) obj {
	h.t.Helper()
	r := h.raw(c, tool, h.withTok(args))
	if r.IsError {
		h.t.Fatalf("%s(%v): error %v", tool, args, body(h.t, r))
	}
	m, ok := body(h.t, r).(obj)
	if !ok {
		h.t.Fatalf("%s: body %v is not an object", tool, body(h.t, r))
	}
	tok, _ := m["session_token"].(string)
	if tok == "" || r.Meta["session_token"] != tok {
		h.t.Fatalf("%s: body session_token %q, _meta session_token %v: want the same new token in both", tool, tok, r.Meta["session_token"])
	}
	if tok == h.tok {
		h.t.Fatalf("%s: returned the token it was given; every call issues a new one", tool)
	}
	if tool != ToolStartSession || m["inherited"] == true {
		mv, _ := json.Marshal(r.Meta["validation"])
		bv, _ := json.Marshal(m["validation"])
		if r.Meta["validation"] == nil || string(mv) != string(bv) {
			h.t.Fatalf("%s: _meta validation %s, body validation %s: want the same in both", tool, mv, bv)
		}
	}
	h.tok = tok
	return m
}

func (h *harness) ok(tool string, args obj) obj {
	h.t.Helper()
	return h.okAs(Caller{}, tool, args)
}

// errAs calls tool and expects an error of kind; it returns the message. The
// session token is unchanged.
func (h *harness) errAs(c Caller, tool string, args obj, kind string) string {
	h.t.Helper()
	r := h.raw(c, tool, h.withTok(args))
	if !r.IsError {
		h.t.Fatalf("%s(%v) succeeded with %v; want error %s", tool, args, body(h.t, r), kind)
	}
	b, ok := r.Body.(errorBody)
	if !ok {
		h.t.Fatalf("%s: error body %T, want errorBody", tool, r.Body)
	}
	if b.Kind != kind {
		h.t.Fatalf("%s(%v): error kind %q (%s), want %q", tool, args, b.Kind, b.Error, kind)
	}
	if r.Meta != nil {
		h.t.Fatalf("%s: an error carries _meta %v", tool, r.Meta)
	}
	return b.Error
}

func (h *harness) err(tool string, args obj, kind string) string {
	h.t.Helper()
	return h.errAs(Caller{}, tool, args, kind)
}

// start begins a session of workflow wf.
func (h *harness) start(wf string) obj {
	h.t.Helper()
	h.tok = ""
	return h.ok(ToolStartSession, obj{"workflow_id": wf})
}

// warnings returns the validation warnings of a body.
func warnings(t testing.TB, m obj) []string {
	t.Helper()
	v, ok := m["validation"].(obj)
	if !ok {
		t.Fatalf("body has no validation: %v", m)
	}
	var out []string
	for _, w := range v["warnings"].([]any) {
		out = append(out, w.(string))
	}
	if (len(out) == 0) != (v["status"] == "valid") {
		t.Fatalf("validation %v: status does not agree with the warnings", v)
	}
	if len(out) > 0 && v["status"] != "warning" {
		t.Fatalf("validation %v: want status warning", v)
	}
	return out
}

func noWarnings(t testing.TB, what string, m obj) {
	t.Helper()
	if w := warnings(t, m); len(w) > 0 {
		t.Fatalf("%s: unexpected warnings %q", what, w)
	}
}

// wantWarning fails unless one warning contains every part.
func wantWarning(t testing.TB, m obj, parts ...string) {
	t.Helper()
	ws := warnings(t, m)
	for _, w := range ws {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(w, p)
		}
		if all {
			return
		}
	}
	t.Fatalf("warnings %q: none contains %q", ws, parts)
}

// pending returns a body's pending_checkpoints.
func strs(v any) []string {
	var out []string
	l, _ := v.([]any)
	for _, x := range l {
		out = append(out, x.(string))
	}
	return out
}

// enterStart runs start_session(flow) and next_activity(start).
func (h *harness) enterStart() obj {
	h.t.Helper()
	h.start("flow")
	return h.ok(ToolNextActivity, obj{"activity_id": "start"})
}

// stepsOf is a full step manifest.
func stepsOf(ids ...string) []obj {
	out := []obj{}
	for _, id := range ids {
		out = append(out, obj{"step_id": id, "output": "did " + id})
	}
	return out
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
