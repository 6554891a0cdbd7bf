package mcp

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sync"

	"sortie/internal/mcp/tools"
)

// Registry is the static set of tools one sidecar serves, in registration order. Tools
// are registered at start-up, before serving; there is no dynamic loading.
type Registry struct {
	tools []tools.Tool
}

// toolNameRE is the tool names MCP clients accept.
var toolNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`) })

// Register adds t. It panics, as a programming error, when the name is taken or
// invalid, or when the input schema is not an object schema that rejects additional
// properties.
func (r *Registry) Register(t tools.Tool) {
	spec := t.Spec()
	if !toolNameRE().MatchString(spec.Name) {
		panic(fmt.Sprintf("mcp: tool name %q is invalid (want 1-128 of A-Z a-z 0-9 _ . -)", spec.Name))
	}
	if r.Has(spec.Name) {
		panic(fmt.Sprintf("mcp: tool %q registered twice", spec.Name))
	}
	if err := checkSchema(spec.InputSchema); err != nil {
		panic(fmt.Sprintf("mcp: tool %q: input schema: %v", spec.Name, err))
	}
	r.tools = append(r.tools, t)
}

// checkSchema requires an object schema with additionalProperties false, so what the
// agent is shown is what decodeArgs accepts.
func checkSchema(raw json.RawMessage) error {
	var s struct {
		Type                 string          `json:"type"`
		Properties           json.RawMessage `json:"properties"`
		AdditionalProperties *bool           `json:"additionalProperties"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return fmt.Errorf("not a JSON object: %v", err)
	}
	if s.Type != "object" {
		return fmt.Errorf(`type must be "object" (got %q)`, s.Type)
	}
	if s.AdditionalProperties == nil || *s.AdditionalProperties {
		return fmt.Errorf("additionalProperties must be false")
	}
	return nil
}

// Has reports whether a tool named name is registered.
func (r *Registry) Has(name string) bool {
	return slices.ContainsFunc(r.tools, func(t tools.Tool) bool { return t.Spec().Name == name })
}

// Names returns the registered tool names in registration order.
func (r *Registry) Names() []string {
	names := make([]string, len(r.tools))
	for i, t := range r.tools {
		names[i] = t.Spec().Name
	}
	return names
}

// Tools returns the registered tools in registration order.
func (r *Registry) Tools() []tools.Tool { return slices.Clone(r.tools) }
