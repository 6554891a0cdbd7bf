// Package config loads WORKFLOW.md: it splits the YAML front matter from the prompt
// template, builds a typed Config with defaults, resolves $VAR and ~ references, applies
// SORTIE_* environment and .env overrides, and validates everything, reporting every
// problem with its dotted field path. Its Watcher keeps the last good configuration while
// the operator edits the file.
//
// It does not parse the prompt template (package prompt does), construct adapters, or
// interpret adapter blocks such as `claude-code:` or `jira:`; those stay in
// Config.Extensions. It only checks the keys of the codex agent's block and of the
// tracker's block against what the adapter declares (agent.Meta.Options,
// tracker.Meta.Options), warning about any other.
package config
