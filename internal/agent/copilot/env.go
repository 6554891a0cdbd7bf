package copilot

// EnvNames are the daemon's variables the copilot CLI inherits besides every agent's
// (agentenv.Base): its own settings and BYOK provider (COPILOT_*), the GitHub tokens it
// takes in its order of precedence, and where the GitHub CLI keeps its login.
var EnvNames = []string{"COPILOT_*", "GH_TOKEN", "GITHUB_TOKEN", "GH_HOST", "GH_CONFIG_DIR", "GH_ENTERPRISE_TOKEN",
	"GITHUB_ENTERPRISE_TOKEN"}
