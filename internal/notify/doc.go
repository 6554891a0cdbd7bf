// Package notify delivers operator notifications to the backends configured in the
// `notifications:` list of WORKFLOW.md: a generic JSON webhook and a Slack-compatible
// incoming webhook, each with a per-attempt timeout and retries with backoff. The agent's
// notify_operator tool and the daemon's own alerts (issue blocked, budget exhausted,
// retries exhausted) both go through a Notifier.
//
// It owns parsing and validating that list, resolving its $VAR references, building the
// payloads and the HTTP delivery. It does not decide when to notify, does not log, and
// never reveals a webhook URL's path or query or a header value in an error.
package notify
