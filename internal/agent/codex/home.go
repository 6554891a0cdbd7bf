package codex

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"sortie/internal/agent"
	"sortie/internal/runas"
)

// The isolated CODEX_HOME. Every issue of every workflow has a directory of its own
// that Sortie owns, so that the operator's ~/.codex/config.toml (a profile, a sandbox
// setting, an MCP server that fails to start) cannot change or break runs, so that one
// issue's agent, which can write its CODEX_HOME, can neither plant instructions or
// configuration for another issue's sessions nor read their transcripts, and so that
// the issue's threads persist there between runs and daemon restarts for thread/resume.
// Before every start of an app-server the home is reset (resetHome): only the threads
// (sessions/) survive, so that not even the issue's own earlier runs can plant what
// codex loads as instructions, configuration or code.

// homeDir is the CODEX_HOME of the issue whose session has environment env and
// workspace workspace, in the workflow in workflowDir: base/<key>, where base is
// codex.codex_home when set, else $XDG_CACHE_HOME/sortie/codex, else
// ~/.cache/sortie/codex, else sortie-<uid>/codex in the temporary directory (private
// to the agent's user uid, checked by prepareHome). The key is the start of the
// SHA-256 of the workflow's directory and the issue (SORTIE_ISSUE_ID, which the daemon
// sets; the workspace, unique per issue, when it is unset), so that two issues never
// share threads, instructions or configuration.
func homeDir(env []string, base, workflowDir, workspace string, uid int) string {
	issue := "issue:" + agent.EnvValue(env, "SORTIE_ISSUE_ID")
	if issue == "issue:" {
		issue = "workspace:" + filepath.Clean(workspace)
	}
	sum := sha256.Sum256([]byte(filepath.Clean(workflowDir) + "\x00" + issue))
	key := hex.EncodeToString(sum[:8])
	if base == "" {
		cache := agent.EnvValue(env, "XDG_CACHE_HOME")
		if cache == "" || !filepath.IsAbs(cache) {
			cache = ""
			if home := agent.EnvValue(env, "HOME"); home != "" && filepath.IsAbs(home) {
				cache = filepath.Join(home, ".cache")
			}
		}
		if cache == "" {
			cache = filepath.Join(os.TempDir(), "sortie-"+strconv.Itoa(uid))
		}
		base = filepath.Join(cache, "sortie", "codex")
	}
	return filepath.Join(base, key)
}

// RemoveIssueState implements agent.IssueStateRemover: the issue's CODEX_HOME goes,
// threads and all, reached as prepareHome reaches it (no link the agent's user could
// have planted is followed).
func (a *adapter) RemoveIssueState(env []string, workspace string, owner *runas.User) error {
	home := homeDir(env, a.opts.CodexHome, a.workflowDir, workspace, agent.AgentUID(owner))
	d, err := agent.OpenDir(home, owner, false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer d.Close()
	root, err := openRoot(d)
	if err != nil {
		return err
	}
	return agent.RemoveOpened(root, home)
}

// keptInHome are the entries of CODEX_HOME that resetHome leaves: the threads, which
// thread/resume reads. config.toml is rewritten and auth.json copied again.
var keptInHome = []string{"sessions"}

// maxAuth bounds the size of the auth.json the adapter copies.
const maxAuth = 1 << 20

// prepareHome makes home ready for an app-server: it creates it (0700, owned by the
// agent's user, owner or the daemon's), refuses it when it is not private to that
// user, resets it (resetHome), writes config.toml and copies the user's ChatGPT login
// when codex.use_login is set (useLogin) and no API key is; without it, a copy is
// removed. No link the agent's user could have planted is followed
// (agent.OpenDir, agent.ReadOwnedFile). It returns notes worth an operator's attention.
func prepareHome(home string, owner *runas.User, cfg []byte, env []string, useLogin bool) ([]string, error) {
	d, err := agent.OpenDir(home, owner, true)
	if err != nil {
		return nil, fmt.Errorf("preparing CODEX_HOME: %w", err)
	}
	defer d.Close()
	if err := checkPrivate(d, owner); err != nil {
		return nil, err
	}
	root, err := openRoot(d)
	if err != nil {
		return nil, fmt.Errorf("preparing CODEX_HOME: %w", err)
	}
	defer root.Close()
	if err := resetHome(root, []string{"auth.json"}); err != nil {
		return nil, fmt.Errorf("resetting CODEX_HOME %s: %w", home, err)
	}
	if err := writeFileAtomic(root, "config.toml", cfg, owner); err != nil {
		return nil, fmt.Errorf("writing %s: %w", filepath.Join(home, "config.toml"), err)
	}
	if !useLogin || agent.EnvValue(env, "OPENAI_API_KEY") != "" || agent.EnvValue(env, "CODEX_API_KEY") != "" {
		// The login is the operator's to give (codex.use_login): a copy left from when
		// it was given goes.
		if err := root.Remove("auth.json"); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("removing the login from CODEX_HOME %s: %w", home, err)
		}
		return nil, nil
	}
	userHome := agent.EnvValue(env, "HOME")
	if userHome == "" || !filepath.IsAbs(userHome) {
		return nil, nil
	}
	src := filepath.Join(userHome, ".codex", "auth.json")
	data, mtime, err := agent.ReadOwnedFile(src, owner, maxAuth)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return []string{fmt.Sprintf("codex: not using %s to log in (%v); set OPENAI_API_KEY or CODEX_API_KEY", src, err)}, nil
	}
	// Codex refreshes the tokens of a ChatGPT login in place: a copy newer than the
	// user's file holds fresher tokens and is kept.
	if di, err := root.Lstat("auth.json"); err == nil && di.Mode().IsRegular() && !mtime.After(di.ModTime()) {
		return nil, nil
	}
	if err := writeFileAtomic(root, "auth.json", data, owner); err != nil {
		return nil, fmt.Errorf("copying %s into CODEX_HOME: %w", src, err)
	}
	return []string{"codex: codex.use_login: using a copy of " + src + " in " + home + ", which the agent can read"}, nil
}

// resetHome removes everything in the home root holds but keptInHome and keep: codex
// reads instructions (AGENTS.md, AGENTS.override.md), configuration (config.toml),
// command rules (rules/), skills, prompts, memories and shell snapshots from its home,
// all of which the agent can write. A kept entry that is a link is removed too; links
// are never followed.
func resetHome(root *os.Root, keep []string) error {
	d, err := root.Open(".")
	if err != nil {
		return err
	}
	entries, err := d.ReadDir(-1)
	d.Close()
	if err != nil {
		return err
	}
	for _, e := range entries {
		if (slices.Contains(keptInHome, e.Name()) || slices.Contains(keep, e.Name())) && e.Type()&fs.ModeSymlink == 0 {
			continue
		}
		if err := root.RemoveAll(e.Name()); err != nil {
			return err
		}
	}
	return nil
}

// writeFileAtomic writes data to name in root (0600, owned by owner when not nil)
// through a temporary file and a rename, so that a codex starting at the same time
// never reads half a file. Whatever was at name, a link included, is replaced.
func writeFileAtomic(root *os.Root, name string, data []byte, owner *runas.User) error {
	var rnd [8]byte
	rand.Read(rnd[:])
	tmp := ".sortie-" + hex.EncodeToString(rnd[:])
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	defer root.Remove(tmp)
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if owner != nil {
		if err := f.Chown(int(owner.UID), int(owner.GID)); err != nil {
			f.Close()
			return err
		}
	}
	if err := f.Close(); err != nil {
		return err
	}
	return root.Rename(tmp, name)
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
