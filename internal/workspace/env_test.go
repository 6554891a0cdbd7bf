package workspace

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestRunHook_EnvironmentIsAllowListOnly(t *testing.T) {
	base := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=/home/sortie",
		"LANG=C.UTF-8",
		"TZ=UTC",
		"SSH_AUTH_SOCK=/tmp/agent.sock",
		"SORTIE_JIRA_API_KEY=super-secret-jira",
		"GITHUB_TOKEN=ghp_secret",
		"AWS_SECRET_ACCESS_KEY=aws-secret",
		"REPO_URL=https://example.com/repo.git",
		"malformed-entry",
	}
	m := newManager(t, Config{
		BaseEnv: base,
		PassEnv: []string{"REPO_URL", "GITHUB_TOKEN"},
		// A dropped name loses even against the allow-list, PassEnv and extraEnv.
		DropEnv: []string{"SSH_AUTH_SOCK", "GITHUB_TOKEN", "EXTRA_SECRET"},
	})
	ws, err := m.Prepare(t.Context(), testIssue, 0)
	if err != nil {
		t.Fatal(err)
	}
	extra := map[string]string{
		"SORTIE_SELF_REVIEW_STATUS": "passed",
		"EXTRA_SECRET":              "dropped",
		"SORTIE_WORKSPACE":          "/tmp/spoofed",
	}
	ws.Attempt = 2
	if err := m.RunHook(t.Context(), HookBeforeRun, "env > env.out", ws, testIssue, extra); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(ws.Path, "env.out"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for line := range strings.Lines(string(raw)) {
		if k, v, ok := strings.Cut(strings.TrimSuffix(line, "\n"), "="); ok {
			got[k] = v
		}
	}
	want := map[string]string{
		"PATH":                      os.Getenv("PATH"),
		"HOME":                      "/home/sortie",
		"LANG":                      "C.UTF-8",
		"TZ":                        "UTC",
		"REPO_URL":                  "https://example.com/repo.git",
		"SORTIE_ISSUE_ID":           "10001",
		"SORTIE_ISSUE_IDENTIFIER":   "PROJ-1",
		"SORTIE_WORKSPACE":          ws.Path,
		"SORTIE_ATTEMPT":            "2",
		"SORTIE_SELF_REVIEW_STATUS": "passed",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("hook saw %s=%q, want %q", k, got[k], v)
		}
	}
	// The shell adds a few variables of its own; nothing else may appear.
	shellOwn := []string{"PWD", "OLDPWD", "SHLVL", "_"}
	for k := range got {
		if _, ok := want[k]; !ok && !slices.Contains(shellOwn, k) {
			t.Errorf("hook saw %s, which is not on the allow-list", k)
		}
	}
	if strings.Contains(string(raw), "secret") {
		t.Errorf("a secret value reached the hook:\n%s", raw)
	}
}

// The variables that lead to the daemon's private state never reach a hook, even when
// a caller passes them on.
func TestHookEnv_NeverTheDaemonsPrivateState(t *testing.T) {
	base := []string{"HOME=/h", "SORTIE_DB_PATH=/srv/sortie.db", "SORTIE_ENV_FILE=/srv/.env",
		"SORTIE_SERVER_AUTH_TOKEN=operator-secret", "SORTIE_POLLING_INTERVAL_MS=5000"}
	m := newManager(t, Config{BaseEnv: base,
		PassEnv: []string{"SORTIE_DB_PATH", "SORTIE_ENV_FILE", "SORTIE_SERVER_AUTH_TOKEN", "SORTIE_POLLING_INTERVAL_MS"}})
	extra := map[string]string{"SORTIE_DB_PATH": "/x.db", "SORTIE_SERVER_AUTH_TOKEN": "x", "SORTIE_SSH_HOST": "build-1"}
	env := m.HookEnv(Workspace{Path: "/w/PROJ-1", Attempt: 1}, testIssue, extra)
	want := []string{"HOME=/h", "SORTIE_POLLING_INTERVAL_MS=5000", "SORTIE_SSH_HOST=build-1", "SORTIE_ISSUE_ID=10001",
		"SORTIE_ISSUE_IDENTIFIER=PROJ-1", "SORTIE_WORKSPACE=/w/PROJ-1", "SORTIE_ATTEMPT=1"}
	if !slices.Equal(env, want) {
		t.Fatalf("HookEnv = %q\nwant %q", env, want)
	}
	for _, name := range []string{"SORTIE_DB_PATH", "SORTIE_ENV_FILE", "SORTIE_SERVER_AUTH_TOKEN"} {
		if !DaemonPrivate(name) {
			t.Errorf("DaemonPrivate(%s) = false", name)
		}
	}
	if DaemonPrivate("SORTIE_POLLING_INTERVAL_MS") {
		t.Error("DaemonPrivate(SORTIE_POLLING_INTERVAL_MS) = true, want an operator override to be passable")
	}
}

func TestHookEnv_SessionVariables(t *testing.T) {
	m := newManager(t, Config{BaseEnv: []string{"HOME=/h", "SECRET=x"}})
	env := m.HookEnv(Workspace{Path: "/w/PROJ-1", Attempt: 3}, testIssue, map[string]string{"SORTIE_SSH_HOST": "build-1"})
	want := []string{"HOME=/h", "SORTIE_SSH_HOST=build-1", "SORTIE_ISSUE_ID=10001",
		"SORTIE_ISSUE_IDENTIFIER=PROJ-1", "SORTIE_WORKSPACE=/w/PROJ-1", "SORTIE_ATTEMPT=3"}
	if !slices.Equal(env, want) {
		t.Fatalf("HookEnv = %q, want %q", env, want)
	}
	// before_remove belongs to no run, so it gets no SORTIE_ATTEMPT.
	if env := m.hookEnv("/w/PROJ-1", testIssue, -1, nil); slices.ContainsFunc(env, func(kv string) bool {
		return strings.HasPrefix(kv, "SORTIE_ATTEMPT=")
	}) {
		t.Fatalf("hookEnv(attempt -1) = %q, want no SORTIE_ATTEMPT", env)
	}
}

func TestFilterEnv(t *testing.T) {
	base := []string{"A=1", "B=2", "C=3", "=4", "D", "A=5"}
	allowAC := func(n string) bool { return n == "A" || n == "C" }
	tests := []struct {
		name  string
		allow func(string) bool
		drop  []string
		want  []string
	}{
		{"allow some", allowAC, nil, []string{"A=1", "C=3", "A=5"}},
		{"drop wins", allowAC, []string{"C"}, []string{"A=1", "A=5"}},
		{"nil allow accepts nothing", nil, nil, []string{}},
		{"allow all", func(string) bool { return true }, []string{"B"}, []string{"A=1", "C=3", "A=5"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FilterEnv(base, tt.allow, tt.drop); !slices.Equal(got, tt.want) {
				t.Fatalf("FilterEnv = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestBaseEnvAllowed(t *testing.T) {
	for _, n := range []string{"PATH", "HOME", "SSH_AUTH_SOCK", "LC_CTYPE", "TZ"} {
		if !BaseEnvAllowed(n) {
			t.Errorf("BaseEnvAllowed(%q) = false, want true", n)
		}
	}
	for _, n := range []string{"GITHUB_TOKEN", "SORTIE_TRACKER_API_KEY", "path", "ANTHROPIC_API_KEY"} {
		if BaseEnvAllowed(n) {
			t.Errorf("BaseEnvAllowed(%q) = true, want false", n)
		}
	}
}
