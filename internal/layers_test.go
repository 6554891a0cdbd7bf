// Package internal_test holds the check of the import graph against the layer table
// of docs/architecture.md.
package internal_test

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestImportGraph_FollowsTheLayerTable reads the layer table of docs/architecture.md
// and the production import graph (go list), and fails on a package the table does
// not place, an import from a lower layer into a higher one, and a forbidden
// dependency the table's "never depends on" column names (directly or through
// another package). Test-support packages (the table's "test support" row) may be
// imported by tests only.
func TestImportGraph_FollowsTheLayerTable(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on PATH; the import graph cannot be listed")
	}
	layers, never, testOnly := readLayerTable(t, filepath.Join("..", "docs", "architecture.md"))
	pkgs := listPackages(t)

	// entryOf is the table's entry placing path: the longest that is the package or
	// one of its parents.
	entryOf := func(path string) (string, bool) {
		best := ""
		for entry := range layers {
			if (path == entry || strings.HasPrefix(path, entry+"/")) && len(entry) > len(best) {
				best = entry
			}
		}
		return best, best != ""
	}
	layerOf := func(path string) (int, bool) {
		e, ok := entryOf(path)
		return layers[e], ok
	}
	if len(never["internal/orchestrator"]) == 0 {
		t.Fatal("docs/architecture.md's layer table names nothing internal/orchestrator never depends on: the table was not read as meant")
	}
	isTestOnly := func(path string) bool {
		return slices.ContainsFunc(testOnly, func(e string) bool { return path == e || strings.HasPrefix(path, e+"/") })
	}
	for _, p := range pkgs {
		if isTestOnly(p.path) {
			continue
		}
		from, ok := layerOf(p.path)
		if !ok {
			t.Errorf("%s is in no layer of docs/architecture.md: add it to the table", p.path)
			continue
		}
		for _, imp := range p.imports {
			if isTestOnly(imp) {
				t.Errorf("%s imports %s, a test-support package: production code must not", p.path, imp)
				continue
			}
			to, ok := layerOf(imp)
			if ok && to > from {
				t.Errorf("%s (layer %d) imports %s (layer %d): an arrow from a lower layer up into a higher one", p.path, from, imp, to)
			}
		}
		entry, _ := entryOf(p.path)
		for _, dep := range p.deps {
			for _, bad := range never[entry] {
				if dep == bad || strings.HasPrefix(dep, bad+"/") {
					t.Errorf("%s depends on %s, which docs/architecture.md says it never does", p.path, dep)
				}
			}
		}
	}
}

type pkgInfo struct {
	path          string
	imports, deps []string
}

// listPackages lists this module's packages with their imports and dependencies within
// the module, as paths relative to the module ("internal/config", "cmd/sortie").
func listPackages(t *testing.T) []pkgInfo {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", "sortie/...")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	rel := func(paths []string) []string {
		var r []string
		for _, p := range paths {
			if s, ok := strings.CutPrefix(p, "sortie/"); ok {
				r = append(r, s)
			}
		}
		return r
	}
	var pkgs []pkgInfo
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p struct {
			ImportPath string
			GoFiles    []string
			Imports    []string
			Deps       []string
		}
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("decoding go list: %v", err)
		}
		if len(p.GoFiles) == 0 {
			continue // tests only, as this package
		}
		path, _ := strings.CutPrefix(p.ImportPath, "sortie/")
		pkgs = append(pkgs, pkgInfo{path: path, imports: rel(p.Imports), deps: rel(p.Deps)})
	}
	if len(pkgs) == 0 {
		t.Fatal("go list found no package")
	}
	return pkgs
}

// readLayerTable reads the table under "## Layers": rows "| N | `pkg`, `pkg` | ... |"
// with the layer number first, its packages second and, last, the packages those of
// the row never depend on; the row whose first cell is "test support" lists
// test-only packages.
func readLayerTable(t *testing.T, path string) (layers map[string]int, never map[string][]string, testOnly []string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("the layer table: %v", err)
	}
	defer f.Close()
	layers, never = map[string]int{}, map[string][]string{}
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "## ") {
			in = line == "## Layers"
			continue
		}
		if !in || !strings.HasPrefix(line, "|") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) < 3 {
			continue
		}
		first := strings.TrimSpace(cells[0])
		pkgs := codeSpans(cells[1])
		if first == "test support" {
			testOnly = append(testOnly, pkgs...)
			continue
		}
		n, err := strconv.Atoi(first)
		if err != nil {
			continue // the header and its rule
		}
		bad := codeSpans(cells[len(cells)-1])
		for _, p := range pkgs {
			if l, dup := layers[p]; dup {
				t.Fatalf("docs/architecture.md places %s in layers %d and %d", p, l, n)
			}
			layers[p] = n
			never[p] = bad
		}
	}
	if len(layers) == 0 {
		t.Fatalf("%s has no layer table under \"## Layers\"", path)
	}
	return layers, never, testOnly
}

// codeSpans returns the `quoted` names of a table cell.
func codeSpans(cell string) []string {
	var out []string
	parts := strings.Split(cell, "`")
	for i := 1; i < len(parts); i += 2 {
		if s := strings.TrimSpace(parts[i]); s != "" {
			out = append(out, s)
		}
	}
	return out
}
