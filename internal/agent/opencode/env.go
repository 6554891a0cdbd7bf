package opencode

// EnvNames are the daemon's variables opencode inherits besides every agent's
// (agentenv.Base): its own (OPENCODE_*) and the keys and settings of the providers it
// reads from the environment. Another provider's variable goes in agent.env.
var EnvNames = []string{"OPENCODE_*", "ANTHROPIC_*", "OPENAI_*", "OPENROUTER_API_KEY", "GEMINI_API_KEY",
	"GOOGLE_GENERATIVE_AI_API_KEY", "GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_CLOUD_PROJECT", "GOOGLE_VERTEX_*",
	"VERTEX_LOCATION", "GROQ_API_KEY", "XAI_API_KEY", "DEEPSEEK_API_KEY", "MISTRAL_API_KEY", "TOGETHER_AI_API_KEY",
	"FIREWORKS_API_KEY", "CEREBRAS_API_KEY", "AZURE_RESOURCE_NAME", "AZURE_API_KEY", "AWS_ACCESS_KEY_ID",
	"AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION", "AWS_PROFILE", "AWS_BEARER_TOKEN_BEDROCK"}
