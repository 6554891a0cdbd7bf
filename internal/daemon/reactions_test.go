package daemon

import (
	"io"
	"log/slog"
	"testing"

	"sortie/internal/config"
	"sortie/internal/tracker"
	"sortie/internal/tracker/github"
)

// With a tracker that is not GitHub, reactions reach the github: block's repository
// with its token, through one client kept while the block is unchanged; with reactions
// off there is no code host.
func TestCodeHosts_TheGitHubBlockForAnotherTracker(t *testing.T) {
	cfg := &config.Config{}
	cfg.Tracker.Kind = "file"
	current := func() *config.Config { return cfg }
	c := &codeHosts{adapters: &adapterSet{}, current: current, version: "test", log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if h, repo := c.get(); h != nil || repo != "" {
		t.Fatalf("reactions off: host %v, repo %q; want none", h, repo)
	}
	cfg.Reactions = config.ReactionsConfig{CI: &config.CIReaction{},
		GitHub: config.CodeHost{Project: "acme/app", APIKey: "ghp_x", Endpoint: "http://127.0.0.1:1"}}
	h1, repo := c.get()
	if h1 == nil || repo != "acme/app" {
		t.Fatalf("host %v, repo %q; want a client for acme/app", h1, repo)
	}
	if h2, _ := c.get(); h2 != h1 {
		t.Fatal("a second call built another client for the same block")
	}
	next := *cfg
	next.Reactions.GitHub.Project = "acme/other"
	cfg = &next
	if h3, repo := c.get(); h3 == h1 || repo != "acme/other" {
		t.Fatalf("a changed block kept the old client (repo %q)", repo)
	}
	bad := *cfg
	bad.Reactions.GitHub.APIKey = "two words"
	cfg = &bad
	if h, _ := c.get(); h != nil {
		t.Fatal("a token with whitespace built a client")
	}
}

// With the GitHub tracker, reactions use the tracker itself: one rate budget, one
// ETag cache.
func TestCodeHosts_TheTrackerItselfWhenItIsGitHub(t *testing.T) {
	trk, err := github.New(tracker.Config{Project: "acme/app", APIKey: "ghp_x", Endpoint: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{}
	cfg.Tracker.Kind = "github"
	cfg.Reactions = config.ReactionsConfig{Review: &config.ReviewReaction{}, GitHub: config.CodeHost{Project: "acme/app"}}
	c := &codeHosts{adapters: &adapterSet{raw: trk}, current: func() *config.Config { return cfg }, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	h, repo := c.get()
	if h != trk.(*github.Tracker) || repo != "acme/app" {
		t.Fatalf("host %v, repo %q; want the tracker itself", h, repo)
	}
}
