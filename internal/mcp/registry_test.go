package mcp

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"sortie/internal/mcp/tools"
)

// stubTool is a tool with a given spec whose call answers body, or panics.
type stubTool struct {
	spec  tools.Spec
	body  any
	panic bool
}

func (s stubTool) Spec() tools.Spec { return s.spec }

func (s stubTool) Call(context.Context, json.RawMessage) tools.Result {
	if s.panic {
		panic("stub tool exploded")
	}
	return tools.Result{Body: s.body}
}

func stub(name string) stubTool {
	return stubTool{spec: tools.Spec{Name: name, Tier: tools.TierLocal,
		InputSchema: json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)}}
}

func TestRegistry_RejectsBadRegistrations(t *testing.T) {
	withSchema := func(name, schema string) stubTool {
		s := stub(name)
		s.spec.InputSchema = json.RawMessage(schema)
		return s
	}
	tests := []struct {
		name  string
		tools []stubTool
		panic string
	}{
		{name: "duplicate name", tools: []stubTool{stub("a"), stub("b"), stub("a")}, panic: `tool "a" registered twice`},
		{name: "invalid name", tools: []stubTool{stub("has space")}, panic: `tool name "has space" is invalid`},
		{name: "empty name", tools: []stubTool{stub("")}, panic: `tool name "" is invalid`},
		{name: "schema open to additional properties", tools: []stubTool{withSchema("a", `{"type":"object","properties":{}}`)},
			panic: "additionalProperties must be false"},
		{name: "schema not an object", tools: []stubTool{withSchema("a", `{"type":"string","additionalProperties":false}`)},
			panic: `type must be "object"`},
		{name: "no schema", tools: []stubTool{withSchema("a", ``)}, panic: "input schema: not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r Registry
			defer func() {
				p := recover()
				if s, _ := p.(string); !strings.Contains(s, tt.panic) {
					t.Fatalf("Register panicked with %v; want a panic containing %q", p, tt.panic)
				}
			}()
			for _, tool := range tt.tools {
				r.Register(tool)
			}
		})
	}
}

func TestRegistry_KeepsRegistrationOrder(t *testing.T) {
	var r Registry
	for _, n := range []string{"c", "a", "b"} {
		r.Register(stub(n))
	}
	if got := strings.Join(r.Names(), ","); got != "c,a,b" {
		t.Fatalf("Names() = %s, want c,a,b", got)
	}
	if !r.Has("a") || r.Has("d") {
		t.Fatalf("Has: a %v (want true), d %v (want false)", r.Has("a"), r.Has("d"))
	}
}
