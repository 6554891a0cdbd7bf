package selfreview

import (
	"fmt"
	"strings"
)

// SummaryFile is the file in `.sortie/` the worker may write Summary to; after_run
// gets its path as SORTIE_SELF_REVIEW_SUMMARY_PATH.
const SummaryFile = "review_summary.md"

// Summary is r as a short Markdown report for people and after_run scripts: the
// outcome, and per iteration the diff's size, each command's result, the verdict and
// its issues (already bounded by ParseVerdict). Command output is left out.
func (r Result) Summary() string {
	var b strings.Builder
	b.WriteString("# Self-review\n\n")
	fmt.Fprintf(&b, "Status: %s; final verdict: %s; iterations: %d\n", r.Status(), r.FinalVerdict, r.TotalIterations)
	if r.Stopped {
		b.WriteString("The agent signalled a stop during the review.\n")
	}
	if r.Error != "" {
		fmt.Fprintf(&b, "Ended early: %s\n", clean(r.Error, 1000))
	}
	for _, it := range r.Iterations {
		fmt.Fprintf(&b, "\n## Iteration %d\n\n", it.Iteration)
		switch {
		case it.DiffError != "":
			fmt.Fprintf(&b, "- Diff: %s\n", it.DiffError)
		case it.DiffTruncated:
			fmt.Fprintf(&b, "- Diff: %d bytes (truncated)\n", it.DiffSizeBytes)
		default:
			fmt.Fprintf(&b, "- Diff: %d bytes\n", it.DiffSizeBytes)
		}
		for _, v := range it.VerificationResults {
			outcome := fmt.Sprintf("exit code %d", v.ExitCode)
			switch {
			case v.Error != "":
				outcome = "could not run"
			case v.TimedOut:
				outcome = "timed out"
			}
			fmt.Fprintf(&b, "- %s: %s, %s\n", inlineCode(v.Command), outcome, round(v.DurationMS))
		}
		fmt.Fprintf(&b, "- Verdict: %s\n", it.Verdict)
		if it.VerdictParseError != "" {
			fmt.Fprintf(&b, "- Verdict not usable: %s\n", it.VerdictParseError)
		}
		for _, s := range it.Issues {
			fmt.Fprintf(&b, "  - %s\n", s)
		}
		if it.IssuesDropped > 0 {
			fmt.Fprintf(&b, "  - (%d more left out)\n", it.IssuesDropped)
		}
	}
	return b.String()
}
