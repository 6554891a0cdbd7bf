//go:build !linux

package workspace

// linkFreeDir reports false: without openat2, filepath.EvalSymlinks decides.
func linkFreeDir(string) bool { return false }
