package codex

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"sortie/internal/agent"
	"sortie/internal/agent/statedir"
	"sortie/internal/runas"
)

// The isolated CODEX_HOME. Every issue of every workflow has a directory of its own
// that Sortie owns, so that the operator's ~/.codex/config.toml (a profile, a sandbox
// setting, an MCP server that fails to start) cannot change or break runs, so that one
// issue's agent, which can write its CODEX_HOME, can neither plant instructions or
// configuration for another issue's sessions nor read their transcripts, and so that
// the issue's threads persist there between runs and daemon restarts for thread/resume.
// Before every start of an app-server the home is reset (prepareHome): only the threads
// (sessions/) survive, so that not even the issue's own earlier runs can plant what
// codex loads as instructions, configuration or code.

// homeDir is the CODEX_HOME of the issue whose session has environment env and
// workspace workspace, in the workflow in workflowDir: statedir.Dir,
// <base>/<workflow>/<issue>, base being codex.codex_home when set, else
// <cache>/sortie/codex. A home the issue had in the layout before (legacyHome) is
// moved there first when it has none yet (statedir.Adopt), so its threads resume.
func homeDir(env []string, base, workflowDir, workspace string, owner *runas.User) (string, error) {
	home := statedir.Dir(env, Kind, base, workflowDir, workspace)
	return home, statedir.Adopt(home, legacyHome(env, base, workflowDir, workspace, agent.AgentUID(owner)), owner)
}

// legacyHome is where Sortie kept the issue's CODEX_HOME before statedir's one layout:
// <base>/<key>, base being codex.codex_home, else <cache>/sortie/codex with cache
// sortie-<uid> in the temporary directory when env names none (uid the agent user's),
// and key the start of the SHA-256 of the workflow's directory and the issue together.
func legacyHome(env []string, base, workflowDir, workspace string, uid int) string {
	issue := "issue:" + agent.EnvValue(env, "SORTIE_ISSUE_ID")
	if issue == "issue:" {
		issue = "workspace:" + filepath.Clean(workspace)
	}
	if base == "" {
		cache := agent.CacheHome(env)
		if cache == "" {
			cache = filepath.Join(os.TempDir(), "sortie-"+strconv.Itoa(uid))
		}
		base = filepath.Join(cache, "sortie", "codex")
	}
	return filepath.Join(base, statedir.Key(filepath.Clean(workflowDir)+"\x00"+issue, 8))
}

// RemoveIssueState implements agent.IssueStateRemover: the issue's CODEX_HOME goes,
// threads and all (statedir.Remove), and one left in the layout before.
func (a *adapter) RemoveIssueState(env []string, workspace string, owner *runas.User) error {
	return errors.Join(
		statedir.Remove(statedir.Dir(env, Kind, a.opts.CodexHome, a.workflowDir, workspace), owner),
		statedir.Remove(legacyHome(env, a.opts.CodexHome, a.workflowDir, workspace, agent.AgentUID(owner)), owner))
}

// prepareHome makes home ready for an app-server (statedir.Prepare): made when missing
// (0700, the agent user's, owner or the daemon's) and refused when not private to that
// user, emptied of everything but the threads (sessions/, which thread/resume reads),
// for codex reads instructions (AGENTS.md, AGENTS.override.md), configuration, command
// rules (rules/), skills, prompts, memories and shell snapshots from its home, all of
// which the agent can write. config.toml is written anew from cfg; the user's ChatGPT
// login (~/.codex/auth.json) is copied when codex.use_login is set (useLogin) and no
// API key is; without it, a copy is removed. It returns notes worth an operator's
// attention, such as a login it would not copy.
func prepareHome(home string, owner *runas.User, cfg []byte, env []string, useLogin bool) ([]string, error) {
	login := &statedir.Login{To: "auth.json"}
	if userHome := agent.EnvValue(env, "HOME"); useLogin && filepath.IsAbs(userHome) &&
		agent.EnvValue(env, "OPENAI_API_KEY") == "" && agent.EnvValue(env, "CODEX_API_KEY") == "" {
		login.From = filepath.Join(userHome, ".codex", "auth.json")
	}
	err := statedir.Prepare(home, owner, statedir.Spec{
		Keep:  []string{"sessions/"},
		Files: []statedir.File{{Name: "config.toml", Content: func([]byte) []byte { return cfg }}},
		Login: login,
	})
	var refused *statedir.LoginError
	switch {
	case errors.As(err, &refused):
		return []string{fmt.Sprintf("codex: not using %s to log in (%v); set OPENAI_API_KEY or CODEX_API_KEY", login.From, refused.Err)}, nil
	case err != nil:
		return nil, fmt.Errorf("preparing CODEX_HOME: %w", err)
	case login.From == "":
		return nil, nil
	}
	if _, err := os.Lstat(filepath.Join(home, login.To)); err != nil {
		return nil, nil // no login to copy
	}
	return []string{"codex: codex.use_login: using a copy of " + login.From + " in " + home + ", which the agent can read"}, nil
}

// configTOML is the config.toml Sortie writes: no update check, no analytics, no
// feedback, the workflow's model providers. Everything per thread (model, sandbox,
// approval policy, MCP servers) goes in thread/start instead.
func (o options) configTOML() []byte {
	var b bytes.Buffer
	b.WriteString("# Written by sortie for its codex runs; rewritten at every session start.\n")
	b.WriteString("# Configure codex in WORKFLOW.md's codex: block instead (docs/agents/codex.md).\n")
	b.WriteString("check_for_update_on_startup = false\n")
	if o.ModelProvider != "" {
		fmt.Fprintf(&b, "model_provider = %s\n", tomlString(o.ModelProvider))
	}
	if o.Model != "" {
		fmt.Fprintf(&b, "model = %s\n", tomlString(o.Model))
	}
	b.WriteString("\n[analytics]\nenabled = false\n")
	b.WriteString("\n[feedback]\nenabled = false\n")
	for _, id := range slices.Sorted(maps.Keys(o.ModelProviders)) {
		fmt.Fprintf(&b, "\n[model_providers.%s]\n", tomlKey(id))
		p, ok := o.ModelProviders[id].(map[string]any)
		if !ok {
			continue
		}
		for _, k := range slices.Sorted(maps.Keys(p)) {
			fmt.Fprintf(&b, "%s = %s\n", tomlKey(k), tomlValue(p[k]))
		}
	}
	return b.Bytes()
}

// tomlKey is k bare when TOML allows it, else quoted.
func tomlKey(k string) string {
	if k != "" && strings.IndexFunc(k, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-')
	}) < 0 {
		return k
	}
	return tomlString(k)
}

// tomlString is s as a TOML basic string; JSON's escapes are all valid TOML escapes.
func tomlString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

// tomlValue renders a YAML-decoded value: strings, numbers, booleans, lists and
// mappings (as inline tables).
func tomlValue(v any) string {
	switch t := v.(type) {
	case string:
		return tomlString(t)
	case bool:
		return strconv.FormatBool(t)
	case int:
		return strconv.Itoa(t)
	case int64:
		return strconv.FormatInt(t, 10)
	case uint64:
		return strconv.FormatUint(t, 10)
	case float64:
		return strconv.FormatFloat(t, 'f', -1, 64)
	case []any:
		parts := make([]string, len(t))
		for i, x := range t {
			parts[i] = tomlValue(x)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case map[string]any:
		parts := make([]string, 0, len(t))
		for _, k := range slices.Sorted(maps.Keys(t)) {
			parts = append(parts, tomlKey(k)+" = "+tomlValue(t[k]))
		}
		return "{ " + strings.Join(parts, ", ") + " }"
	case nil:
		return `""`
	}
	return tomlString(fmt.Sprint(v))
}

// mcpServers are the session's MCP servers (what the daemon wrote to
// .sortie/mcp.json) as codex's mcp_servers table.
func mcpServers(servers []agent.MCPServer) (map[string]any, error) {
	out := map[string]any{}
	for _, s := range servers {
		if err := s.NeedsCommandOrURL(); err != nil {
			return nil, err
		}
		e := map[string]any{}
		if s.Command != "" {
			e["command"] = s.Command
			if len(s.Args) > 0 {
				e["args"] = s.Args
			}
			if len(s.Env) > 0 {
				e["env"] = s.Env
			}
			if s.Cwd != "" {
				e["cwd"] = s.Cwd
			}
		} else {
			e["url"] = s.URL
			if len(s.Headers) > 0 {
				e["http_headers"] = s.Headers
			}
		}
		// Codex 0.169.0 asks before every MCP tool call, through an elicitation, and
		// under approval_policy never refuses the call outright: the daemon's own
		// servers are trusted like its shell, so their tools run without asking.
		e["default_tools_approval_mode"] = "approve"
		out[s.Name] = e
	}
	return out, nil
}
