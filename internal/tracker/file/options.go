package file

import (
	"fmt"
	"path/filepath"
	"strings"

	"sortie/internal/option"
	"sortie/internal/tracker"
)

// options are the typed contents of the `file:` block.
type options struct {
	path string
}

// optionSpecs declares the `file:` block (tracker.Meta.Options): New reads it by this
// declaration, and config warns about any other key in it.
var optionSpecs = option.Set{Keys: []option.Option{
	{Key: "path", Path: true, Doc: "the issues JSON file, relative to WORKFLOW.md's directory; tracker.path wins over it",
		Set: option.Field(pathOption, func(o *options) *string { return &o.path })},
}}

func init() {
	// The file tracker needs neither tracker.project nor tracker.api_key.
	tracker.Register("file", tracker.Meta{Options: optionSpecs}, New)
}

// pathOption reads file.path: a string that is not empty.
func pathOption(v any) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("must be a string (got %T)", v)
	}
	if strings.TrimSpace(s) == "" {
		return "", fmt.Errorf("must not be empty; set it to the issues JSON file, relative to WORKFLOW.md or absolute")
	}
	return s, nil
}

// issuesPath is the absolute path of the issues file: cfg.Options["path"] (which the
// daemon fills from tracker.path or file.path), a relative path resolved against
// cfg.WorkflowDir.
func issuesPath(cfg tracker.Config) (string, error) {
	// An unknown key is ignored here; config warns about it (unknown_sub_key).
	opts, _, err := option.Read[options](optionSpecs, "file", cfg.Options, cfg.WorkflowDir)
	if err != nil {
		return "", fmt.Errorf("config: %w", err)
	}
	if opts.path == "" {
		return "", fmt.Errorf("config: file.path: the file tracker needs the path of its issues JSON file; set file.path (or tracker.path) in WORKFLOW.md")
	}
	s := opts.path // already resolved against WorkflowDir (Path: true)
	abs, err := filepath.Abs(s)
	if err != nil {
		return "", fmt.Errorf("config: file.path: cannot make %q absolute: %w", s, err)
	}
	return abs, nil
}
