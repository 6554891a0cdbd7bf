package config

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// maxWorkflowSize bounds WORKFLOW.md. A prompt template is a few kilobytes; anything near
// this is a mistake (or not a workflow file).
const maxWorkflowSize = 4 << 20

// Options controls how a WORKFLOW.md is loaded.
type Options struct {
	// Env looks up environment variables for $VAR references, SORTIE_* overrides,
	// SORTIE_ENV_FILE, HOME and TMPDIR. nil means os.LookupEnv; tests pass a map.
	Env func(string) (string, bool)
	// EnvFile is the .env file to read SORTIE_* overrides from (the --env-file flag).
	// When empty, SORTIE_ENV_FILE names it; when that is empty too, no .env is read.
	EnvFile string
}

func (o Options) lookup() func(string) (string, bool) {
	if o.Env != nil {
		return o.Env
	}
	return os.LookupEnv
}

// Load reads, builds and validates the WORKFLOW.md at path. On any error-severity problem
// it returns a *ValidationError listing every problem found. Warnings of a usable file
// are in Config.Warnings.
func Load(path string, opts Options) (*Config, error) {
	r := load(path, opts)
	if r.cfg == nil {
		return nil, &ValidationError{Path: r.path, Problems: r.problems}
	}
	return r.cfg, nil
}

// Check loads path like Load and returns every problem, errors and warnings alike, for
// `sortie validate`. The Config is nil when there is any error.
func Check(path string, opts Options) (*Config, []Problem) {
	r := load(path, opts)
	return r.cfg, r.problems
}

// loadResult is the outcome of one load: a Config (nil on error), every problem, and a
// hash of the inputs read from disk, so a watcher can tell whether anything changed.
type loadResult struct {
	path     string
	cfg      *Config
	problems []Problem
	hash     [sha256.Size]byte
	readErr  bool // the WORKFLOW.md itself could not be read
	// unchanged: the inputs hash to the one the caller already applied, so nothing
	// was parsed (cfg is nil).
	unchanged bool
}

func load(path string, opts Options) loadResult { return loadUnlessUnchanged(path, opts, nil) }

// loadUnlessUnchanged is load, but when applied is non-nil and the inputs read from disk
// hash to it, it stops before parsing and reports unchanged. The environment cannot change
// while the process runs, so the file bytes (and the .env file's) decide the result.
func loadUnlessUnchanged(path string, opts Options, applied *[sha256.Size]byte) loadResult {
	env := opts.lookup()
	r := loadResult{path: path}
	fail := func(format string, a ...any) loadResult {
		r.problems = append(r.problems, Problem{Severity: SeverityError, Check: CheckWorkflowLoad, Message: fmt.Sprintf(format, a...)})
		return r
	}

	abs, err := filepath.Abs(path)
	if err != nil {
		return fail("%s: %v", path, err)
	}
	r.path = abs
	data, err := readBounded(abs, maxWorkflowSize)
	if err != nil {
		r.readErr = true
		if errors.Is(err, fs.ErrNotExist) {
			return fail("%s: file not found", abs)
		}
		return fail("%s: %v", abs, err)
	}
	h := sha256.New()
	h.Write(data)

	var dotenv map[string]string
	envFile := opts.EnvFile
	if envFile == "" {
		envFile, _ = env("SORTIE_ENV_FILE")
	}
	if envFile != "" {
		if p, err := filepath.Abs(envFile); err == nil {
			envFile = p
		}
		vars, envData, problems := loadDotenv(envFile, func(p string) ([]byte, error) { return readBounded(p, maxDotenvSize) })
		dotenv = vars
		r.problems = append(r.problems, problems...)
		h.Write([]byte{0})
		h.Write(envData)
	}
	h.Sum(r.hash[:0])
	if applied != nil && r.hash == *applied && len(r.problems) == 0 {
		r.unchanged = true
		return r
	}

	doc := SplitFrontMatter(data)
	raw, problems := parseFrontMatter(abs, doc)
	r.problems = append(r.problems, problems...)
	if raw == nil {
		return r
	}

	secrets := secretEnv(raw)
	overrides := overrideLookup(env, dotenv)
	sources, problems := applyOverrides(raw, overrides)
	r.problems = append(r.problems, problems...)

	b := &builder{
		dir: filepath.Dir(abs),
		// $VAR references see the real environment first; SORTIE_* entries of the .env
		// file stand in for variables the environment lacks, so an operator can keep
		// every Sortie secret in one .env file.
		env: func(name string) (string, bool) {
			v, ok := env(name)
			if v == "" && strings.HasPrefix(name, "SORTIE_") && dotenv[name] != "" {
				return dotenv[name], true
			}
			return v, ok
		},
		sources: sources,
	}
	cfg := b.build(raw)
	r.problems = append(r.problems, b.problems...)
	if hasErrors(r.problems) {
		return r
	}

	cfg.Path, cfg.Dir = abs, filepath.Dir(abs)
	cfg.Prompt, cfg.PromptLine = doc.Prompt, doc.PromptLine
	for _, name := range append(b.secrets, sources["tracker.api_key"]) {
		if name != "" && !slices.Contains(secrets, name) {
			secrets = append(secrets, name)
		}
	}
	slices.Sort(secrets)
	cfg.SecretEnv = secrets
	cfg.Warnings = filterProblems(r.problems, SeverityWarning)
	r.cfg = cfg
	return r
}

// readBounded reads at most limit bytes of the file at path, failing when it is larger.
func readBounded(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("file is larger than %d MiB", limit>>20)
	}
	return data, nil
}
