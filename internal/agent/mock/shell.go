package mock

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"sync"
	"time"

	"sortie/internal/option"
)

// Limits of the shell step.
const (
	maxShellSteps    = 64
	maxShellOutput   = 64 << 10
	shellStepTimeout = time.Minute
)

// shellDir is where the child records each shell step's result in the workspace:
// shellDir/<name>.out holds "exit N" on its first line, then the combined output.
const shellDir = counterDir + "/shell"

var shellName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`) })

// asShell reads `shell: [{name, run}]`.
func asShell(path string, v any) ([]shellStep, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%s: must be a list of {name, run} (got %s)", path, option.Describe(v))
	}
	if len(list) > maxShellSteps {
		return nil, fmt.Errorf("%s: at most %d steps (got %d)", path, maxShellSteps, len(list))
	}
	steps := make([]shellStep, 0, len(list))
	seen := map[string]bool{}
	for i, item := range list {
		at := fmt.Sprintf("%s[%d]", path, i)
		m, err := asMap(at, item)
		if err != nil {
			return nil, err
		}
		var s shellStep
		for _, k := range sortedKeys(m) {
			switch k {
			case "name":
				s.Name, err = asString(at+".name", m[k])
			case "run":
				s.Run, err = asString(at+".run", m[k])
			default:
				err = fmt.Errorf("%s.%s: unknown key (known: name, run)", at, k)
			}
			if err != nil {
				return nil, err
			}
		}
		switch {
		case !shellName().MatchString(s.Name):
			return nil, fmt.Errorf("%s.name: must be 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit (got %q)", at, s.Name)
		case seen[s.Name]:
			return nil, fmt.Errorf("%s.name: %q is used twice", at, s.Name)
		case s.Run == "":
			return nil, fmt.Errorf("%s.run: is required", at)
		}
		seen[s.Name] = true
		steps = append(steps, s)
	}
	return steps, nil
}

// runShell runs each step with /bin/sh -c in the workspace, with the agent's
// environment, and records its exit status and output under shellDir. A command that
// fails is a result, not an error: it is what a hostile agent's attempt looks like.
func runShell(root *os.Root, steps []shellStep) error {
	if len(steps) == 0 {
		return nil
	}
	if err := root.MkdirAll(shellDir, 0o755); err != nil {
		return fmt.Errorf("shell: %w", err)
	}
	for _, s := range steps {
		ctx, cancel := context.WithTimeout(context.Background(), shellStepTimeout)
		cmd := exec.CommandContext(ctx, "/bin/sh", "-c", s.Run)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		cancel()
		code := 0
		var exit *exec.ExitError
		switch {
		case errors.As(err, &exit):
			code = exit.ExitCode()
		case err != nil:
			return fmt.Errorf("shell %s: %w", s.Name, err)
		}
		body := out.Bytes()
		if len(body) > maxShellOutput {
			body = body[:maxShellOutput]
		}
		rec := append([]byte(fmt.Sprintf("exit %d\n", code)), body...)
		if err := root.WriteFile(shellDir+"/"+s.Name+".out", rec, 0o644); err != nil {
			return fmt.Errorf("shell %s: %w", s.Name, err)
		}
	}
	return nil
}
