package main

import (
	"embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

//go:embed assets
var assets embed.FS

func cmdInit(args []string, stdout, stderr io.Writer) int {
	fset := flag.NewFlagSet("init", flag.ContinueOnError)
	fset.SetOutput(stderr)
	if err := fset.Parse(args); err != nil {
		return parseErrorCode(err)
	}
	if fset.NArg() > 1 {
		fmt.Fprintln(stderr, "sortie init: at most one directory")
		return exitUsage
	}
	dir := "."
	if fset.NArg() == 1 {
		dir = fset.Arg(0)
	}
	written, err := writeAssets("assets/init", dir)
	if err != nil {
		fmt.Fprintf(stderr, "sortie init: %v\n", err)
		return exitFailure
	}
	for _, p := range written {
		fmt.Fprintf(stdout, "wrote %s\n", p)
	}
	fmt.Fprintf(stdout, "next: sortie validate %s && sortie --exit-when-idle %s\n",
		filepath.Join(dir, "WORKFLOW.md"), filepath.Join(dir, "WORKFLOW.md"))
	return exitOK
}

// writeAssets copies the embedded files under src into dir, creating dir. It refuses
// to overwrite any existing file, and writes nothing when one exists.
func writeAssets(src, dir string) ([]string, error) {
	entries, err := fs.ReadDir(assets, src)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if _, err := os.Lstat(p); err == nil {
			return nil, fmt.Errorf("%s already exists; choose another directory or move it away", p)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var written []string
	for _, e := range entries {
		data, err := assets.ReadFile(src + "/" + e.Name())
		if err != nil {
			return nil, err
		}
		p := filepath.Join(dir, e.Name())
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return written, err
		}
		written = append(written, p)
	}
	return written, nil
}
