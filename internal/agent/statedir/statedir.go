// Package statedir owns the per-issue state directories of the agent CLIs Sortie runs
// locally (Claude Code's CLAUDE_CONFIG_DIR, Copilot's COPILOT_HOME, CODEX_HOME,
// OpenCode's XDG directories): where they are, one layout for every CLI (Dir); how
// one is reset before every run of its CLI, keeping what the CLI resumes from and
// nothing the agent could have planted (Prepare, as a Spec says); how a directory of an
// earlier layout is carried over (Adopt); and how one is removed (Remove).
//
// With agent.run_as the daemon is root and the agent's user owns these directories
// and the path to them, so every operation reaches them as agent.OpenDir does (no link
// that user could have planted is followed), requires the directory to be private to
// that user, and works below it through an os.Root, which nothing leads out of. What a
// CLI keeps, writes and copies is its adapter's to say, not this package's.
package statedir

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	"sortie/internal/agent"
)

// Dir is the state directory of one issue's runs of the CLI cli:
// <base>/<workflow>/<issue>. base is the operator's choice when not "" (a CLI option
// such as codex.codex_home), else <cache>/sortie/<cli>, below the agent user's cache
// directory (agent.CacheHome of env; without one, sortie-<uid> in the temporary
// directory, uid being the daemon's). <workflow> and <issue> are the start of the
// SHA-256 of the workflow's directory and of the issue (SORTIE_ISSUE_ID, which the
// daemon sets; the workspace, unique per issue, when it is unset), so the directory is
// the same for every run of the issue, after a restart too, and another issue's or
// another workflow's is another.
func Dir(env []string, cli, base, workflowDir, workspace string) string {
	if base == "" {
		cache := agent.CacheHome(env)
		if cache == "" {
			cache = filepath.Join(os.TempDir(), fmt.Sprintf("sortie-%d", os.Getuid()))
		}
		base = filepath.Join(cache, "sortie", cli)
	}
	issue := "issue:" + agent.EnvValue(env, "SORTIE_ISSUE_ID")
	if issue == "issue:" {
		issue = "workspace:" + filepath.Clean(workspace)
	}
	return filepath.Join(base, Key(filepath.Clean(workflowDir), 6), Key(issue, 8))
}

// Key is the first n bytes of the SHA-256 of s, in hex: how Dir names a workflow's and
// an issue's directories, and how the layouts before it named theirs.
func Key(s string, n int) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:n])
}
