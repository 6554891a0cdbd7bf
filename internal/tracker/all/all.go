// Package all links every tracker adapter into a program: importing it for its side
// effects registers each kind (file, github, jira, linear) with package tracker.
//
// Package config checks tracker.kind and the tracker's own block (`jira:`) against
// that registry, and imports this package so that every program that loads a
// WORKFLOW.md, a test or `sortie validate`, knows the same kinds and keys. The adapters
// import only package tracker and the leaves beside it, never config, so config may
// import them without a cycle.
package all

import (
	_ "sortie/internal/tracker/file"
	_ "sortie/internal/tracker/github"
	_ "sortie/internal/tracker/jira"
	_ "sortie/internal/tracker/linear"
)
