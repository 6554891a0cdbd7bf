package mock

// EnvNames are the daemon's variables the mock agent inherits besides every agent's
// (agentenv.Base): none. It reads its script from WORKFLOW.md and its issue from the
// session's SORTIE_* variables, which Sortie sets itself.
var EnvNames []string
