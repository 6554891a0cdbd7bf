package copilot

import (
	"context"
	"os/exec"
	"strings"
	"time"

	"sortie/internal/agent"
)

// tokenVars are the GitHub token variables the CLI reads, in its order of precedence.
var tokenVars = []string{"COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN"}

// byokVar selects a custom model provider (BYOK); the CLI then needs no GitHub login.
const byokVar = "COPILOT_PROVIDER_BASE_URL"

// ghAuthTimeout bounds `gh auth status` (spec: 2 seconds).
const ghAuthTimeout = 2 * time.Second

// checkAuth is StartSession's authentication preflight (local mode only), in the
// spec's order: a token variable, then `gh auth status`. As a deliberate extension, a
// BYOK provider URL also counts, since the CLI then needs no GitHub credential at all.
// It returns a note for the operator when the credential is worth a word (gh's login,
// a classic PAT the CLI will reject), and an agent_not_found error when there is none.
func (d *dialect) checkAuth(ctx context.Context, env []string) (note string, err error) {
	var set, classic []string
	for _, k := range tokenVars {
		v := strings.TrimSpace(agent.EnvValue(env, k))
		if v == "" {
			continue
		}
		set = append(set, k)
		if strings.HasPrefix(v, "ghp_") {
			classic = append(classic, k)
		}
	}
	byok := strings.TrimSpace(agent.EnvValue(env, byokVar)) != ""
	switch {
	case byok:
		return "", nil
	case len(set) > 0 && len(classic) == len(set):
		// The CLI tries each variable in turn; only when all hold classic tokens is
		// it left without a credential it accepts.
		return strings.Join(classic, ", ") + ": classic personal access token (ghp_), which Copilot CLI rejects; " +
			"use a fine-grained token with the Copilot Requests permission", nil
	case len(set) > 0:
		return "", nil
	}
	if d.ghAuthenticated(ctx, env) {
		return "no token variable is set; the CLI relies on the GitHub CLI's login (gh auth status succeeded)", nil
	}
	return "", agent.Errorf(agent.ErrNotFound,
		"%s: no credential for Copilot CLI: set COPILOT_GITHUB_TOKEN, GH_TOKEN or GITHUB_TOKEN "+
			"(a fine-grained token with the Copilot Requests permission, or an OAuth token), "+
			"log in with `gh auth login`, or set %s for a BYOK model provider", Kind, byokVar)
}

// ghAuthenticated runs `gh auth status` in the agent's environment.
func (d *dialect) ghAuthenticated(ctx context.Context, env []string) bool {
	gh, err := exec.LookPath(d.gh)
	if err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, ghAuthTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, gh, "auth", "status")
	cmd.Env = env
	cmd.WaitDelay = ghAuthTimeout
	return cmd.Run() == nil
}
