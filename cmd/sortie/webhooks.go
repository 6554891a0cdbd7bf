package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"

	"sortie/internal/config"
	"sortie/internal/daemon"
	"sortie/internal/webhook"
)

// hookGuide is what an operator registers on one tracker: where, which events, and
// how the tracker proves a delivery is its own.
type hookGuide struct {
	where   string   // where in the tracker's settings webhooks are registered
	events  []string // the events to select, as the tracker's settings name them
	signing string   // how deliveries are signed, and what to paste where
	scope   string   // a tip for limiting deliveries to what Sortie polls; "" for none
}

var hookGuides = map[string]hookGuide{
	webhook.GitHub: {
		where:  "the repository's Settings → Webhooks → Add webhook (https://github.com/%s/settings/hooks), content type application/json",
		events: []string{"Issues", "Issue comments", "Labels"},
		signing: "paste the secret into the webhook's Secret field: GitHub signs each delivery with it " +
			"(X-Hub-Signature-256)",
	},
	webhook.Linear: {
		where:   "Linear's Settings → API → Webhooks → New webhook (a workspace admin)",
		events:  []string{"Issues", "Comments"},
		signing: "Linear shows a signing secret once the webhook is saved: set the variable to it (Linear-Signature)",
		scope:   "pick the team Sortie works on rather than all public teams",
	},
	webhook.Jira: {
		where:  "Jira's System → WebHooks → Create a WebHook (a Jira administrator)",
		events: []string{"Issue: created", "Issue: updated", "Comment: created", "Comment: updated"},
		signing: "Jira Cloud: paste the secret into the webhook's Secret field (X-Hub-Signature). Jira Data Center " +
			"without webhook secrets: send the secret in an X-Sortie-Webhook-Token header instead (an Automation " +
			"for Jira \"Send web request\" rule, or a reverse proxy that adds it)",
		scope: "set the webhook's JQL filter to project = %s",
	},
}

// cmdWebhooks is `sortie webhooks [--env-file PATH] [WORKFLOW.md]`: what to register
// on the tracker of a workflow so that its issues start within a second of a change.
func cmdWebhooks(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("webhooks", flag.ContinueOnError)
	fs.SetOutput(stderr)
	envFile := fs.String("env-file", "", "read SORTIE_* overrides from this .env file")
	if err := fs.Parse(args); err != nil {
		return parseErrorCode(err)
	}
	if fs.NArg() > 1 {
		fmt.Fprintln(stderr, "sortie webhooks: at most one WORKFLOW.md path")
		return exitUsage
	}
	path := workflowPath(fs.Args())
	cfg, problems := config.Check(path, config.Options{EnvFile: *envFile})
	if cfg == nil {
		fmt.Fprintf(stderr, "sortie webhooks: %s is not valid; `sortie validate %s` lists its problems\n", path, path)
		for _, p := range problems {
			if p.IsError() {
				fmt.Fprintf(stderr, "  %s\n", p.String())
			}
		}
		return exitFailure
	}
	writeWebhookGuide(stdout, cfg)
	return exitOK
}

// writeWebhookGuide prints the guide for cfg's tracker. It names the secret's
// variable, never its value.
func writeWebhookGuide(w io.Writer, cfg *config.Config) {
	t := cfg.Tracker
	g, ok := hookGuides[t.Kind]
	if !ok {
		if t.Kind == "file" {
			fmt.Fprintf(w, "The file tracker needs no webhook: the daemon watches %s and acts on each save.\n", t.Path)
		} else {
			fmt.Fprintf(w, "tracker.kind %s has no webhook receiver; it is polled every %s.\n", t.Kind, cfg.Polling.Interval)
		}
		return
	}
	project := t.Project
	if project == "" {
		project = t.Team
	}
	fmt.Fprintf(w, "Tracker:  %s (%s)\n", t.Kind, project)
	fmt.Fprintf(w, "URL:      %s\n", webhookURL(cfg))
	fmt.Fprintf(w, "Register: %s\n", fillIn(g.where, project))
	fmt.Fprintf(w, "Events:   %s\n", strings.Join(g.events, ", "))
	if g.scope != "" {
		fmt.Fprintf(w, "Scope:    %s\n", fillIn(g.scope, project))
	}
	fmt.Fprintf(w, "Secret:   %s\n", secretLine(t))
	fmt.Fprintf(w, "Signing:  %s\n", g.signing)
	fmt.Fprintf(w, "Polling:  every %s while deliveries arrive (polling.webhook_interval_ms), every %s otherwise\n",
		max(cfg.Polling.WebhookInterval, cfg.Polling.Interval), cfg.Polling.Interval)
	for _, warning := range reachWarnings(cfg) {
		fmt.Fprintf(w, "Note:     %s\n", warning)
	}
}

// webhookURL is where the tracker delivers: under server.public_url, else the address
// the daemon listens on.
func webhookURL(cfg *config.Config) string {
	base := cfg.Server.PublicURL
	if base == "" {
		base = "http://" + net.JoinHostPort(daemon.APIHost(cfg.Server.Host), strconv.Itoa(cfg.Server.Port))
	}
	return base + "/webhooks/" + cfg.Tracker.Kind
}

// secretLine says where the secret comes from, without its value.
func secretLine(t config.TrackerConfig) string {
	switch refs := config.EnvRefs(t.WebhookSecretRef); {
	case t.WebhookSecretRef == "":
		return fmt.Sprintf("not set: the daemon answers 404 at this URL until it is. Add `webhook_secret: $%s_WEBHOOK_SECRET` "+
			"under tracker: and set that variable to a long random value (openssl rand -hex 32)", strings.ToUpper(t.Kind))
	case len(refs) == 0:
		return "written in WORKFLOW.md itself: move it to a variable (webhook_secret: $NAME), which Sortie keeps from agents and hooks"
	default:
		return "the value of $" + strings.Join(refs, ", $") + " (tracker.webhook_secret)"
	}
}

// reachWarnings are the reasons the tracker may not reach the URL as configured.
func reachWarnings(cfg *config.Config) []string {
	var out []string
	if cfg.Server.Port == 0 {
		out = append(out, "server.port is 0, so the daemon serves no HTTP and receives no webhook")
	}
	if cfg.Server.PublicURL == "" && isLoopback(cfg.Server.Host) {
		out = append(out, fmt.Sprintf("the daemon listens on %s, which %s cannot reach: put a reverse proxy or tunnel in front of it "+
			"and set server.public_url to the address the tracker uses", daemon.APIHost(cfg.Server.Host), cfg.Tracker.Kind))
	}
	return out
}

// isLoopback reports whether a daemon listening on host is reached only from this
// machine ("" and the wildcard addresses listen on every interface).
func isLoopback(host string) bool {
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// fillIn puts the project into a guide line that has a place for it.
func fillIn(line, project string) string {
	if strings.Contains(line, "%s") {
		return fmt.Sprintf(line, project)
	}
	return line
}
