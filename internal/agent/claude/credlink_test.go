package claude

import (
	"path/filepath"
	"testing"

	"sortie/internal/agent/agenttest"
)

// With agent.run_as the daemon is root and ~/.claude/.credentials.json is the agent
// user's to plant: a link (symbolic or hard) to a file the agent must not read, or a
// file of another user's, is never copied into the configuration directory,
// which the agent reads.
func TestResetConfigDir_RefusesALoginThatIsNotTheAgentsOwnFile(t *testing.T) {
	agenttest.RefusesPlantedLogin(t,
		func(home string) string { return filepath.Join(home, ".claude", credentialsFile) },
		func(home string) (string, error) {
			dir := filepath.Join(t.TempDir(), "cfg")
			return filepath.Join(dir, credentialsFile), resetConfigDir(dir, nil, filepath.Join(home, ".claude", credentialsFile))
		})
}
