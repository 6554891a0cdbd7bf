package selfreview

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"time"

	"sortie/internal/config"
	"sortie/internal/workspace"
)

// Defaults for a Config whose fields are zero (config sets them when it reads
// WORKFLOW.md; these keep a hand-made Config safe).
const (
	DefaultMaxIterations       = 3
	DefaultVerificationTimeout = 2 * time.Minute
	DefaultMaxDiffBytes        = 100 << 10
)

// Names the commands are run under: the hook name Params.Run's confinement is given.
const (
	DiffCommandName   = "self_review_diff"
	VerifyCommandName = "self_review_verify"
)

// MaxPromptOutput is how much of the end of each verification command's output goes
// to the review prompt and the Result, in bytes.
const MaxPromptOutput = 4 << 10

// maxDiffOutput bounds the diff taken: what Params.Run keeps of a command's output
// (workspace.MaxCommandOutput), less room for the size line after the diff.
const maxDiffOutput = workspace.MaxCommandOutput - 64

// Params is one run's self-review.
type Params struct {
	Config    config.SelfReviewConfig
	Workspace string // the workspace path (for the verdict file)
	Task      string // the issue's identifier + title, for the prompt
	// Run runs one shell command confined in the workspace (Manager.Verify bound to
	// the run).
	Run func(ctx context.Context, name, script string, timeout time.Duration) (workspace.CommandResult, error)
	// Turn runs one agent turn on the run's session with prompt; an error ends the
	// loop.
	Turn func(ctx context.Context, prompt string) error
	// Stopped reports whether the agent signalled a stop (.sortie/status) after a
	// turn: ends the loop. nil never stops.
	Stopped func() bool
	// Progress is called as each iteration starts (for the dashboard); optional.
	Progress func(iteration int)
}

// Result is what the loop did: the reference daemon's ReviewMetadata, persisted with
// the run as JSON.
type Result struct {
	Enabled         bool        `json:"enabled"`
	Iterations      []Iteration `json:"iterations"`
	TotalIterations int         `json:"total_iterations"`
	// FinalVerdict is the last iteration's verdict: pass, iterate, or none when no
	// verdict was read.
	FinalVerdict string `json:"final_verdict"`
	CapReached   bool   `json:"cap_reached"`
	// Stopped says the agent signalled a stop (.sortie/status) during the loop.
	Stopped bool `json:"stopped,omitempty"`
	// Error is why the loop ended early: a turn failed, the run was cancelled.
	Error string `json:"error,omitempty"`
}

// Iteration is one review iteration.
type Iteration struct {
	Iteration           int                  `json:"iteration"`
	DiffSizeBytes       int64                `json:"diff_size_bytes"`
	DiffTruncated       bool                 `json:"diff_truncated"`
	DiffError           string               `json:"diff_error,omitempty"`
	VerificationResults []VerificationResult `json:"verification_results"`
	// Verdict is pass, iterate, or none (no verdict read: the loop goes on as for
	// iterate).
	Verdict           string   `json:"verdict"`
	VerdictRaw        string   `json:"verdict_raw,omitempty"` // the file's start, cut to maxVerdictRaw
	VerdictParseError string   `json:"verdict_parse_error,omitempty"`
	Issues            []string `json:"issues,omitempty"` // as ParseVerdict cut them
	IssuesDropped     int      `json:"issues_dropped,omitempty"`
}

// VerificationResult is one verification command's result.
type VerificationResult struct {
	Command    string `json:"command"`
	ExitCode   int    `json:"exit_code"` // -1 when killed or not run
	TimedOut   bool   `json:"timed_out"`
	DurationMS int64  `json:"duration_ms"`
	OutputTail string `json:"output_tail"` // at most MaxPromptOutput bytes of the end
	// Error says why the command could not run (it is then not a failure of the
	// work, but the review is told).
	Error string `json:"error,omitempty"`
}

// maxVerdictRaw is how much of the verdict file the Result keeps.
const maxVerdictRaw = 4 << 10

// Status is disabled|passed|cap_reached|error for after_run's
// SORTIE_SELF_REVIEW_STATUS: error is every other end (a turn failed, the run was
// cancelled, the agent signalled a stop).
func (r Result) Status() string {
	switch {
	case !r.Enabled:
		return "disabled"
	case r.FinalVerdict == VerdictPass:
		return "passed"
	case r.CapReached:
		return "cap_reached"
	}
	return "error"
}

// Run runs the self-review loop (see the package doc) and returns what it did. It
// returns an error, with the Result so far (whose Error says it too), when a turn
// fails or ctx is cancelled; a verification command that could not run, a diff that
// could not be taken and a verdict that could not be read are recorded and the loop
// goes on. A disabled Config does nothing.
func Run(ctx context.Context, p Params) (Result, error) {
	res := Result{Enabled: p.Config.Enabled, FinalVerdict: VerdictNone, Iterations: []Iteration{}}
	if !p.Config.Enabled {
		return res, nil
	}
	if p.Run == nil || p.Turn == nil {
		return res, fail(&res, errors.New("selfreview: Params.Run and Params.Turn are required"))
	}
	n := p.Config.MaxIterations
	if n <= 0 {
		n = DefaultMaxIterations
	}
	timeout := p.Config.VerificationTimeout
	if timeout <= 0 {
		timeout = DefaultVerificationTimeout
	}
	maxDiff := p.Config.MaxDiffBytes
	if maxDiff <= 0 {
		maxDiff = DefaultMaxDiffBytes
	}
	maxDiff = min(maxDiff, maxDiffOutput)
	stopped := func() bool {
		if p.Stopped != nil && p.Stopped() {
			res.Stopped = true
			return true
		}
		return false
	}

	for i := 1; i <= n; i++ {
		if err := ctx.Err(); err != nil {
			return res, fail(&res, fmt.Errorf("selfreview: iteration %d: %w", i, err))
		}
		if p.Progress != nil {
			p.Progress(i)
		}
		res.Iterations = append(res.Iterations, Iteration{Iteration: i, Verdict: VerdictNone, VerificationResults: []VerificationResult{}})
		res.TotalIterations = i
		it := &res.Iterations[len(res.Iterations)-1]

		d, err := takeDiff(ctx, p, maxDiff, timeout)
		if ctx.Err() != nil {
			return res, fail(&res, fmt.Errorf("selfreview: iteration %d: taking the diff: %w", i, ctx.Err()))
		}
		it.DiffSizeBytes, it.DiffTruncated = d.size, d.truncated
		if err != nil {
			it.DiffError = err.Error()
		}

		for _, c := range p.Config.VerificationCommands {
			r, err := p.Run(ctx, VerifyCommandName, c, timeout)
			if ctx.Err() != nil {
				return res, fail(&res, fmt.Errorf("selfreview: iteration %d: verification: %w", i, ctx.Err()))
			}
			vr := VerificationResult{Command: c, ExitCode: r.ExitCode, TimedOut: r.TimedOut,
				DurationMS: r.Duration.Milliseconds(), OutputTail: tail(r.Output, MaxPromptOutput)}
			if err != nil {
				vr.ExitCode, vr.Error = -1, err.Error()
			}
			it.VerificationResults = append(it.VerificationResults, vr)
		}

		// A verdict left from an earlier iteration or run must not pass for this one's.
		// A `.sortie` that is a link is refused here, and the read below refuses it too.
		_ = workspace.RemoveSortieFile(p.Workspace, VerdictFile)

		if err := p.Turn(ctx, reviewPrompt(i, n, p.Task, d, it.DiffError, it.VerificationResults)); err != nil {
			return res, fail(&res, fmt.Errorf("selfreview: iteration %d: review turn: %w", i, err))
		}
		if stopped() {
			return res, nil
		}

		v, perr := readVerdict(p.Workspace, it)
		if perr == nil {
			it.Verdict, it.Issues, it.IssuesDropped = v.Verdict, v.Issues, v.Dropped
		} else {
			it.VerdictParseError = perr.Error()
		}
		res.FinalVerdict = it.Verdict
		if it.Verdict == VerdictPass {
			return res, nil
		}
		if i == n {
			res.CapReached = true
			return res, nil
		}

		if err := ctx.Err(); err != nil {
			return res, fail(&res, fmt.Errorf("selfreview: iteration %d: %w", i, err))
		}
		if err := p.Turn(ctx, fixPrompt(i, n, *it)); err != nil {
			return res, fail(&res, fmt.Errorf("selfreview: iteration %d: fix turn: %w", i, err))
		}
		if stopped() {
			return res, nil
		}
	}
	return res, nil
}

func fail(res *Result, err error) error {
	res.Error = err.Error()
	return err
}

// readVerdict reads and parses the verdict file, keeping its start in it.VerdictRaw.
func readVerdict(wsPath string, it *Iteration) (Verdict, error) {
	data, err := workspace.ReadSortieFile(wsPath, VerdictFile, MaxVerdictSize)
	switch {
	case errors.Is(err, workspace.ErrSymlink):
		return Verdict{}, errors.New("the verdict file or .sortie/ is a symbolic link; it was not read")
	case errors.Is(err, workspace.ErrTooLarge):
		return Verdict{}, fmt.Errorf("the verdict file is larger than %d bytes; it was not read", MaxVerdictSize)
	case errors.Is(err, workspace.ErrNotRegular), errors.Is(err, workspace.ErrConflict):
		return Verdict{}, errors.New("the verdict file or .sortie/ is not a regular file or directory; it was not read")
	case errors.Is(err, fs.ErrNotExist):
		return Verdict{}, errors.New("no verdict file was written")
	case err != nil:
		return Verdict{}, errors.New("the verdict file could not be read")
	}
	it.VerdictRaw = cut(strings.ToValidUTF8(string(data), "\uFFFD"), maxVerdictRaw)
	return ParseVerdict(data)
}

// diff is the diff taken for a review.
type diff struct {
	text      string // at most the cap's bytes of its start
	size      int64  // the whole diff's size
	truncated bool
}

// diffScript prints the first max bytes of the workspace's diff (new files included:
// git add --intent-to-add), then a line with the number of bytes left out. dd with
// bs=1 reads no byte past max, so the count that follows is exact.
//
// --no-ext-diff and --no-textconv keep git's own diff whatever the repository
// configures (an external diff or a textconv driver is a program the agent chose), and
// whatever GitEnv sets: its empty diff.external makes a plain `git diff` fail.
func diffScript(max int) string {
	const d = "git diff --no-ext-diff --no-textconv"
	return "git add --intent-to-add . >/dev/null 2>&1; " +
		"{ " + d + " HEAD 2>/dev/null || " + d + " 2>&1; } | " +
		"{ dd bs=1 count=" + strconv.Itoa(max) + " 2>/dev/null; printf '\\n%s\\n' \"$(wc -c)\"; }"
}

// takeDiff runs diffScript through p.Run: the daemon never runs git in the workspace
// itself, since what the agent left there (a hook, a filter in .git/config) would run
// unconfined.
func takeDiff(ctx context.Context, p Params, max int, timeout time.Duration) (diff, error) {
	r, err := p.Run(ctx, DiffCommandName, diffScript(max), timeout)
	switch {
	case err != nil:
		return diff{}, fmt.Errorf("the diff could not be taken: %v", err)
	case r.TimedOut:
		return diff{}, fmt.Errorf("taking the diff timed out after %s", timeout)
	case r.ExitCode != 0:
		return diff{}, fmt.Errorf("taking the diff failed with exit code %d", r.ExitCode)
	}
	out, ok := strings.CutSuffix(r.Output, "\n")
	k := strings.LastIndexByte(out, '\n')
	if !ok || k < 0 {
		return diff{}, errors.New("the diff's output was not understood")
	}
	rest, err := strconv.ParseInt(strings.TrimSpace(out[k+1:]), 10, 64)
	if err != nil || rest < 0 {
		return diff{}, errors.New("the diff's output was not understood")
	}
	text := out[:k]
	return diff{text: text, size: int64(len(text)) + rest, truncated: rest > 0}, nil
}

// tail is the last max bytes of s, at a character's boundary, with a note when
// something was cut.
func tail(s string, max int) string {
	if len(s) <= max {
		return s
	}
	n := len(s) - max
	for n < len(s) && (s[n]&0xC0) == 0x80 {
		n++
	}
	return fmt.Sprintf("[%d earlier bytes cut]\n%s", n, s[n:])
}
