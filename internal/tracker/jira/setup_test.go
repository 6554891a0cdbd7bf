package jira

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"sortie/internal/testkit/fakejira"
	"sortie/internal/tracker"
)

// The keys the fake accepts, under the names the tests use.
const (
	cloudKey = fakejira.CloudKey
	dcKey    = fakejira.DataCenterKey
)

// referenceDir holds sortie 1.9's Jira response bodies, third-party data beside the
// repository (/work/shared/testdata/README.md): read in place when present, as in CI,
// never copied. The package's own bodies, written in the shapes of Jira Cloud's REST
// API v3, are in testdata/.
const referenceDir = "../../../../shared/testdata/sortie-1.9/internal/tracker/jira/testdata"

// fixture reads one of the package's own response bodies from testdata/.
func fixture(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// referenceFixture reads one reference body, skipping the test, and saying what was
// skipped, when the shared data is not beside the repository.
func referenceFixture(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(referenceDir, name))
	if err != nil {
		t.Skipf("skipped: ../shared/testdata/sortie-1.9/internal/tracker/jira/testdata/%s not present (third-party sortie 1.9 compatibility data, run in CI)", name)
	}
	return data
}

// newFake starts a fake Jira: Cloud, or Data Center when cloud is false.
func newFake(t testing.TB, cloud bool, opts ...fakejira.Option) *fakejira.Server {
	api := fakejira.DataCenter
	if cloud {
		api = fakejira.Cloud
	}
	return fakejira.New(t, api, opts...)
}

// newFakeTracker builds a tracker through the registry path (New's checks) against f.
func newFakeTracker(t testing.TB, f *fakejira.Server, cloud bool, now func() time.Time, mut ...func(*tracker.Config)) *Tracker {
	t.Helper()
	cfg := tracker.Config{Kind: "jira", Endpoint: f.URL() + "/", APIKey: cloudKey, Project: "PROJ",
		ActiveStates: []string{"To Do", "In Progress"}, UserAgent: "sortie/test", Options: map[string]any{}}
	if !cloud {
		cfg.APIKey = dcKey
		cfg.Options["api"] = "datacenter"
	}
	for _, m := range mut {
		m(&cfg)
	}
	if now == nil {
		now = func() time.Time { return time.Date(2026, 4, 1, 12, 0, 0, 0, time.UTC) }
	}
	tr, err := newTracker(cfg, now, nil)
	if err != nil {
		t.Fatalf("newTracker: %v", err)
	}
	return tr
}
