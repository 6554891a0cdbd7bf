package agenttest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// plantedSecret stands in for /etc/shadow: what a login planted by the agent's user
// must never carry into the state directory.
const plantedSecret = "root:SECRET-HASH:19000::::::\n"

// RefusesPlantedLogin checks an adapter's copy of its CLI's login into an issue's
// state directory against the ways the agent's user could plant that file (under
// agent.run_as the daemon is root, and the login lies in the agent user's home): a
// symbolic or hard link to a file the agent must not read, or a file of another user's.
// login is where the CLI keeps its login in home; copyLogin copies it and returns where
// the copy would be. Each must fail naming the login, and leave no copy.
func RefusesPlantedLogin(t *testing.T, login func(home string) string, copyLogin func(home string) (copy string, err error)) {
	t.Helper()
	for name, plant := range plantings {
		t.Run(name, func(t *testing.T) {
			secret := filepath.Join(t.TempDir(), "shadow")
			if err := os.WriteFile(secret, []byte(plantedSecret), 0o600); err != nil {
				t.Fatal(err)
			}
			home := t.TempDir()
			path := login(home)
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				t.Fatal(err)
			}
			plant(t, secret, path)
			copied, err := copyLogin(home)
			if err == nil {
				t.Errorf("%s (%s) was copied without an error", path, name)
			} else if !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not name %s", err, path)
			}
			if b, err := os.ReadFile(copied); err == nil || strings.Contains(string(b), "SECRET") {
				t.Errorf("the issue's state directory holds a copy: %q", b)
			}
		})
	}
}

// plantings are the ways the agent's user could plant its CLI's login at login: each
// makes it reach secret, a file the agent must not read, or a file not the agent's own.
var plantings = map[string]func(t *testing.T, secret, login string){
	"symlink": func(t *testing.T, secret, login string) {
		if err := os.Symlink(secret, login); err != nil {
			t.Fatal(err)
		}
	},
	"hard link": func(t *testing.T, secret, login string) {
		if os.Geteuid() == 0 {
			// The agent's user cannot link to a file it cannot read
			// (fs.protected_hardlinks), but to one it owns elsewhere.
			_ = os.Chown(secret, 54321, 54321)
		}
		if err := os.Link(secret, login); err != nil {
			t.Skip("no hard link:", err)
		}
	},
	"another user's file": func(t *testing.T, _, login string) {
		if os.Geteuid() != 0 {
			t.Skip("needs root to give a file away")
		}
		if err := os.WriteFile(login, []byte(plantedSecret), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(login, 54321, 54321); err != nil {
			t.Fatal(err)
		}
	},
}
