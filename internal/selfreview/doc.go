// Package selfreview is the self-review loop (`self_review:` in WORKFLOW.md): before
// the hand-off, the agent's diff and the results of the verification commands go back
// to it, on the run's session, in a review turn that writes a verdict to
// `.sortie/review_verdict.json`; an `iterate` verdict gets a fix turn and another
// review, up to max_iterations.
//
// Everything the loop looks at was made by the agent and is hostile input: the diff
// and the commands' output come from commands run confined in the workspace (Params.Run,
// never git run by the daemon itself), and the verdict file is read without following
// a link (`.sortie/` or the file itself), at most MaxVerdictSize bytes, its issues cut
// to a bounded number and length before they reach a prompt or the Result.
//
// It does not run the agent or the commands itself (the orchestrator's worker binds
// Params.Turn to its session and Params.Run to workspace.Manager.Verify), decide
// whether self-review applies to a run, or persist the Result.
package selfreview
