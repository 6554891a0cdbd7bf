package copilot

import (
	"fmt"
	"path/filepath"

	"sortie/internal/agent"
	"sortie/internal/agent/statedir"
	"sortie/internal/runas"
)

// The per-issue COPILOT_HOME. Copilot CLI 1.0.102 loads instructions
// (copilot-instructions.md), hooks (hooks/*.json, settings.json), custom agents,
// skills, plugins, MCP and LSP servers from its home, ~/.copilot by default, and even
// runs a newer CLI it finds under pkg/ there; a confined CLI must be able to write
// that home. Shared by every issue and by the operator's own `copilot`, it would let one
// issue's agent plant instructions or hooks for every later session, and code for the
// operator's unconfined one. So a local CLI runs with COPILOT_HOME set to a directory of
// its issue's own, and before every run of the CLI (the unconfined --version canary
// too) everything in it but the sessions (session-state/, which --resume reads) is
// removed: not even the issue's own earlier turns can plant what the CLI loads. With
// COPILOT_HOME set, the CLI does not migrate the legacy $XDG_CONFIG_HOME/.copilot and
// $XDG_STATE_HOME/.copilot into it, and writes nothing else outside it but its runtime
// cache.

// homeEnv is the variable that names the CLI's home.
const homeEnv = "COPILOT_HOME"

// issueHome is the COPILOT_HOME of the issue whose session has environment env and
// workspace workspace, in the workflow in workflowDir: statedir.Dir,
// <cache>/sortie/copilot/<workflow>/<issue>.
func issueHome(env []string, workflowDir, workspace string) string {
	return statedir.Dir(env, "copilot", "", workflowDir, workspace)
}

// runtimeDirs are where the npm package's native loader unpacks the CLI's runtime
// (its JavaScript and native modules, loaded by every later run) and looks for it:
// $XDG_CACHE_HOME/copilot, or COPILOT_CACHE_HOME and COPILOT_PKG_CACHE_HOME when set.
// The unconfined --version canary unpacks it before a session's first turn; a
// confined CLI may read it, never write it, or it could change the code every later
// run of the CLI executes, the operator's own included.
func runtimeDirs(env []string) []string {
	var dirs []string
	for _, k := range []string{"COPILOT_PKG_CACHE_HOME", "COPILOT_CACHE_HOME"} {
		if v := agent.EnvValue(env, k); filepath.IsAbs(v) {
			dirs = append(dirs, v)
		}
	}
	if c := agent.CacheHome(env); c != "" {
		dirs = append(dirs, filepath.Join(c, "copilot"))
	}
	return dirs
}

// RemoveIssueState implements agent.IssueStateRemover: the issue's COPILOT_HOME goes,
// sessions and all. An operator's own COPILOT_HOME, shared by every issue, is left
// alone.
func (d *dialect) RemoveIssueState(env []string, workspace string, owner *runas.User) error {
	if agent.EnvValue(env, homeEnv) != "" {
		return nil
	}
	return statedir.Remove(issueHome(env, d.workflowDir, workspace), owner)
}

// resetHome prepares dir for a run of the CLI (statedir.Prepare): made when missing
// (0700, owner's) and emptied of everything but the sessions, session-state/, which
// --resume reads.
func resetHome(dir string, owner *runas.User) error {
	return statedir.Prepare(dir, owner, statedir.Spec{Keep: []string{"session-state/"}})
}

// sharedHomeWarning is the start-up warning when the operator set COPILOT_HOME, which
// every issue's agent then shares.
func sharedHomeWarning(env []string) string {
	dir := agent.EnvValue(env, homeEnv)
	if dir == "" {
		return ""
	}
	return fmt.Sprintf("%s=%s is set: every issue's agent shares that Copilot CLI home and can write it, so one issue's agent can "+
		"plant instructions and hooks (copilot-instructions.md, hooks/) for every other issue and for whoever runs copilot with it; "+
		"unset it to give each issue a home of its own", homeEnv, dir)
}
