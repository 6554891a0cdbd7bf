package platform

import (
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestWindowsBuildSaysWhy: a build for Windows stops with one error naming the supported
// systems, and the packages that need POSIX process control all import this guard.
func TestWindowsBuildSaysWhy(t *testing.T) {
	if !slices.Contains(Supported, runtime.GOOS) {
		t.Fatalf("this test runs on %s, which Supported (%v) does not list", runtime.GOOS, Supported)
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("skipped: no go command on PATH to cross-compile with: %v", err)
	}
	build := exec.Command(gobin, "build", "-o", os.DevNull, ".")
	build.Env = append(os.Environ(), "GOOS=windows", "GOARCH=amd64")
	out, err := build.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "Sortie_runs_on_Linux_and_macOS_only") {
		t.Fatalf("GOOS=windows go build: err %v, output %s; want the Linux-and-macOS-only error", err, out)
	}
	for _, pkg := range []string{"../agent/proc", "../workspace", "../mcp/tools", "../../cmd/sortie"} {
		list := exec.Command(gobin, "list", "-deps", pkg)
		list.Env = append(os.Environ(), "GOOS=windows", "GOARCH=amd64")
		out, err := list.Output()
		if err != nil {
			t.Fatalf("GOOS=windows go list -deps %s: %v", pkg, err)
		}
		if !slices.Contains(strings.Fields(string(out)), "sortie/internal/platform") {
			t.Errorf("%s does not import sortie/internal/platform: a Windows build of it fails without saying why", pkg)
		}
	}
}
