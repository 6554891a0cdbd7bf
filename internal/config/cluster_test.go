package config

import (
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestCluster_DefaultsWhenAbsent(t *testing.T) {
	cfg, _ := mustLoad(t, minimal, nil)
	if cfg.Cluster.Enabled() || cfg.Cluster.Lease != DefaultClusterLease || cfg.Cluster.MaxConcurrentAgents != 0 {
		t.Errorf("Cluster = %+v, want SQLite with the default lease", cfg.Cluster)
	}
}

func TestCluster_URLFromVariableIsASecret(t *testing.T) {
	cfg, _ := mustLoad(t, minimal+"database_url: $PG_URL\ncluster: {lease_ms: 5000, max_concurrent_agents: 12}\n",
		map[string]string{"PG_URL": "postgres://sortie:hunter2@db.internal:5432/sortie"})
	if cfg.Cluster.DatabaseURL != "postgres://sortie:hunter2@db.internal:5432/sortie" {
		t.Errorf("DatabaseURL = %q", cfg.Cluster.DatabaseURL)
	}
	if cfg.Cluster.Lease != 5*time.Second || cfg.Cluster.MaxConcurrentAgents != 12 {
		t.Errorf("Cluster = %+v", cfg.Cluster)
	}
	if !slices.Contains(cfg.SecretEnv, "PG_URL") {
		t.Errorf("SecretEnv = %v, want PG_URL: agents must not get the database password", cfg.SecretEnv)
	}
	if got := cfg.Cluster.Redacted(); strings.Contains(got, "hunter2") || !strings.Contains(got, "db.internal") {
		t.Errorf("Redacted() = %q", got)
	}
}

func TestCluster_OverrideWins(t *testing.T) {
	cfg, _ := mustLoad(t, minimal+"database_url: postgres://a@h1/x\n",
		map[string]string{"SORTIE_DATABASE_URL": "postgresql://b:pw@h2/y"})
	if cfg.Cluster.DatabaseURL != "postgresql://b:pw@h2/y" {
		t.Errorf("DatabaseURL = %q, want the SORTIE_DATABASE_URL value", cfg.Cluster.DatabaseURL)
	}
}

// A bad URL is reported without its password: problems reach logs and `sortie validate`.
func TestCluster_BadValuesAreErrorsThatHideThePassword(t *testing.T) {
	tests := []struct{ name, fm, want string }{
		{"wrong scheme", "database_url: mysql://u:s3cret@h/db\n", `database_url: must be a postgres:// or postgresql:// URL (got scheme "mysql")`},
		{"no host", "database_url: postgres:///db?password=s3cret\n", "database_url: names no host"},
		{"not a URL", "database_url: \"postgres://u:s3cret@h:port/db\"\n", "database_url: is not a valid URL"},
		{"not a string", "database_url: {password: s3cret}\n", "database_url: must be a string"},
		{"lease too short", "database_url: postgres://h/db\ncluster: {lease_ms: 999}\n", "cluster.lease_ms: must be between 1000 (1 s) and 600000 (10 min) milliseconds (got 999)"},
		{"negative cap", "database_url: postgres://h/db\ncluster: {max_concurrent_agents: -1}\n", "cluster.max_concurrent_agents: must be non-negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, problems, _ := checkFrontMatter(t, minimal+tt.fm, nil)
			text := problemLines(problems)
			if cfg != nil || !strings.Contains(text, tt.want) {
				t.Errorf("problems:\n%s\nwant an error containing %q", text, tt.want)
			}
			if strings.Contains(text, "s3cret") {
				t.Errorf("a problem shows the password:\n%s", text)
			}
		})
	}
}

func TestCluster_SectionWithoutURLIsAWarning(t *testing.T) {
	cfg, _ := mustLoad(t, minimal+"cluster: {lease_ms: 5000}\n", nil)
	if !strings.Contains(problemLines(cfg.Warnings), "applies only with database_url") {
		t.Errorf("warnings:\n%s", problemLines(cfg.Warnings))
	}
}

func TestRedactURL_HidesEveryPassword(t *testing.T) {
	for _, in := range []string{
		"postgres://u:s3cret@h/db",
		"postgres://u@h/db?sslmode=disable&password=s3cret",
		"postgres://u:s3cret@h/db?password=s3cret",
		"postgres://u:s3cret@h:port/db",
	} {
		if got := RedactURL(in); strings.Contains(got, "s3cret") {
			t.Errorf("RedactURL(%q) = %q", in, got)
		}
	}
}

func FuzzRedactURL(f *testing.F) {
	f.Add("postgres://u:pw@h/db?password=pw2")
	f.Add("postgresql://@h")
	f.Add("A://:0000@# 0001")
	f.Fuzz(func(t *testing.T, s string) {
		got := RedactURL(s)
		if got == "(unparseable URL)" {
			return
		}
		u, err := url.Parse(got)
		if err != nil {
			t.Fatalf("RedactURL(%q) = %q, which does not parse: %v", s, got, err)
		}
		if pw, ok := u.User.Password(); ok && pw != "xxxxx" {
			t.Errorf("RedactURL(%q) = %q keeps the password %q", s, got, pw)
		}
		if q := u.Query(); q.Has("password") && q.Get("password") != "xxxxx" {
			t.Errorf("RedactURL(%q) = %q keeps the password parameter", s, got)
		}
	})
}
