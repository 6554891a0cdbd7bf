// Package prompt turns the prompt template of WORKFLOW.md into the text an agent
// receives on each turn: it parses the template strictly (a missing key is an error,
// never "<no value>"), renders it against an issue and the run's state, and appends the
// first-turn suffixes (the Sortie tool list and the `.sortie/status` instructions).
//
// It does not read WORKFLOW.md (the config package hands it the template body and the
// line it starts on) and it does not decide when a turn happens.
package prompt
