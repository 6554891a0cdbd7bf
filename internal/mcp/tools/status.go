package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"syscall"
	"time"

	_ "sortie/internal/platform" // Linux and macOS only
)

// State file location and limits (spec/agent-extensions.md, sortie_status).
const (
	// StateFile is the path of the state file relative to the workspace root.
	StateFile = ".sortie/state.json"
	// MaxStateFileSize is the largest state file the tools read, in bytes.
	MaxStateFileSize = 4 << 10
	// StateVersion is the version of the state file format these tools read.
	StateVersion = 1
)

// State is .sortie/state.json as the daemon's worker writes it at session start, at each
// turn start and on token usage. Unknown fields are ignored, so the daemon may add some.
type State struct {
	Version         int    `json:"version"`
	IssueID         string `json:"issue_id"`
	IssueIdentifier string `json:"issue_identifier"`
	RunID           int64  `json:"run_id"`
	SessionID       string `json:"session_id"`
	TurnNumber      int    `json:"turn_number"` // the turn in progress, 1-based
	MaxTurns        int    `json:"max_turns"`   // agent.max_turns when the run started
	// Attempt is the retry or continuation attempt, nil on a first run.
	Attempt          *int      `json:"attempt"`
	SessionStartedAt time.Time `json:"session_started_at"`
	UpdatedAt        time.Time `json:"updated_at"`
	// Tokens and CostUSD are the session's cumulative spend (cost as the agent CLI
	// reports it, 0 when unknown).
	Tokens  Tokens  `json:"tokens"`
	CostUSD float64 `json:"cost_usd"`
}

// Tokens are cumulative token counts, as tools report them.
type Tokens struct {
	Input     int64 `json:"input_tokens"`
	Output    int64 `json:"output_tokens"`
	Total     int64 `json:"total_tokens"`
	CacheRead int64 `json:"cache_read_tokens"`
}

func (t Tokens) valid() bool {
	return t.Input >= 0 && t.Output >= 0 && t.Total >= 0 && t.CacheRead >= 0
}

// ReadState reads and checks the state file of the workspace at root. It refuses a
// symlinked .sortie directory or state file, anything but a regular file, and a file
// larger than MaxStateFileSize. Errors name the file relative to the workspace.
func ReadState(root string) (State, error) {
	data, err := readStateFile(root)
	if err != nil {
		return State{}, err
	}
	var st State
	if err := json.Unmarshal(data, &st); err != nil {
		return State{}, fmt.Errorf("%s: invalid JSON: %v", StateFile, err)
	}
	switch {
	case st.Version != StateVersion:
		return State{}, fmt.Errorf("%s: version %d, this sidecar reads version %d (is the daemon a different sortie release?)", StateFile, st.Version, StateVersion)
	case st.SessionStartedAt.IsZero():
		return State{}, fmt.Errorf("%s: session_started_at is missing", StateFile)
	case st.TurnNumber < 0 || st.MaxTurns < 0 || !st.Tokens.valid() || st.CostUSD < 0 || (st.Attempt != nil && *st.Attempt < 0):
		return State{}, fmt.Errorf("%s: negative counter", StateFile)
	}
	return st, nil
}

func readStateFile(root string) ([]byte, error) {
	dir := filepath.Join(root, filepath.Dir(StateFile))
	path := filepath.Join(root, StateFile)
	notExist := &fs.PathError{Op: "open", Path: StateFile, Err: syscall.ENOENT}

	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, notExist
	}
	if err != nil {
		return nil, relErr(err, root)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return nil, fmt.Errorf("%s is a symlink; refusing to follow it", filepath.Dir(StateFile))
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", filepath.Dir(StateFile))
	}
	fi, err = os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, notExist
	}
	if err != nil {
		return nil, relErr(err, root)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return nil, fmt.Errorf("%s is a symlink; refusing to follow it", StateFile)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", StateFile)
	}
	if fi.Size() > MaxStateFileSize {
		return nil, fmt.Errorf("%s is %d bytes, larger than the %d-byte limit", StateFile, fi.Size(), MaxStateFileSize)
	}
	// O_NOFOLLOW and the identity check close the window between Lstat and open in
	// which the file could be replaced by a symlink or a larger file.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, relErr(err, root)
	}
	defer f.Close()
	opened, err := f.Stat()
	if err != nil {
		return nil, relErr(err, root)
	}
	if !os.SameFile(fi, opened) {
		return nil, fmt.Errorf("%s changed while it was being opened; try again", StateFile)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxStateFileSize+1))
	if err != nil {
		return nil, relErr(err, root)
	}
	if len(data) > MaxStateFileSize {
		return nil, fmt.Errorf("%s is larger than the %d-byte limit", StateFile, MaxStateFileSize)
	}
	return data, nil
}

// relErr shows a path error relative to the workspace, as the agent knows it.
func relErr(err error, root string) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		if rel, rerr := filepath.Rel(root, pe.Path); rerr == nil {
			return &fs.PathError{Op: pe.Op, Path: rel, Err: pe.Err}
		}
	}
	return err
}

// StatusSpec describes sortie_status.
var StatusSpec = Spec{
	Name: NameStatus,
	Tier: TierLocal,
	Description: "Reports the current session's progress: turn_number, max_turns, turns_remaining, attempt " +
		"(null on a first run), session_duration_seconds and token usage. Call it to plan your remaining " +
		"work before you run out of turns. Takes no arguments.",
	InputSchema: noArgsSchema,
	ReadOnly:    true,
}

// Status is the sortie_status tool: the session's turn and token state from the
// workspace's state file.
type Status struct {
	workspace string
	maxTurns  int
	now       func() time.Time
}

// NewStatus returns sortie_status for the workspace at root (absolute). maxTurns is
// agent.max_turns from WORKFLOW.md, reported when the state file does not say (the
// file's value, fixed when the run started, wins). now is the clock for the session
// duration; nil means time.Now.
func NewStatus(root string, maxTurns int, now func() time.Time) *Status {
	if now == nil {
		now = time.Now
	}
	return &Status{workspace: root, maxTurns: maxTurns, now: now}
}

// Spec implements Tool.
func (s *Status) Spec() Spec { return StatusSpec }

// statusResponse is sortie_status's answer, a bare object (spec/agent-extensions.md).
type statusResponse struct {
	TurnNumber             int     `json:"turn_number"`
	MaxTurns               int     `json:"max_turns"`
	TurnsRemaining         int     `json:"turns_remaining"`
	Attempt                *int    `json:"attempt"`
	SessionDurationSeconds float64 `json:"session_duration_seconds"`
	Tokens                 Tokens  `json:"tokens"`
}

// Call implements Tool.
func (s *Status) Call(_ context.Context, args json.RawMessage) Result {
	if err := decodeArgs(StatusSpec, args, &struct{}{}); err != nil {
		return localFail(KindInvalidInput, "%v", err)
	}
	st, err := ReadState(s.workspace)
	if err != nil {
		return localFail(KindStateUnavailable, "state file unavailable: %v", err)
	}
	maxTurns := st.MaxTurns
	if maxTurns == 0 {
		maxTurns = s.maxTurns
	}
	return Result{Body: statusResponse{
		TurnNumber:             st.TurnNumber,
		MaxTurns:               maxTurns,
		TurnsRemaining:         max(maxTurns-st.TurnNumber, 0),
		Attempt:                st.Attempt,
		SessionDurationSeconds: durationSeconds(s.now().Sub(st.SessionStartedAt)),
		Tokens:                 st.Tokens,
	}}
}

// durationSeconds is d in seconds rounded to the millisecond, never negative (the
// daemon's clock and ours may disagree by a little).
func durationSeconds(d time.Duration) float64 {
	if d < 0 {
		return 0
	}
	return math.Round(d.Seconds()*1000) / 1000
}
