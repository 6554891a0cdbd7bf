package copilot

import (
	"encoding/json"
	"io"
	"os"
)

// maxUsageFile bounds what is read of the CLI's usage file; a real one is a few KB.
const maxUsageFile = 1 << 20

// cliUsage is what the CLI's --usage-output-file says, read after the process exits.
// Like the result event's figures, it covers the whole CLI session, earlier
// invocations that the session resumed included (observed on 1.0.102).
type cliUsage struct {
	Output int64  // output tokens over every model
	Model  string // the model in use at the end
}

// readUsageFile parses the usage file the CLI wrote at path. ok is false when there is
// none (the CLI was killed, or predates the flag) or it cannot be read.
func readUsageFile(path string) (u cliUsage, ok bool) {
	f, err := os.Open(path)
	if err != nil {
		return cliUsage{}, false
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxUsageFile+1))
	if err != nil || len(b) > maxUsageFile {
		return cliUsage{}, false
	}
	var w struct {
		CurrentModel string `json:"currentModel"`
		ModelMetrics map[string]struct {
			Usage struct {
				OutputTokens int64 `json:"outputTokens"`
			} `json:"usage"`
		} `json:"modelMetrics"`
	}
	if json.Unmarshal(b, &w) != nil || w.ModelMetrics == nil {
		return cliUsage{}, false
	}
	u.Model = w.CurrentModel
	for name, m := range w.ModelMetrics {
		if m.Usage.OutputTokens > 0 {
			u.Output += m.Usage.OutputTokens
			if u.Model == "" {
				u.Model = name
			}
		}
	}
	return u, true
}
