package claude

// EnvNames are the daemon's variables the claude CLI inherits besides every agent's
// (agentenv.Base): its Anthropic, Bedrock and Vertex credentials and settings, its own
// switches (CLAUDE_*, IS_SANDBOX for root, the MCP and Bash time-outs, DISABLE_*).
var EnvNames = []string{"ANTHROPIC_*", "CLAUDE_*", "IS_SANDBOX", "MCP_*", "MAX_MCP_OUTPUT_TOKENS", "ENABLE_TOOL_SEARCH",
	"DISABLE_*", "BASH_DEFAULT_TIMEOUT_MS", "BASH_MAX_TIMEOUT_MS", "BASH_MAX_OUTPUT_LENGTH", "MAX_THINKING_TOKENS",
	"USE_BUILTIN_RIPGREP", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION",
	"AWS_DEFAULT_REGION", "AWS_PROFILE", "AWS_BEARER_TOKEN_BEDROCK", "CLOUD_ML_REGION", "VERTEX_REGION_*",
	"GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_CLOUD_PROJECT"}
