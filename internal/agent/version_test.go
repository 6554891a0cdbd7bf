package agent

import "testing"

func TestVersionOf_AcceptsAVersionLineOnly(t *testing.T) {
	tests := []struct {
		name, out, want string
		ok              bool
	}{
		{"claude", "2.1.330 (Claude Code)\n", "2.1.330 (Claude Code)", true},
		{"copilot with a second line", "GitHub Copilot CLI 1.0.102.\nRun 'copilot update' to check for updates.\n", "GitHub Copilot CLI 1.0.102", true},
		{"bare two-part version", "v1.2\n", "v1.2", true},
		{"pre-release", "tool 3.0.0-beta.1 (linux)\n", "tool 3.0.0-beta.1 (linux)", true},
		{"leading blank lines", "\n\n  2.0.1  \n", "2.0.1", true},
		{"empty", "", "", false},
		{"junk first line", "hello from a fake CLI\n2.1.330 (Claude Code)\n", "", false},
		{"an error that names a version", "Error: Node.js 18.0 is too old\n", "", false},
		{"too many words before the number", "this is not the version 1.2.3\n", "", false},
		{"no dot in the number", "build 42\n", "", false},
		{"control characters", "1.2.3 \x1b[31mred\n", "", false},
		{"too long", "1.2.3 " + string(make([]byte, 200)) + "\n", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := VersionOf([]byte(tt.out))
			if got != tt.want || ok != tt.ok {
				t.Errorf("VersionOf(%q) = %q, %v; want %q, %v", tt.out, got, ok, tt.want, tt.ok)
			}
		})
	}
}
