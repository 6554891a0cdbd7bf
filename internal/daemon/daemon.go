package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"sortie/internal/agentsock"
	"sortie/internal/agenttools"
	"sortie/internal/config"
	"sortie/internal/metrics"
	"sortie/internal/notify"
	"sortie/internal/orchestrator"
	"sortie/internal/prompt"
	"sortie/internal/server"
)

// Options are what a daemon is built from: cmd/sortie's command line.
type Options struct {
	// WorkflowPath is WORKFLOW.md's absolute path.
	WorkflowPath string
	// EnvFile is --env-file: a .env file of SORTIE_* overrides ("" for none).
	EnvFile string
	// ExitWhenIdle makes Run return once nothing is running, retrying or eligible.
	ExitWhenIdle bool
	// Host is --host, the address the server listens on: "" for server.host.
	Host string
	// Port is --port: -1 for server.port; 0 turns the server off.
	Port int
	// Version is the build's version, logged, served and sent to trackers.
	Version string
	// Logger receives the daemon's log.
	Logger *slog.Logger
	// Stderr receives the one line the daemon prints outside its log: the link that logs
	// a browser in to the dashboard, with a one-time code. nil discards it.
	Stderr io.Writer
}

// Daemon is a daemon built by New, ready to Run.
type Daemon struct {
	opts Options
	log  *slog.Logger
	orch *orchestrator.Orchestrator

	closeOnce sync.Once
	closeErr  error
	closers   []closer // in the order their parts were built
}

// closer stops one part of the daemon.
type closer struct {
	name  string
	close func() error
}

// onClose registers the closer of the part just built.
func (d *Daemon) onClose(name string, close func() error) {
	d.closers = append(d.closers, closer{name, close})
}

// Close closes every part, last built first, once: later calls return what the first
// returned. Run calls it; call it only for a daemon that is not run.
func (d *Daemon) Close() error {
	d.closeOnce.Do(func() {
		var errs []error
		for i := len(d.closers) - 1; i >= 0; i-- {
			if err := d.closers[i].close(); err != nil {
				errs = append(errs, fmt.Errorf("closing the %s: %w", d.closers[i].name, err))
			}
		}
		d.closeErr = errors.Join(errs...)
	})
	return d.closeErr
}

// CheckTemplate reports whether cfg's prompt template parses: a WORKFLOW.md whose
// template does not is refused at start-up and rejected on reload.
func CheckTemplate(cfg *config.Config) error {
	_, err := prompt.ParseEngine(cfg.Path, cfg.Prompt, cfg.PromptLine, prompt.Engine(cfg.PromptEngine))
	return err
}

// New builds a daemon from o.WorkflowPath, in the order doc.go gives. ctx is the
// daemon's life: it bounds the building, the agent CLI's preflights, and the watching
// of WORKFLOW.md; Run is given the same context. On an error, what was built is closed
// again, last built first.
func New(ctx context.Context, o Options) (_ *Daemon, err error) {
	if o.Stderr == nil {
		o.Stderr = io.Discard
	}
	d := &Daemon{opts: o, log: o.Logger}
	defer func() {
		if err != nil {
			err = errors.Join(err, d.Close())
		}
	}()
	logger, path := o.Logger, o.WorkflowPath
	opts := config.Options{EnvFile: o.EnvFile}

	// Every WORKFLOW.md the watcher applies has its adapters built first (adapters.go):
	// one whose tracker or agent cannot be built is rejected like a bad template.
	adapters := &adapterSet{ctx: ctx, log: logger, version: o.Version}
	watcher, err := config.NewWatcher(path, opts, func(c *config.Config) error {
		if err := CheckTemplate(c); err != nil {
			return err
		}
		return adapters.validate(c)
	}, logger)
	if err != nil {
		return nil, err
	}
	cfg := watcher.Current()

	mets := metrics.New(o.Version)
	hub := server.NewHub()
	adapters.mets = mets
	mets.SetRateLimits(adapters.rateLimits)
	st, dbShown, err := openDaemonStore(ctx, cfg)
	if err != nil {
		return nil, err
	}
	d.onClose("store", st.Close)
	clu, err := joinCluster(ctx, cfg, logger)
	if err != nil {
		return nil, err
	}
	var orchCluster orchestrator.Cluster
	if clu != nil {
		d.onClose("cluster membership", func() error { clu.Close(); return nil })
		orchCluster = clu
		// One daemon at a time polls the tracker; the others read what it found.
		adapters.cluster = clu
		adapters.interval = func() time.Duration { return watcher.Current().Polling.Interval }
	}
	initial, err := adapters.startUp(cfg)
	if err != nil {
		return nil, err
	}
	notifier, err := notify.Parse(cfg.Extensions["notifications"], os.LookupEnv)
	if err != nil {
		return nil, err
	}
	activity := func(a orchestrator.Activity) {
		mets.Observe(a)
		hub.Publish(a)
	}
	wf, err := startWorkflows(ctx, cfg, watcher.Current, st, dashboardURL(cfg, o.Host, o.Port), activity, o.Version, logger)
	if err != nil {
		return nil, err
	}
	if wf != nil {
		// After the loop has stopped, so that no auto-advance answers into its store.
		d.onClose("checkpoint desk", func() error { wf.desk.Close(); return nil })
	}
	toolOpts := agentToolOptions(watcher.Current, st, notifier, wf, mets.NotifyRateLimited)
	sockBase := cfg.DBPath
	if clu != nil {
		// Daemons of a cluster may share a WORKFLOW.md directory, and so a db_path:
		// each has a socket of its own.
		sockBase += "-" + strconv.Itoa(os.Getpid())
	}
	// The socket grants the orchestrator's tokens from now on; the tool service, which
	// needs the orchestrator, serves it once both exist, before any session starts.
	// What it will serve is known now: the start-up tracker is of the kind it will have.
	capOpts := toolOpts
	capOpts.Tracker = initial.Tracker
	ext, sock, err := startAgentTools(sockBase, func() agentsock.Capabilities { return agenttools.Capabilities(capOpts) })
	if err != nil {
		return nil, err
	}
	d.onClose("agent socket", sock.Close)

	watchCtx, stopWatching := context.WithCancel(ctx)
	if err := watcher.Start(watchCtx); err != nil {
		stopWatching()
		return nil, fmt.Errorf("watching %s: %v", path, err)
	}
	d.onClose("WORKFLOW.md watcher", func() error { stopWatching(); watcher.Wait(); return nil })
	confine, err := agentSandbox(cfg, path, o.EnvFile, logger)
	if err != nil {
		return nil, err
	}
	cgroups := runCgroups(cfg, logger)
	if cgroups != nil {
		d.onClose("cgroups", func() error { cgroups.Close(); return nil })
	}
	runAs, err := agentRunAs(cfg, path, ext.Executable, sock, confine.Hide, logger)
	if err != nil {
		return nil, err
	}
	warnSocketReach(cfg, confine, runAs, logger)
	react, stopReactions, err := startReactions(ctx, watcher.Current, st, adapters, notifier, mets, o.Version, logger)
	if err != nil {
		return nil, fmt.Errorf("loading the watched pull requests: %w", err)
	}
	d.onClose("pull-request watcher", func() error { stopReactions(); return nil })
	orch, err := orchestrator.New(orchestrator.Options{
		Sandbox:       confine,
		RunAs:         runAs,
		StopRemote:    remoteStopper(watcher.Current),
		Cgroups:       cgroups,
		Config:        watcher.Current,
		Reload:        watcher.Reload,
		ConfigChanges: watcher.Changes(),
		ConfigError:   configError(watcher.LastError, wf),
		Tracker:       initial.Tracker,
		Agent:         initial.Agent,
		AgentVersion:  initial.AgentVersion,
		Adapters:      adapters.current,
		Store:         st,
		Cluster:       orchCluster,
		Logger:        logger,
		Environ:       os.Environ(),
		ExitWhenIdle:  o.ExitWhenIdle,
		Extensions:    ext,
		Alert:         alerter(notifier),
		Checkpoints:   wf.checkpoints(),
		Activity:      activity,
		Reactions:     orchReactions{react},
	})
	if err != nil {
		return nil, err
	}
	d.orch = orch
	mets.ReadSessions(orch.Snapshot)
	serveAgentTools(sock, orch, toolOpts)
	logger.Info("sortie started", "version", o.Version, "workflow", path, "tracker", cfg.Tracker.Kind,
		"agent", cfg.Agent.Kind, "agent_version", initial.AgentVersion, "db", dbShown, "pid", os.Getpid(),
		"agent_socket", sock.Path(), "notification_backends", strings.Join(notifier.Backends(), ","))
	stopServer, err := d.startServer(ctx, watcher.Current, orch, wf.answerer(), st, hub, mets, adapters.rateLimits, react.Views)
	if err != nil {
		return nil, err
	}
	d.onClose("HTTP server", func() error { stopServer(); return nil })
	if clu != nil {
		// The others' changes (a new poll, a freed slot, a lifted hold) refresh at once.
		lctx, stopListen := context.WithCancel(ctx)
		listening := make(chan struct{})
		go func() {
			defer close(listening)
			clu.Listen(lctx, func(string) { orch.Refresh() })
		}()
		d.onClose("cluster listener", func() error { stopListen(); <-listening; return nil })
	}
	return d, nil
}

// Snapshot is the orchestrator's view of the work: running, retrying and held issues.
func (d *Daemon) Snapshot(ctx context.Context) (orchestrator.Snapshot, error) {
	return d.orch.Snapshot(ctx)
}

// Run runs the orchestrator until ctx ends, which drains the runs in flight, or, with
// ExitWhenIdle, until there is nothing to do; then it closes every part, last built
// first. Its error is the orchestrator's, joined with the closers'.
func (d *Daemon) Run(ctx context.Context) error {
	err := d.orch.Run(ctx)
	if err == nil && ctx.Err() != nil {
		d.log.Info("shut down gracefully")
	}
	return errors.Join(err, d.Close())
}
