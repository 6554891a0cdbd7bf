package daemon

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"sortie/internal/config"
	"sortie/internal/metrics"
	"sortie/internal/notify"
	"sortie/internal/orchestrator"
	"sortie/internal/reactions"
	"sortie/internal/store"
	"sortie/internal/tracker"
	"sortie/internal/tracker/github"
)

// codeHosts gives the reactions watcher the GitHub client of the configuration in
// force: the tracker's own when tracker.kind is github (one rate budget and ETag cache
// for both), else one built from the `github:` block and kept while that is unchanged.
type codeHosts struct {
	adapters *adapterSet
	current  func() *config.Config
	version  string
	log      *slog.Logger

	mu    sync.Mutex
	built config.CodeHost
	host  *github.Tracker
}

func (c *codeHosts) get() (reactions.CodeHost, string) {
	cfg := c.current()
	if !cfg.Reactions.Enabled() {
		return nil, ""
	}
	gh := cfg.Reactions.GitHub
	if cfg.Tracker.Kind == "github" {
		c.adapters.mu.Lock()
		raw := c.adapters.raw
		c.adapters.mu.Unlock()
		if t, ok := tracker.As[*github.Tracker](raw); ok {
			return t, gh.Project
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.host != nil && c.built == gh {
		return c.host, gh.Project
	}
	t, err := github.New(tracker.Config{Project: gh.Project, APIKey: gh.APIKey, Endpoint: gh.Endpoint, UserAgent: "sortie/" + c.version})
	if err != nil {
		c.log.Error("the code host for reactions cannot be built; fix the github: block", "error", err)
		c.host, c.built = nil, config.CodeHost{}
		return nil, ""
	}
	c.host, c.built = t.(*github.Tracker), gh
	return c.host, gh.Project
}

// startReactions builds the watcher of handed-off issues' pull requests and runs it
// until ctx ends. It runs whatever the configuration says (a reload may turn
// reactions on); it checks nothing while they are off.
func startReactions(ctx context.Context, current func() *config.Config, st store.Store, adapters *adapterSet,
	notifier *notify.Notifier, mets *metrics.Metrics, version string, log *slog.Logger) (*reactions.Watcher, func(), error) {
	hosts := &codeHosts{adapters: adapters, current: current, version: version, log: log}
	w := reactions.New(reactions.Options{
		Config: current,
		Host:   hosts.get,
		Tracker: func() tracker.Tracker {
			a, _ := adapters.current(nil)
			return a.Tracker
		},
		Store:  st,
		Logger: log.With("part", "reactions"),
		Report: mets.Reaction,
		Alert: func(issueID, identifier, title, message string) {
			if !notifier.Enabled() {
				return
			}
			go func() {
				sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				if err := notifier.Send(sctx, notify.Notification{Event: notify.EventRetriesExhausted, Severity: "warning",
					Title: title, Message: message, IssueID: issueID, IssueIdentifier: identifier, Time: time.Now()}); err != nil {
					log.Warn("sending the escalation alert failed", "issue_identifier", identifier, "error", err)
				}
			}()
		},
	})
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	err := w.Recover(rctx)
	cancel()
	if err != nil {
		return nil, nil, err
	}
	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.Run(runCtx)
	}()
	return w, func() { stop(); <-done }, nil
}

// orchReactions is the watcher as the orchestrator's Reactions.
type orchReactions struct{ w *reactions.Watcher }

func (r orchReactions) Watch(h orchestrator.HandOff) {
	if h.Host != "" {
		// The workspace is on an SSH host: the daemon cannot read its branch, and a
		// reaction run could land on another host (docs/reactions.md#limits).
		r.w.SkipRemote(h.Identifier, h.Host)
		return
	}
	r.w.Watch(store.ReactionWatch{IssueID: h.IssueID, Identifier: h.Identifier, Workspace: h.Workspace, SessionID: h.SessionID})
}

func (r orchReactions) Forget(issueID string, terminal bool) { r.w.Forget(issueID, terminal) }

func (r orchReactions) Due() <-chan struct{} { return r.w.Due() }

func (r orchReactions) Next() (orchestrator.Reaction, bool) {
	d, ok := r.w.Next()
	if !ok {
		return orchestrator.Reaction{}, false
	}
	return orchestrator.Reaction(d), true
}

func (r orchReactions) Dispatched(ctx context.Context, x orchestrator.Reaction) bool {
	return r.w.Dispatched(ctx, reactions.Due(x))
}

func (r orchReactions) Deferred(x orchestrator.Reaction, why string) {
	r.w.Deferred(reactions.Due(x), why)
}

func (r orchReactions) Ended(x orchestrator.Reaction, started bool) {
	r.w.Ended(reactions.Due(x), started)
}
