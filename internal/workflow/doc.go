// Package workflow owns the definitions of the workflow tools API
// (workflow-tools-api.md): a library directory of workflows, their
// activities, steps, checkpoints and transitions, and the skills and
// resources they reference. LoadLibrary reads and validates a whole library
// and refuses it, naming every file and field at fault, if any definition is
// invalid; advisory findings come back separately as warnings.
//
// It does not run workflows: session tokens live in package session, and
// the tools, checkpoint gate and condition evaluation are future work.
//
// # Layout
//
//	DIR/{workflow}/workflow.{toon,yaml,yml,json}
//	DIR/{workflow}/activities/NN-{activity-id}.{toon,yaml,yml,json}
//	DIR/{workflow}/skills/NN-{skill-id}.{toon,yaml,yml,json}
//	DIR/{workflow}/resources/NN-{name}.{md,toon,yaml,yml,json}
//	DIR/meta/...   universal skills and resources every workflow falls back to
//
// This is the upstream workflow-server layout (workflow-server-behaviour.md
// §2.1) without its legacy forms (root-level {id}.toon, guides/), which are
// reported as errors rather than read or ignored.
package workflow
