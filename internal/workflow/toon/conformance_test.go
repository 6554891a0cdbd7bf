package toon

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// ownFixtureDir holds Sortie's own decode cases, in the layout of the official
// fixtures: every feature of the spec the decoder implements, and its errors.
const ownFixtureDir = "testdata/decode"

// fixtureDir holds the official TOON 3.3.2 decode fixtures, third-party data
// beside the repository (/work/shared/testdata/README.md), read in place when
// present, as in CI.
const fixtureDir = "../../../../shared/testdata/toon-spec-3.3.2/decode"

// knownFailing lists fixture cases (file/name, in either directory) this
// decoder does not pass yet, with the reason. A listed case that passes fails
// the test, so the list stays honest.
var knownFailing = map[string]string{}

type fixtureFile struct {
	Tests []fixtureCase `json:"tests"`
}

type fixtureCase struct {
	Name        string          `json:"name"`
	Input       string          `json:"input"`
	Expected    json.RawMessage `json:"expected"`
	ShouldError bool            `json:"shouldError"`
	Options     *struct {
		Indent      *int    `json:"indent"`
		Strict      *bool   `json:"strict"`
		ExpandPaths *string `json:"expandPaths"`
	} `json:"options"`
}

func (c fixtureCase) options() Options {
	o := DefaultOptions()
	if c.Options == nil {
		return o
	}
	if c.Options.Indent != nil {
		o.Indent = *c.Options.Indent
	}
	if c.Options.Strict != nil {
		o.Strict = *c.Options.Strict
	}
	if c.Options.ExpandPaths != nil {
		o.ExpandPaths = *c.Options.ExpandPaths
	}
	return o
}

func TestDecodeFixtures(t *testing.T) {
	runFixtureDir(t, ownFixtureDir)
}

func TestConformance_DecodeFixtures(t *testing.T) {
	if _, err := os.Stat(fixtureDir); err != nil {
		t.Skip("skipped: ../shared/testdata/toon-spec-3.3.2/decode not present (third-party TOON conformance fixtures, run in CI)")
	}
	runFixtureDir(t, fixtureDir)
}

// runFixtureDir runs every case of every *.json fixture file in dir, one
// subtest each.
func runFixtureDir(t *testing.T, dir string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures in %s (err %v)", dir, err)
	}
	sort.Strings(files)
	total, passed := 0, 0
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var ff fixtureFile
		if err := json.Unmarshal(raw, &ff); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if len(ff.Tests) == 0 {
			t.Fatalf("%s has no tests", file)
		}
		base := strings.TrimSuffix(filepath.Base(file), ".json")
		for _, c := range ff.Tests {
			id := base + "/" + c.Name
			total++
			problem := runFixture(c)
			reason, known := knownFailing[id]
			t.Run(id, func(t *testing.T) {
				switch {
				case problem == "" && known:
					t.Errorf("passes now; remove it from knownFailing (was: %s)", reason)
				case problem != "" && !known:
					t.Error(problem)
				}
			})
			if problem == "" {
				passed++
			}
		}
	}
	t.Logf("TOON decode fixtures in %s: %d/%d cases pass", dir, passed, total)
}

// runFixture decodes one case and describes how it failed, or returns "".
func runFixture(c fixtureCase) string {
	got, err := Decode([]byte(c.Input), c.options())
	if c.ShouldError {
		if err == nil {
			b, _ := json.Marshal(got)
			return fmt.Sprintf("input %q: expected an error, got %s", c.Input, b)
		}
		return ""
	}
	if err != nil {
		return fmt.Sprintf("input %q: unexpected error: %v", c.Input, err)
	}
	want, err := readOrdered(json.NewDecoder(bytes.NewReader(c.Expected)))
	if err != nil {
		return "bad fixture: " + err.Error()
	}
	if !sameValue(got, want) {
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		return fmt.Sprintf("input %q:\n got %s\nwant %s", c.Input, g, w)
	}
	return ""
}

// readOrdered decodes one JSON value keeping object key order, with
// numbers as float64, so expected values compare with Decode's output.
func readOrdered(dec *json.Decoder) (any, error) {
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok := tok.(type) {
	case json.Delim:
		switch tok {
		case '{':
			obj := newObject()
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				v, err := readOrdered(dec)
				if err != nil {
					return nil, err
				}
				obj.set(kt.(string), v)
			}
			_, err := dec.Token()
			return obj, err
		case '[':
			arr := []any{}
			for dec.More() {
				v, err := readOrdered(dec)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			_, err := dec.Token()
			return arr, err
		}
	case json.Number:
		return tok.Float64()
	}
	return tok, nil
}

// sameValue is JSON-model equality of §2: objects compare by ordered key
// sequence, numbers by value.
func sameValue(a, b any) bool {
	switch a := a.(type) {
	case *Object:
		b, ok := b.(*Object)
		if !ok || a.Len() != b.Len() {
			return false
		}
		for i, k := range a.keys {
			if b.keys[i] != k || !sameValue(a.vals[k], b.vals[k]) {
				return false
			}
		}
		return true
	case []any:
		b, ok := b.([]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for i := range a {
			if !sameValue(a[i], b[i]) {
				return false
			}
		}
		return true
	case float64:
		b, ok := b.(float64)
		return ok && a == b
	default:
		return a == b
	}
}
