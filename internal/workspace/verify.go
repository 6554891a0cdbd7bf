package workspace

import (
	"context"
	"errors"
	"strings"
	"time"
)

// MaxCommandOutput is how much of a verification command's combined stdout and
// stderr Verify keeps, in bytes: the end of it.
const MaxCommandOutput = 64 << 10

// CommandResult is what one verification command did.
type CommandResult struct {
	Command  string
	ExitCode int // -1 when killed or not started
	TimedOut bool
	Output   string // the tail of stdout+stderr, at most MaxCommandOutput bytes
	Duration time.Duration
}

// Verify runs script with `/bin/sh -c` in the workspace ws.Path, as a hook that runs
// after an agent does (RunHook): in its own process group, confined by
// Config.ConfineHook (which is given name as the hook's name), with the repository's
// git configuration neutralised, without SSH_AUTH_SOCK, and with the environment
// HookEnv(ws, issue, nil). When timeout passes (the hook timeout when not positive)
// the whole process group is killed and the result says TimedOut.
//
// A script that ran is a result, whatever its exit: a non-zero exit is in ExitCode,
// not an error. The error is for a script that could not run or was cut short by ctx:
// a blank script, a *HookError of HookOpValidate or HookOpStart (also when it could
// not be confined), or one of HookOpRun wrapping ctx's error when ctx was cancelled;
// the result then says as much as is known (ExitCode -1).
func (m *Manager) Verify(ctx context.Context, name, script string, ws Workspace, issue Issue, timeout time.Duration) (CommandResult, error) {
	res := CommandResult{Command: script, ExitCode: -1}
	if strings.TrimSpace(script) == "" {
		return res, &HookError{Hook: name, Op: HookOpValidate, ExitCode: -1, Err: errors.New("the command is blank")}
	}
	if timeout <= 0 {
		timeout = m.timeout
	}
	out, err := m.runScript(ctx, scriptRun{
		name: name, script: script, wsPath: ws.Path, issue: issue, attempt: ws.Attempt,
		afterAgent: true, timeout: timeout, maxOutput: MaxCommandOutput,
	})
	res.Output, res.Duration = out.output, out.duration
	if err == nil {
		res.ExitCode = 0
		return res, nil
	}
	he, ok := errors.AsType[*HookError](err)
	if !ok {
		return res, err
	}
	switch {
	case he.Op == HookOpTimeout:
		res.TimedOut = true
		return res, nil
	case he.Op == HookOpRun && ctx.Err() != nil:
		return res, err
	case he.Op == HookOpRun:
		res.ExitCode = he.ExitCode
		return res, nil
	}
	return res, err
}
