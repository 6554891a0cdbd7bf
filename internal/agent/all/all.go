// Package all links every agent adapter into a program: importing it for its side
// effects registers each kind (claude-code, codex, copilot-cli, gemini, mock, opencode) with
// package agent.
//
// Package config checks agent.kind and the `codex:` block against that registry, so
// whatever loads a WORKFLOW.md must link the adapters: cmd/sortie does through this
// package, and so do the tests of config and of other packages that load one. config
// itself cannot import the adapters, as it stays a leaf beside agent; and one list here
// keeps the daemon and those tests from each keeping their own. The adapters import
// only package agent and its helpers, never config, so a test of config may import
// this package without a cycle.
package all

import (
	_ "sortie/internal/agent/claude"
	_ "sortie/internal/agent/codex"
	_ "sortie/internal/agent/copilot"
	_ "sortie/internal/agent/gemini"
	_ "sortie/internal/agent/mock"
	_ "sortie/internal/agent/opencode"
)
