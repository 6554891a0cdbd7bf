package claude

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// With agent.run_as the daemon is root and ~/.claude/.credentials.json is the agent
// user's to plant: a link (symbolic or hard) to a file the agent must not read, or a
// file of another user's, is never copied into the configuration directory,
// which the agent reads.
func TestResetConfigDir_RefusesALoginThatIsNotTheAgentsOwnFile(t *testing.T) {
	cases := map[string]func(t *testing.T, secret, login string){
		"symlink": func(t *testing.T, secret, login string) {
			if err := os.Symlink(secret, login); err != nil {
				t.Fatal(err)
			}
		},
		"hard link": func(t *testing.T, secret, login string) {
			if err := os.Link(secret, login); err != nil {
				t.Skip("no hard link:", err)
			}
		},
		"another user's file": func(t *testing.T, secret, login string) {
			if os.Geteuid() != 0 {
				t.Skip("needs root to give a file away")
			}
			if err := os.WriteFile(login, []byte("root:SECRET-HASH:19000::::::\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(login, 54321, 54321); err != nil {
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
				// The agent's user cannot link to a file it cannot read
				// (fs.protected_hardlinks), but to one it owns elsewhere.
				_ = os.Chown(secret, 54321, 54321)
			}
			home := t.TempDir()
			login := filepath.Join(home, ".claude", credentialsFile)
			if err := os.MkdirAll(filepath.Dir(login), 0o700); err != nil {
				t.Fatal(err)
			}
			plant(t, secret, login)
			dir := filepath.Join(t.TempDir(), "cfg")
			err := resetConfigDir(dir, nil, login)
			if err == nil {
				t.Errorf("resetConfigDir copied %s (%s) without an error", login, name)
			} else if !strings.Contains(err.Error(), login) {
				t.Errorf("error %q does not name %s", err, login)
			}
			if b, err := os.ReadFile(filepath.Join(dir, credentialsFile)); err == nil || strings.Contains(string(b), "SECRET") {
				t.Errorf("the configuration directory holds a copy: %q", b)
			}
		})
	}
}
