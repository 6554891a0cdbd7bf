package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"sortie/internal/agent"
	"sortie/internal/agent/cgroup"
	"sortie/internal/agent/proc"
	"sortie/internal/agent/remote"
	"sortie/internal/agent/supervise"
	"sortie/internal/agentsock"
	"sortie/internal/agenttools"
	"sortie/internal/config"
	"sortie/internal/mcp"
	"sortie/internal/metrics"
	"sortie/internal/notify"
	"sortie/internal/orchestrator"
	"sortie/internal/prompt"
	"sortie/internal/runas"
	"sortie/internal/server"
	"sortie/internal/server/dashboard"
	"sortie/internal/tracker"
	"sortie/internal/workflow/checkpoint"
	"sortie/internal/workspace"
)

// runFlags are the daemon's command-line flags.
type runFlags struct {
	dryRun       bool
	exitWhenIdle bool
	envFile      string
	logLevel     string
	logFormat    string
	port         int    // -1: server.port
	host         string // "": server.host
	cpuProfile   string // --cpuprofile: a CPU profile of the daemon's whole life
	memProfile   string // --memprofile: a heap profile at exit
	trace        string // --trace: an execution trace of the daemon's whole life
}

func (f *runFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&f.dryRun, "dry-run", false, "poll once and print what would be dispatched")
	fs.BoolVar(&f.exitWhenIdle, "exit-when-idle", false, "exit once nothing is running, retrying or eligible")
	fs.StringVar(&f.envFile, "env-file", "", "read SORTIE_* overrides from this .env file")
	fs.StringVar(&f.logLevel, "log-level", "", "debug, info, warn or error")
	fs.StringVar(&f.logFormat, "log-format", "", "text or json")
	fs.IntVar(&f.port, "port", -1, "serve the dashboard, API and metrics on this port (0: off)")
	fs.StringVar(&f.host, "host", "", "listen on this IP address")
	fs.StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile of the daemon to this file (go tool pprof)")
	fs.StringVar(&f.memProfile, "memprofile", "", "write a heap profile to this file when the daemon exits (go tool pprof)")
	fs.StringVar(&f.trace, "trace", "", "write an execution trace of the daemon to this file (go tool trace)")
}

func cmdRun(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sortie", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usageText) }
	var f runFlags
	f.register(fs)
	if err := fs.Parse(args); err != nil {
		return parseErrorCode(err)
	}
	if fs.NArg() > 1 {
		fmt.Fprintf(stderr, "sortie: too many arguments: %s\n", strings.Join(fs.Args(), " "))
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	stopProfiles, err := startProfiles(f)
	if err != nil {
		fmt.Fprintf(stderr, "sortie: %v\n", err)
		return exitFailure
	}
	code := runDaemon(ctx, workflowPath(fs.Args()), f, stdout, stderr)
	if err := stopProfiles(); err != nil {
		fmt.Fprintf(stderr, "sortie: %v\n", err)
	}
	return code
}

// workflowPath returns the absolute WORKFLOW.md path from the positional arguments.
func workflowPath(args []string) string {
	p := "WORKFLOW.md"
	if len(args) > 0 {
		p = args[0]
	}
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

// runDaemon assembles the parts from the workflow file and runs the orchestrator until
// ctx ends (or, with --exit-when-idle, until there is nothing to do).
func runDaemon(ctx context.Context, path string, f runFlags, stdout, stderr io.Writer) int {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(stderr, "sortie: "+format+"\n", args...)
		return exitFailure
	}
	opts := config.Options{EnvFile: f.envFile}
	validateTemplate := func(c *config.Config) error {
		_, err := prompt.ParseEngine(c.Path, c.Prompt, c.PromptLine, prompt.Engine(c.PromptEngine))
		return err
	}
	if err := hideEnviron(); err != nil {
		logStartupWarning(stderr, "cannot hide the daemon's environment from other processes of this user: %v", err)
	}
	first, err := config.Load(path, opts)
	if err != nil {
		return fail("%v", err)
	}
	if err := validateTemplate(first); err != nil {
		return fail("%v", err)
	}
	view := newProgressView(stderr, f.dryRun)
	logger, err := newLogger(view, pick(f.logLevel, first.Logging.Level), pick(f.logFormat, first.Logging.Format))
	if err != nil {
		return fail("%v", err)
	}
	// Orphans of agents whose supervisor was killed come back to the daemon, which
	// stops them at the run's end (by SORTIE_RUN_ID) and reaps them.
	if err := supervise.Adopt(ctx.Done(), 30*time.Second); err != nil {
		logger.Warn("processes an agent leaves behind may outlive the daemon's watch: it cannot be their subreaper", "error", err)
	}
	// Every WORKFLOW.md the watcher applies has its adapters built first (adapters.go):
	// one whose tracker or agent cannot be built is rejected like a bad template.
	adapters := &adapterSet{ctx: ctx, log: logger}
	watcher, err := config.NewWatcher(path, opts, func(c *config.Config) error {
		if err := validateTemplate(c); err != nil {
			return err
		}
		return adapters.validate(c)
	}, logger)
	if err != nil {
		return fail("%v", err)
	}
	cfg := watcher.Current()

	if f.dryRun {
		trk, err := tracker.New(trackerConfig(cfg))
		if err != nil {
			return fail("tracker: %v", err)
		}
		return dryRun(ctx, cfg, trk, stdout, stderr)
	}
	// The session gauges, which read the orchestrator's snapshot, join once it exists.
	mets := metrics.New(version)
	hub := server.NewHub()
	adapters.mets = mets
	mets.SetRateLimits(adapters.rateLimits)
	st, dbShown, err := openDaemonStore(ctx, cfg)
	if err != nil {
		return fail("%v", err)
	}
	defer st.Close()
	clu, err := joinCluster(ctx, cfg, logger)
	if err != nil {
		return fail("%v", err)
	}
	var orchCluster orchestrator.Cluster
	if clu != nil {
		defer clu.Close()
		orchCluster = clu
		// One daemon at a time polls the tracker; the others read what it found.
		adapters.cluster = clu
		adapters.interval = func() time.Duration { return watcher.Current().Polling.Interval }
	}
	initial, err := adapters.startUp(cfg)
	if err != nil {
		return fail("%v", err)
	}
	notifier, err := notify.Parse(cfg.Extensions["notifications"], os.LookupEnv)
	if err != nil {
		return fail("%v", err)
	}
	activity := func(a orchestrator.Activity) {
		mets.Observe(a)
		hub.Publish(a)
	}
	wf, err := startWorkflows(ctx, cfg, watcher.Current, st, dashboardURL(cfg, f), activity, logger)
	if err != nil {
		return fail("%v", err)
	}
	if wf != nil {
		// After orch.Run, so that no auto-advance answers into a stopped loop's store.
		defer wf.desk.Close()
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
		return fail("%v", err)
	}
	defer sock.Close()

	if err := watcher.Start(ctx); err != nil {
		return fail("watching %s: %v", path, err)
	}
	confine, err := agentSandbox(cfg, path, f.envFile, logger)
	if err != nil {
		return fail("%v", err)
	}
	cgroups := runCgroups(cfg, logger)
	if cgroups != nil {
		defer cgroups.Close()
	}
	runAs, err := agentRunAs(cfg, path, ext.Executable, sock, confine.Hide, logger)
	if err != nil {
		return fail("%v", err)
	}
	warnSocketReach(cfg, confine, runAs, logger)
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
		ExitWhenIdle:  f.exitWhenIdle,
		Extensions:    ext,
		Alert:         alerter(notifier),
		Checkpoints:   wf.checkpoints(),
		Activity:      activity,
	})
	if err != nil {
		return fail("%v", err)
	}
	mets.ReadSessions(orch.Snapshot)
	serveAgentTools(sock, orch, toolOpts)
	logger.Info("sortie started", "version", version, "workflow", path, "tracker", cfg.Tracker.Kind,
		"agent", cfg.Agent.Kind, "agent_version", initial.AgentVersion, "db", dbShown, "pid", os.Getpid(),
		"agent_socket", sock.Path(), "notification_backends", strings.Join(notifier.Backends(), ","))
	srvDone, err := startServer(ctx, cfg, f, path, orch, wf.answerer(), st, hub, mets, adapters.rateLimits, logger, stderr)
	if err != nil {
		return fail("%v", err)
	}
	stopView := view.start(ctx, orch)
	if clu != nil {
		// The others' changes (a new poll, a freed slot, a lifted hold) refresh at once.
		lctx, stopListen := context.WithCancel(ctx)
		defer stopListen()
		go clu.Listen(lctx, func(string) { orch.Refresh() })
	}
	err = orch.Run(ctx)
	stopView()
	srvDone()
	if err != nil {
		return fail("%v", err)
	}
	if ctx.Err() != nil {
		logger.Info("shut down gracefully")
	}
	logResources(logger)
	return exitOK
}

func pick(flagValue, configValue string) string {
	if flagValue != "" {
		return flagValue
	}
	return configValue
}

func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	// The names logging.level accepts (docs/configuration.md), "warning" included, and
	// no others: slog's own parser would also take "info+2".
	var lv slog.Level
	switch strings.ToLower(level) {
	case "", "info":
		lv = slog.LevelInfo
	case "debug":
		lv = slog.LevelDebug
	case "warn", "warning":
		lv = slog.LevelWarn
	case "error":
		lv = slog.LevelError
	default:
		return nil, fmt.Errorf("log level %q: want debug, info, warn or error", level)
	}
	hopts := &slog.HandlerOptions{Level: lv}
	switch strings.ToLower(format) {
	case "", "text":
		return slog.New(slog.NewTextHandler(w, hopts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, hopts)), nil
	}
	return nil, fmt.Errorf("log format %q: want text or json", format)
}

// trackerConfig is the tracker adapter's configuration: the typed tracker fields plus
// the adapter's own top-level block (e.g. `file:`), whose keys never override them.
func trackerConfig(cfg *config.Config) tracker.Config {
	opts := map[string]any{}
	for k, v := range cfg.Block(cfg.Tracker.Kind) {
		opts[k] = v
	}
	if p := cfg.TrackerPath(); p != "" {
		opts["path"] = p
	}
	return tracker.Config{
		Kind: cfg.Tracker.Kind, Endpoint: cfg.Tracker.Endpoint, APIKey: cfg.Tracker.APIKey,
		Project: cfg.Tracker.Project, Team: cfg.Tracker.Team, QueryFilter: cfg.Tracker.QueryFilter,
		Provider:     cfg.Tracker.Provider,
		Assignee:     cfg.Tracker.Assignee,
		ActiveStates: cfg.Tracker.ActiveStates, TerminalStates: cfg.Tracker.TerminalStates,
		HandoffState: cfg.Tracker.HandoffState, Options: opts, WorkflowDir: cfg.Dir,
		UserAgent: "sortie/" + version,
	}
}

// preflightAgent asks the agent CLI for its version, which is recorded with every run.
// When agents run locally, a CLI that cannot say its version cannot run a turn either,
// so the daemon refuses to start; with SSH hosts the local CLI does not matter. A CLI
// that runs but prints something other than a version is recorded as unknown ("").
func preflightAgent(ctx context.Context, cfg *config.Config, a agent.Adapter, log *slog.Logger) (string, error) {
	v, ok := a.(agent.Versioner)
	if !ok || len(cfg.Worker.SSHHosts) > 0 {
		return "", nil
	}
	version, err := v.Version(ctx)
	if err != nil {
		return "", fmt.Errorf("%s preflight: %w", cfg.Agent.Kind, err)
	}
	if version == "" {
		log.Warn("the agent CLI's --version printed no version on its first line; runs record the version as unknown",
			"agent", cfg.Agent.Kind)
	}
	return version, nil
}

// agentConfig is the agent adapter's configuration. Its Env, for the CLI's version
// preflight, is the environment agent turns get: none of the daemon's secrets.
func agentConfig(cfg *config.Config) agent.Config {
	return agent.Config{
		Kind: cfg.Agent.Kind, Command: cfg.Agent.Command, TurnTimeout: cfg.Agent.TurnTimeout,
		ReadTimeout: cfg.Agent.ReadTimeout, StallTimeout: cfg.Agent.StallTimeout,
		Options: cfg.Block(cfg.Agent.Kind), WorkflowDir: cfg.Dir, Env: orchestrator.CLIEnv(cfg, os.Environ()),
	}
}

// dryRun polls once and prints, for every candidate, whether it would be dispatched.
func dryRun(ctx context.Context, cfg *config.Config, trk tracker.Tracker, stdout, stderr io.Writer) int {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	plan, err := orchestrator.Plan(ctx, cfg, trk)
	if err != nil {
		fmt.Fprintf(stderr, "sortie: dry run: %v\n", err)
		return exitFailure
	}
	fmt.Fprintf(stdout, "%d candidate issues, %d agent slots\n", len(plan), cfg.Agent.MaxConcurrentAgents)
	for _, d := range plan {
		verdict := "dispatch"
		if d.Reason != "" {
			verdict = "skip: " + d.Reason
		}
		fmt.Fprintf(stdout, "  %-14s %-14s %s\n", d.Issue.Identifier, d.Issue.State, verdict)
	}
	return exitOK
}

// parseErrorCode is the exit code for a flag parsing error: -h and --help asked for the
// usage, which the flag package has printed, so they succeed; anything else is a bad
// command line.
func parseErrorCode(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	return exitUsage
}

// logStartupWarning reports a problem found before the logger exists.
func logStartupWarning(stderr io.Writer, format string, args ...any) {
	fmt.Fprintf(stderr, "sortie: warning: "+format+"\n", args...)
}

// runCgroups is the tree of this daemon's per-run cgroups, one per database so that a
// restarted daemon finds its predecessor's; nil, with a note in the log, where cgroup
// v2 is not writable (the supervisor then owns each run's processes alone).
func runCgroups(cfg *config.Config, log *slog.Logger) *cgroup.Tree {
	t, err := cgroup.Setup("sortie-" + cfg.DBKey())
	if err != nil {
		log.Info("runs get no cgroups of their own; the supervisor alone stops what agents leave behind", "reason", err.Error())
		return nil
	}
	log.Info("each run gets its own cgroup", "cgroups", t.Dir())
	return t
}

// remoteStopper stops a process group on an SSH host of worker.ssh_hosts with the local
// ssh client, as the agent adapters do when they stop a remote turn, for the agents a
// crashed daemon left running there.
func remoteStopper(current func() *config.Config) func(ctx context.Context, host string, pgid int) error {
	return func(ctx context.Context, host string, pgid int) error {
		target, err := remote.ParseTarget(host)
		if err != nil {
			return err
		}
		ssh, err := exec.LookPath("ssh")
		if err != nil {
			return fmt.Errorf("the ssh client: %w", err)
		}
		cfg := current()
		return remote.Stop(ctx, ssh, orchestrator.CLIEnv(cfg, os.Environ()), target, cfg.Worker.SSHStrictHostKeyChecking, pgid, proc.DefaultGrace)
	}
}

// agentRunAs resolves agent.run_as (runas.ForAgents): the user local agents and
// hooks run as, nil for the daemon's own. The user must be able to reach what its
// processes use: this executable (the agents' MCP sidecar and `sortie confine`),
// WORKFLOW.md (which the sidecar loads) and the agent socket, which is opened to the
// user's group. It must not be able to read the daemon's private files.
func agentRunAs(cfg *config.Config, workflowPath, exe string, sock *agentsock.Server, private []string, logger *slog.Logger) (*runas.User, error) {
	return runas.ForAgents(cfg.Agent.RunAs, []runas.Need{
		{Path: exe, Access: runas.Read | runas.Exec, What: "the sortie executable, which runs the agents' MCP server"},
		{Path: workflowPath, Access: runas.Read, What: "WORKFLOW.md, which the agents' MCP server loads"},
		{Path: sock.Path(), Access: runas.Write, What: "the agent socket", Share: sock.ShareWithGroup},
	}, private, logger)
}

// startAgentTools opens the agent socket next to the database and prepares what every
// session gets: the sortie-tools MCP entry (this binary), the socket's capability
// tokens and the first-turn tool list (docs/agent-tools.md), which offers what caps
// says the daemon serves. Calls wait until serveAgentTools serves the socket.
func startAgentTools(sockBase string, caps func() agentsock.Capabilities) (workspace.Extensions, *agentsock.Server, error) {
	dbPath, err := filepath.Abs(sockBase)
	if err != nil {
		return workspace.Extensions{}, nil, err
	}
	sock, err := agentsock.Listen(agentsock.SocketPath(dbPath))
	if err != nil {
		return workspace.Extensions{}, nil, err
	}
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		sock.Close()
		return workspace.Extensions{}, nil, fmt.Errorf("finding this executable for the agents' MCP server: %w", err)
	}
	// Each session is told about the tools its own sidecar will register, given the env
	// it gets and what this daemon grants: an agent on an SSH host has no socket.
	promptTools := func(env map[string]string) []prompt.ToolDoc {
		return mcp.ToolDocs(mcp.Offered(mcp.SessionGates(env, caps())))
	}
	return workspace.Extensions{Executable: exe, Socket: sock, PromptTools: promptTools}, sock, nil
}

// agentToolOptions are the options of the daemon's side of the Tier 2 tools that need
// no orchestrator: current is the configuration in force; history serves the run
// history; wf, when not nil, answers the workflow tools (workflows.dir), which are then
// offered to every session that reaches the socket; notify_operator goes through n's
// backends when it has any; rateLimited counts the notify_operator calls its rate limit
// refuses, by scope (the metrics).
func agentToolOptions(current func() *config.Config, history agenttools.RunReader, n *notify.Notifier,
	wf *daemonWorkflows, rateLimited func(scope string)) agenttools.Options {
	o := agenttools.Options{Config: current, History: history, NotifyRateLimited: rateLimited}
	if wf != nil {
		o.Workflows = wf.eng
	}
	if n.Enabled() {
		o.Deliver = func(ctx context.Context, sess agentsock.Session, req agentsock.NotifyRequest) (agentsock.NotifyResult, error) {
			return deliverAgentMessage(ctx, n, notify.Notification{Event: notify.EventAgent, Severity: req.Severity,
				Title: req.Title, Message: req.Message, IssueID: sess.IssueID, IssueIdentifier: sess.Identifier})
		}
	}
	return o
}

// serveAgentTools builds the daemon's side of the Tier 2 tools from o and serves the
// agent socket with it: tracker_api reaches the tracker in force (orch.Tracker(), which
// a reload may replace) and tells orch of the agent's own moves.
func serveAgentTools(sock *agentsock.Server, orch *orchestrator.Orchestrator, o agenttools.Options) *agenttools.Service {
	o.Tracker, o.Refresh, o.AgentMoving = orch.Tracker(), func() { orch.Refresh() }, orch.AgentMoving
	svc := agenttools.New(o)
	sock.Start(svc)
	return svc
}

// alerter sends the daemon's own alerts through the notification backends.
func alerter(n *notify.Notifier) func(context.Context, orchestrator.Alert) error {
	if !n.Enabled() {
		return nil
	}
	return func(ctx context.Context, a orchestrator.Alert) error {
		return n.Send(ctx, notify.Notification{Event: alertEvent(a.Event), Severity: a.Severity, Title: a.Title,
			Message: a.Message, IssueID: a.Issue.ID, IssueIdentifier: a.Issue.Identifier, IssueURL: a.Issue.URL, Time: a.Time})
	}
}

// alertEvent is the notification event of an orchestrator alert: the hold reasons, and
// budget_exhausted, are event names, except a non-retryable error, which is "failed".
func alertEvent(e string) string {
	if e == "error" {
		return notify.EventFailed
	}
	return e
}

// startServer serves the dashboard, the JSON API and /metrics on server.host and
// server.port (or --host and --port), and returns the function that stops it. It keeps
// serving after ctx ends, through the orchestrator's drain, so that /readyz and the
// dashboard show the shutdown. Port 0 turns it off. A busy port is fatal when the port was chosen
// explicitly; the default port being busy (another daemon on this machine) only costs
// this daemon its server, with a warning.
func startServer(ctx context.Context, cfg *config.Config, f runFlags, workflow string, orch *orchestrator.Orchestrator,
	checkpoints *checkpoint.Desk, st daemonStore, hub *server.Hub, mets *metrics.Metrics, rateLimits func() []tracker.RateLimit, log *slog.Logger, stderr io.Writer) (func(), error) {
	host, port := pick(f.host, cfg.Server.Host), cfg.Server.Port
	explicit := cfg.Server.PortSet
	if f.port >= 0 {
		port, explicit = f.port, true
	}
	if port == 0 {
		return func() {}, nil
	}
	token, err := operatorToken(cfg)
	if err != nil {
		return nil, err
	}
	srv, err := server.New(server.Options{
		Host: host, Port: port, AuthToken: token, TokenGenerated: cfg.Server.AuthToken == "", Version: version, WorkflowPath: workflow,
		Snapshot: orch.Snapshot, Refresh: orch.Refresh, StorePing: st.Ping,
		Runs: st, Hub: hub, Metrics: mets.Handler(), Dashboard: dashboard.Handler(version), Logger: log,
		RateLimits: rateLimits, Checkpoints: checkpoints,
	})
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		if explicit {
			return nil, fmt.Errorf("server: %w (choose another server.port or --port, or 0 to turn the server off)", err)
		}
		log.Warn("the default port is busy (another sortie?); running without the dashboard and API", "addr", addr, "error", err)
		return func() {}, nil
	}
	base := "http://" + displayAddr(ln.Addr().String()) + "/"
	log.Info("dashboard, API and metrics", "url", base)
	// Once, as Jupyter does: the link that logs a browser in, with a one-time code
	// (good for server.LoginCodeTTL), not the operator token, which a log kept for
	// good, a terminal's scrollback or a browser's history would keep too.
	fmt.Fprintf(stderr, "sortie: open the dashboard, logged in: %s\n", codeLoginURL(base, srv.LoginCode()))
	srvCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(srvCtx, ln); err != nil {
			log.Error("the HTTP server stopped", "error", err)
		}
	}()
	return func() { cancel(); <-done }, nil
}

// displayAddr shows a wildcard listen address as one a browser can open.
func displayAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	return net.JoinHostPort(apiHost(host), port)
}

// dashboardURL is the dashboard's base URL, linked from checkpoint comments: "" when
// the server is off. It names the configured address, which a human on another
// machine can reach only when server.host is a routable one.
func dashboardURL(cfg *config.Config, f runFlags) string {
	host, port := pick(f.host, cfg.Server.Host), cfg.Server.Port
	if f.port >= 0 {
		port = f.port
	}
	if port == 0 {
		return ""
	}
	return "http://" + net.JoinHostPort(apiHost(host), strconv.Itoa(port))
}

// deliverAgentMessage sends a notify_operator message and tells the agent the truth:
// which backends took it, or, when every backend's filters turn it away, that it was
// not delivered and why.
func deliverAgentMessage(ctx context.Context, n *notify.Notifier, msg notify.Notification) (agentsock.NotifyResult, error) {
	if why := n.Filtered(msg); why != "" {
		return agentsock.NotifyResult{Reason: why}, nil
	}
	if err := n.Send(ctx, msg); err != nil {
		return agentsock.NotifyResult{}, err
	}
	return agentsock.NotifyResult{Delivered: true, Backends: n.Recipients(msg)}, nil
}
