package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"sortie/internal/agent"
	"sortie/internal/mcp/tools"
)

// ServerName is the MCP server's name, in serverInfo and as the reserved key of
// .sortie/mcp.json's mcpServers.
const ServerName = agent.ToolsServer

// NewServer returns the sortie-tools MCP server serving r's tools. version is reported
// in serverInfo; log receives one debug line per call and every tool panic.
//
// Tools are registered with the SDK's raw handler, so the SDK neither validates nor
// rejects arguments: each tool decodes them strictly and answers bad ones with an
// invalid_input result the agent can read and correct, not a JSON-RPC error. A call to
// an unregistered name is a JSON-RPC "invalid params" error (as the MCP specification
// says for unknown tools) naming the tools that exist; the session goes on.
func NewServer(r *Registry, version string, log *slog.Logger) *sdk.Server {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	srv := sdk.NewServer(&sdk.Implementation{Name: ServerName, Version: version}, &sdk.ServerOptions{
		Logger: slog.New(sdkLogHandler{log.Handler()}),
		// Tools only, and a static list: no logging capability (logs go to stderr),
		// no list_changed notifications. The tools capability is announced even with
		// no tool registered, so a client may list the (empty) set.
		Capabilities: &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{}},
	})
	for _, t := range r.tools {
		srv.AddTool(sdkTool(t.Spec()), handler(t, log))
	}
	srv.AddReceivingMiddleware(unknownTool(r))
	return srv
}

func sdkTool(s tools.Spec) *sdk.Tool {
	openWorld := s.Tier == tools.TierExternal
	destructive := false
	return &sdk.Tool{
		Name:        s.Name,
		Description: s.Description,
		InputSchema: s.InputSchema,
		Annotations: &sdk.ToolAnnotations{
			ReadOnlyHint:    s.ReadOnly,
			DestructiveHint: &destructive,
			OpenWorldHint:   &openWorld,
		},
	}
}

// handler adapts t to the SDK: the envelope goes out both as the text content and as
// structuredContent, with isError set on failures and the tool's Meta as _meta. A panicking tool answers
// internal_error instead of taking the session down.
func handler(t tools.Tool, log *slog.Logger) sdk.ToolHandler {
	name := t.Spec().Name
	tier2 := t.Spec().Tier == tools.TierExternal
	return func(ctx context.Context, req *sdk.CallToolRequest) (res *sdk.CallToolResult, _ error) {
		start := time.Now()
		defer func() {
			if p := recover(); p != nil {
				log.Error("tool panicked; answering internal_error", "tool", name, "panic", p, "stack", string(debug.Stack()))
				res = toResult(internalError(tier2, fmt.Sprintf("the %s tool failed unexpectedly; please report this as a sortie bug", name)))
			}
		}()
		out := t.Call(ctx, req.Params.Arguments)
		log.Debug("tool call", "tool", name, "is_error", out.IsError, "duration", time.Since(start))
		return toResult(out), nil
	}
}

func internalError(tier2 bool, msg string) tools.Result {
	if tier2 {
		return tools.Result{IsError: true, Body: map[string]any{
			"success": false, "error": map[string]string{"kind": tools.KindInternal, "message": msg}}}
	}
	return tools.Result{IsError: true, Body: map[string]string{"error": msg, "kind": tools.KindInternal}}
}

func toResult(out tools.Result) *sdk.CallToolResult {
	body, err := json.Marshal(out.Body)
	if err != nil {
		body, _ = json.Marshal(map[string]string{"error": "encoding the result: " + err.Error(), "kind": tools.KindInternal})
		out.IsError = true
	}
	return &sdk.CallToolResult{
		Meta:              sdk.Meta(out.Meta),
		Content:           []sdk.Content{&sdk.TextContent{Text: string(body)}},
		StructuredContent: json.RawMessage(body),
		IsError:           out.IsError,
	}
}

// unknownTool answers a tools/call for a name that is not registered with the error the
// SDK would give, plus the names that are, so the agent can correct itself.
func unknownTool(r *Registry) sdk.Middleware {
	return func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if call, ok := req.(*sdk.CallToolRequest); ok && method == "tools/call" && call.Params != nil && !r.Has(call.Params.Name) {
				known := "none"
				if names := r.Names(); len(names) > 0 {
					known = strings.Join(names, ", ")
				}
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
					Message: fmt.Sprintf("unknown tool %q; this session's sortie-tools are: %s", call.Params.Name, known)}
			}
			return next(ctx, method, req)
		}
	}
}

// sdkLogHandler passes the SDK's log lines on with its informational ones (every
// connection and session step) demoted to debug, so at the default level stderr carries
// only the sidecar's own lines and the SDK's warnings and errors.
type sdkLogHandler struct{ h slog.Handler }

func (s sdkLogHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return s.h.Enabled(ctx, demote(l))
}

func (s sdkLogHandler) Handle(ctx context.Context, r slog.Record) error {
	r2 := slog.NewRecord(r.Time, demote(r.Level), r.Message, r.PC)
	r.Attrs(func(a slog.Attr) bool { r2.AddAttrs(a); return true })
	return s.h.Handle(ctx, r2)
}

func (s sdkLogHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return sdkLogHandler{s.h.WithAttrs(as)}
}
func (s sdkLogHandler) WithGroup(name string) slog.Handler { return sdkLogHandler{s.h.WithGroup(name)} }

func demote(l slog.Level) slog.Level {
	if l == slog.LevelInfo {
		return slog.LevelDebug
	}
	return l
}
