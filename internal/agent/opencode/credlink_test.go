package opencode

import (
	"path/filepath"
	"testing"

	"sortie/internal/agent/agenttest"
)

// With agent.run_as the daemon is root and ~/.local/share/opencode/auth.json is the
// agent user's to plant: a link (symbolic or hard) to a file the agent must not read,
// or a file of another user's, is never copied into the data directory, which
// the agent reads. OpenCode's credentials are copied every turn, with no use_login.
func TestPrepareState_RefusesCredentialsThatAreNotTheAgentsOwnFile(t *testing.T) {
	agenttest.RefusesPlantedLogin(t,
		func(home string) string { return filepath.Join(home, ".local", "share", "opencode", "auth.json") },
		func(home string) (string, error) {
			dir := filepath.Join(t.TempDir(), "issues", "x")
			_, err := prepareState(dir, []string{"HOME=" + home}, nil, true)
			return filepath.Join(dir, "data", "opencode", "auth.json"), err
		})
}
