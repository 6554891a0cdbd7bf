package orchestrator

import (
	"context"
	"errors"
	"reflect"

	"sortie/internal/agent"
	"sortie/internal/config"
	"sortie/internal/tracker"
)

// Adapters are the tracker and agent adapters built from one configuration. The
// orchestrator works with one set at a time, the set in force, and replaces it when a
// newly applied configuration brings another (Options.Adapters): the loop, its polls
// and everything holding Orchestrator.Tracker use the new tracker at once, while a run
// keeps the set it started with to its end.
type Adapters struct {
	Tracker tracker.Tracker
	Agent   agent.Adapter
	// AgentVersion is the agent CLI's version, recorded with every run ("" if unknown).
	AgentVersion string
}

// Tracker returns the tracker in force. Each call goes to the adapter of the
// configuration applied last, so a component that keeps it (the tracker_api tool
// service) follows hot reloads. It does not implement tracker.Watcher or
// tracker.RateLimiter; ask Adapters for the adapter itself.
func (o *Orchestrator) Tracker() tracker.Tracker { return currentTracker{o} }

// Adapters returns the set in force.
func (o *Orchestrator) Adapters() Adapters { return *o.adapters.Load() }

// applyAdapters asks Options.Adapters for the adapters of cfg, a configuration just
// applied, and puts them in force. Adapters that cannot be built keep the set in force:
// the error is logged and reported like a rejected WORKFLOW.md edit. A new tracker is
// watched instead of the old one and polled at once, so that, say, a new active state
// is seen now and not one polling interval later. It runs on the loop.
func (o *Orchestrator) applyAdapters(ctx context.Context, cfg *config.Config) {
	if o.opts.Adapters == nil {
		return
	}
	next, err := o.opts.Adapters(cfg)
	if err == nil && (next.Tracker == nil || next.Agent == nil) {
		err = errNoAdapters
	}
	if err != nil {
		o.log.Error("the new workflow configuration's adapters could not be built; keeping the ones in force", "error", err)
		if msg := err.Error(); msg != o.lastReloadErr {
			o.lastReloadErr = msg
			o.report(Activity{Kind: ActivityReloadError, Message: msg})
		}
		return
	}
	cur := o.adapters.Load()
	newTracker := !sameAdapter(next.Tracker, cur.Tracker)
	newAgent := !sameAdapter(next.Agent, cur.Agent) || next.AgentVersion != cur.AgentVersion
	if !newTracker && !newAgent {
		return
	}
	o.adapters.Store(&next)
	o.log.Info("the new workflow configuration's adapters are in force; runs in progress keep theirs",
		"tracker_rebuilt", newTracker, "agent_rebuilt", newAgent, "agent_version", next.AgentVersion)
	if newTracker {
		o.watchTracker(ctx)
		o.Refresh()
	}
}

var errNoAdapters = errors.New("orchestrator: Options.Adapters returned no tracker or no agent")

// sameAdapter reports whether a and b are the same adapter. Adapters are pointers; a
// value of any other kind counts as a new adapter rather than risk comparing values
// that cannot be compared.
func sameAdapter(a, b any) bool {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	return va.IsValid() && vb.IsValid() && va.Type() == vb.Type() && va.Kind() == reflect.Pointer &&
		va.Pointer() == vb.Pointer()
}

// watchTracker follows the change notifications of the tracker in force
// (tracker.Watcher), in place of those of the tracker before it. It runs on the loop;
// the goroutine ends with ctx or the next call.
func (o *Orchestrator) watchTracker(ctx context.Context) {
	if o.stopWatch != nil {
		o.stopWatch()
		o.stopWatch = nil
	}
	w, ok := o.adapters.Load().Tracker.(tracker.Watcher)
	if !ok {
		return
	}
	wctx, cancel := context.WithCancel(ctx)
	o.stopWatch = cancel
	o.fetches.Add(1)
	go func() {
		defer o.fetches.Done()
		for range w.Watch(wctx) {
			o.Refresh()
		}
	}()
}

// currentTracker passes every call to the tracker in force. It is Options.Tracker once
// the Orchestrator is built, so the loop's polls, reconciliation, retries and comments
// always reach the tracker of the configuration applied last.
type currentTracker struct{ o *Orchestrator }

func (c currentTracker) get() tracker.Tracker { return c.o.adapters.Load().Tracker }

// Unwrap returns the tracker in force, so that tracker.As finds its optional
// interfaces (linear_graphql's AgentGraphQL, Account) through this indirection.
func (c currentTracker) Unwrap() tracker.Tracker { return c.get() }

// FetchCandidateIssues implements tracker.Tracker.
func (c currentTracker) FetchCandidateIssues(ctx context.Context) ([]tracker.Issue, error) {
	return c.get().FetchCandidateIssues(ctx)
}

// FetchIssueByID implements tracker.Tracker.
func (c currentTracker) FetchIssueByID(ctx context.Context, id string) (tracker.Issue, error) {
	return c.get().FetchIssueByID(ctx, id)
}

// FetchIssueStatesByIDs implements tracker.Tracker.
func (c currentTracker) FetchIssueStatesByIDs(ctx context.Context, ids []string) (map[string]string, error) {
	return c.get().FetchIssueStatesByIDs(ctx, ids)
}

// FetchIssueStatesByIdentifiers implements tracker.Tracker.
func (c currentTracker) FetchIssueStatesByIdentifiers(ctx context.Context, identifiers []string) (map[string]string, error) {
	return c.get().FetchIssueStatesByIdentifiers(ctx, identifiers)
}

// FetchIssueComments implements tracker.Tracker.
func (c currentTracker) FetchIssueComments(ctx context.Context, id string) ([]tracker.Comment, error) {
	return c.get().FetchIssueComments(ctx, id)
}

// TransitionIssue implements tracker.Tracker.
func (c currentTracker) TransitionIssue(ctx context.Context, id, targetState string) error {
	return c.get().TransitionIssue(ctx, id, targetState)
}

// CommentIssue implements tracker.Tracker.
func (c currentTracker) CommentIssue(ctx context.Context, id, text string) error {
	return c.get().CommentIssue(ctx, id, text)
}
