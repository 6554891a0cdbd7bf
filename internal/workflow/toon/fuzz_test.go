package toon

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// FuzzDecode checks that no input panics and that every successful decode
// marshals to JSON. The seeds are the inputs of Sortie's own fixtures and, when
// they are beside the repository, of the official ones.
func FuzzDecode(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(ownFixtureDir, "*.json"))
	official, _ := filepath.Glob(filepath.Join(fixtureDir, "*.json"))
	files = append(files, official...)
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		var ff fixtureFile
		if err := json.Unmarshal(raw, &ff); err != nil {
			f.Fatal(err)
		}
		for _, c := range ff.Tests {
			f.Add(c.Input)
		}
	}
	f.Add("a:\n  b[2]{x,y}:\n    1,2\n    3,4\n  c.d: 1e400")
	f.Fuzz(func(t *testing.T, in string) {
		for _, opts := range []Options{
			DefaultOptions(),
			{Indent: 1, Strict: false, ExpandPaths: ExpandSafe},
			{Strict: true, ExpandPaths: ExpandSafe},
		} {
			v, err := Decode([]byte(in), opts)
			if err != nil {
				if _, ok := err.(*SyntaxError); !ok {
					t.Fatalf("Decode(%q, %+v) returned %T, want *SyntaxError: %v", in, opts, err, err)
				}
				continue
			}
			if _, err := json.Marshal(v); err != nil {
				t.Fatalf("Decode(%q, %+v) result does not marshal: %v", in, opts, err)
			}
		}
	})
}
