package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strconv"

	"sortie/internal/config"
	"sortie/internal/metrics"
	"sortie/internal/orchestrator"
	"sortie/internal/reactions"
	"sortie/internal/server"
	"sortie/internal/server/dashboard"
	"sortie/internal/tracker"
	"sortie/internal/webhook"
	"sortie/internal/workflow/checkpoint"
)

// startServer serves the dashboard, the JSON API and /metrics on server.host and
// server.port (or Options.Host and Options.Port), and returns the function that stops it. It keeps
// serving after ctx ends, through the orchestrator's drain, so that /readyz and the
// dashboard show the shutdown. Port 0 turns it off. A busy port is fatal when the port was chosen
// explicitly; the default port being busy (another daemon on this machine) only costs
// this daemon its server, with a warning.
func (d *Daemon) startServer(ctx context.Context, current func() *config.Config, orch *orchestrator.Orchestrator,
	checkpoints *checkpoint.Desk, st daemonStore, hub *server.Hub, mets *metrics.Metrics, rateLimits func() []tracker.RateLimit,
	reactionViews func() []reactions.View) (func(), error) {
	cfg := current()
	log, version, workflow := d.log, d.opts.Version, d.opts.WorkflowPath
	host, port := pick(d.opts.Host, cfg.Server.Host), cfg.Server.Port
	explicit := cfg.Server.PortSet
	if d.opts.Port >= 0 {
		port, explicit = d.opts.Port, true
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
		RateLimits: rateLimits, Checkpoints: checkpoints, Webhooks: webhookReceiver(current, orch, mets, log),
		Reactions: reactionViews,
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
	fmt.Fprintf(d.opts.Stderr, "sortie: open the dashboard, logged in: %s\n", codeLoginURL(base, srv.LoginCode()))
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

// webhookReceiver receives the webhooks of the tracker the daemon polls
// (docs/webhooks.md): its kind, project and team are the start-up configuration's, as
// the tracker's identity is until a restart (adapterSet); the secret is the
// configuration's applied last, so an edit of tracker.webhook_secret takes effect at
// once. Each authentic delivery makes the orchestrator poll now.
func webhookReceiver(current func() *config.Config, orch *orchestrator.Orchestrator, mets *metrics.Metrics, log *slog.Logger) *webhook.Receiver {
	start := current().Tracker
	return webhook.New(webhook.Options{
		Settings: func() webhook.Settings {
			return webhook.Settings{Tracker: start.Kind, Secret: current().Tracker.WebhookSecret, Project: start.Project, Team: start.Team}
		},
		// The receiver logs each delivery; the orchestrator only needs to poll now.
		Deliver: func(webhook.Delivery) { orch.WebhookDelivered() },
		Count:   mets.WebhookDelivery,
		Logger:  log,
	})
}

// displayAddr shows a wildcard listen address as one a browser can open.
func displayAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	return net.JoinHostPort(APIHost(host), port)
}

// dashboardURL is the dashboard's base URL, linked from checkpoint comments: "" when
// the server is off. It names the configured address, which a human on another
// machine can reach only when server.host is a routable one.
func dashboardURL(cfg *config.Config, flagHost string, flagPort int) string {
	host, port := pick(flagHost, cfg.Server.Host), cfg.Server.Port
	if flagPort >= 0 {
		port = flagPort
	}
	if port == 0 {
		return ""
	}
	return "http://" + net.JoinHostPort(APIHost(host), strconv.Itoa(port))
}

// APIHost is where to reach a server bound to host: a wildcard address is reached on
// loopback.
func APIHost(host string) string {
	switch host {
	case "", "0.0.0.0":
		return "127.0.0.1"
	case "::":
		return "::1"
	}
	return host
}

// pick is a flag's value when it was given, else the configuration's.
func pick(flagValue, configValue string) string {
	if flagValue != "" {
		return flagValue
	}
	return configValue
}
