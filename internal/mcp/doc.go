// Package mcp is the sortie-tools MCP sidecar (`sortie mcp-server`) that an agent CLI
// starts from the workspace's .sortie/mcp.json: a static registry of the tools in
// package tools, the gates that decide which of them a session is offered, and their
// wiring onto the official MCP Go SDK over stdio.
//
// It owns the sidecar's start-up (reading the session environment, opening the
// database read-only, asking the daemon's agent socket what the session may call) and
// the protocol edge (argument handling, result envelopes). It does not write anything:
// not the database, not the workspace. The daemon side lives in the orchestrator
// (.sortie/mcp.json, state.json, each session's token), package agentsock (the socket)
// and package agenttools (the answers to the Tier 2 and workflow calls); the daemon
// calls Offered and ToolDocs so the first-turn prompt lists exactly the tools served
// here.
package mcp
