package selfreview

import (
	"fmt"
	"strings"
	"time"
)

// verdictInstructions is how the review turn is told to write its verdict.
const verdictInstructions = "Write your verdict to `.sortie/review_verdict.json` (a regular file, not a link), " +
	"as one JSON object and nothing else:\n\n" +
	"```json\n{\"verdict\":\"pass\"|\"iterate\",\"issues\":[\"...\"]}\n```\n\n" +
	"- `\"pass\"`: the change does what the task asks, the verification commands pass, and nothing is left to fix. `issues` may be empty.\n" +
	"- `\"iterate\"`: something must still be fixed. List each problem in `issues` as one short string " +
	"(the file and line first where there is one), at most 20 of them.\n\n" +
	"Do not fix anything in this turn: only review, and write the verdict file. If the verdict is `iterate`, " +
	"you will be asked to fix the issues next."

// reviewPrompt is the prompt of iteration i of n's review turn.
func reviewPrompt(i, n int, task string, d diff, diffErr string, results []VerificationResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## Self-Review: Iteration %d of %d\n\n", i, n)
	b.WriteString("Before this work is handed off, review your own change critically, as a strict reviewer would: " +
		"against the task, for correctness, for what is missing (tests, edge cases, error handling), and for what the verification commands report.\n\n")
	b.WriteString("### Task\n\n")
	b.WriteString(strings.TrimSpace(task))
	b.WriteString("\n\n### Diff\n\n")
	switch {
	case diffErr != "":
		fmt.Fprintf(&b, "(No diff: %s. Look at the workspace yourself.)\n\n", diffErr)
	case d.size == 0:
		b.WriteString("(The diff is empty: nothing is changed against the last commit.)\n\n")
	default:
		if d.truncated {
			fmt.Fprintf(&b, "(The diff is %d bytes; only its first %d are shown. Look at the rest in the workspace.)\n\n", d.size, len(d.text))
		}
		b.WriteString(fenced("diff", d.text))
	}
	b.WriteString("### Verification results\n\n")
	if len(results) == 0 {
		b.WriteString("(No verification commands are configured.)\n\n")
	}
	for k, r := range results {
		fmt.Fprintf(&b, "#### %d. %s: ", k+1, inlineCode(r.Command))
		switch {
		case r.Error != "":
			fmt.Fprintf(&b, "could not run (%s)", r.Error)
		case r.TimedOut:
			fmt.Fprintf(&b, "timed out after %s and was killed", round(r.DurationMS))
		case r.ExitCode == 0:
			fmt.Fprintf(&b, "passed (exit code 0, %s)", round(r.DurationMS))
		default:
			fmt.Fprintf(&b, "FAILED (exit code %d, %s)", r.ExitCode, round(r.DurationMS))
		}
		b.WriteString("\n\n")
		if r.OutputTail != "" {
			b.WriteString(fenced("", r.OutputTail))
		}
	}
	b.WriteString("### Your verdict\n\n")
	b.WriteString(verdictInstructions)
	b.WriteString("\n")
	return b.String()
}

// fixPrompt is the prompt of iteration i of n's fix turn, after it's verdict.
func fixPrompt(i, n int, it Iteration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## Self-Review Fix: Iteration %d of %d\n\n", i, n)
	if it.VerdictParseError != "" {
		fmt.Fprintf(&b, "Your review verdict could not be used: %s. It counts as `iterate`.\n\n", it.VerdictParseError)
		b.WriteString("Fix what your review found wrong, and whatever the verification commands report. " +
			"In the next review, write `.sortie/review_verdict.json` exactly as asked.\n")
		return b.String()
	}
	b.WriteString("Your review found these issues (as you wrote them):\n\n")
	if len(it.Issues) == 0 {
		b.WriteString("(none listed: fix what your review found wrong, and whatever the verification commands report)\n")
	}
	for k, s := range it.Issues {
		fmt.Fprintf(&b, "%d. %s\n", k+1, s)
	}
	if it.IssuesDropped > 0 {
		fmt.Fprintf(&b, "\n(%d more issues were left out; only the first %d are listed.)\n", it.IssuesDropped, MaxIssues)
	}
	b.WriteString("\nFix them now, in the workspace. Do not write a verdict in this turn: the next review iteration follows.\n")
	return b.String()
}

// fenced is s in a fenced code block whose fence no run of backticks in s can close.
func fenced(lang, s string) string {
	f := strings.Repeat("`", max(3, longestRun(s, '`')+1))
	if !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	return f + lang + "\n" + s + f + "\n\n"
}

// inlineCode is s, on one line, as inline code no backtick in s can end.
func inlineCode(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	f := strings.Repeat("`", longestRun(s, '`')+1)
	return f + " " + s + " " + f
}

func longestRun(s string, c byte) int {
	best, cur := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			cur++
			best = max(best, cur)
		} else {
			cur = 0
		}
	}
	return best
}

func round(ms int64) string {
	return (time.Duration(ms) * time.Millisecond).Round(100 * time.Millisecond).String()
}
