package opencode

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// With agent.run_as the daemon is root and ~/.local/share/opencode/auth.json is the
// agent user's to plant: a link (symbolic or hard) to a file the agent must not read,
// or a file of another user's, is never copied into the data directory, which
// the agent reads. OpenCode's credentials are copied every turn, with no use_login.
func TestPrepareState_RefusesCredentialsThatAreNotTheAgentsOwnFile(t *testing.T) {
	cases := map[string]func(t *testing.T, secret, auth string){
		"symlink": func(t *testing.T, secret, auth string) {
			if err := os.Symlink(secret, auth); err != nil {
				t.Fatal(err)
			}
		},
		"hard link": func(t *testing.T, secret, auth string) {
			if err := os.Link(secret, auth); err != nil {
				t.Skip("no hard link:", err)
			}
		},
		"another user's file": func(t *testing.T, secret, auth string) {
			if os.Geteuid() != 0 {
				t.Skip("needs root to give a file away")
			}
			if err := os.WriteFile(auth, []byte("root:SECRET-HASH:19000::::::\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(auth, 54321, 54321); err != nil {
				t.Fatal(err)
			}
		},
	}
	for name, plant := range cases {
		t.Run(name, func(t *testing.T) {
			secret := filepath.Join(t.TempDir(), "shadow") // stands in for /etc/shadow
			if err := os.WriteFile(secret, []byte("root:SECRET-HASH:19000::::::\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if name == "hard link" && os.Geteuid() == 0 {
				_ = os.Chown(secret, 54321, 54321)
			}
			home := t.TempDir()
			auth := filepath.Join(home, ".local", "share", "opencode", "auth.json")
			if err := os.MkdirAll(filepath.Dir(auth), 0o700); err != nil {
				t.Fatal(err)
			}
			plant(t, secret, auth)
			dir := filepath.Join(t.TempDir(), "issues", "x")
			_, err := prepareState(dir, []string{"HOME=" + home}, nil)
			if err == nil {
				t.Errorf("prepareState copied %s (%s) without an error", auth, name)
			} else if !strings.Contains(err.Error(), auth) {
				t.Errorf("error %q does not name %s", err, auth)
			}
			if b, err := os.ReadFile(filepath.Join(dir, "data", "opencode", "auth.json")); err == nil || strings.Contains(string(b), "SECRET") {
				t.Errorf("the data directory holds a copy: %q", b)
			}
		})
	}
}
