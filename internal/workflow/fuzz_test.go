package workflow

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzLoadDefinition feeds arbitrary bytes to the single-file parser in
// each format: it must not panic, and every problem must name the file.
func FuzzLoadDefinition(f *testing.F) {
	for _, p := range []string{
		"testdata/library/feature/workflow.toon",
		"testdata/library/feature/activities/01-plan.toon",
		"testdata/library/feature/activities/02-design.yaml",
		"testdata/library/feature/activities/03-build.json",
	} {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("a: *b\n"))
	f.Add([]byte(`{"checkpoints":[{"condition":{"type":"not","condition":{"type":"not"}}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, ext := range []string{".toon", ".yaml", ".json"} {
			file := filepath.Join("lib", "wf", "activities", "01-x"+ext)
			for _, err := range []error{
				func() error { _, err := ParseActivity(file, data); return err }(),
				func() error { _, err := ParseWorkflow(file, data); return err }(),
			} {
				if err == nil {
					continue
				}
				var le *LoadError
				if !errors.As(err, &le) || len(le.Problems) == 0 {
					t.Fatalf("%s: error %v is not a *LoadError with problems", ext, err)
				}
				for _, p := range le.Problems {
					if p.File != file || !strings.HasPrefix(p.String(), file+": ") {
						t.Fatalf("%s: problem %q does not name the file %s", ext, p, file)
					}
				}
			}
		}
	})
}
