package tools

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"sortie/internal/agentsock"
)

// Limits of notify_operator's arguments, in characters.
const (
	MaxNotifyMessage = 4000
	MaxNotifyTitle   = 200
)

// NotifySeverities lists the severities notify_operator accepts; the first is the default.
var NotifySeverities = []string{"info", "warning", "critical"}

// NotifySpec describes notify_operator.
var NotifySpec = Spec{
	Name: NameNotify,
	Tier: TierExternal,
	Description: "Sends a message to the human operators through the channels they configured (chat, " +
		"webhooks). Use it sparingly: when you need a decision, are blocked, or something is badly wrong. " +
		`Answers {"success":true,"data":{"delivered":true,"backends":[...]}}; {"success":true,"data":{"delivered":false,"reason":...}} ` +
		`when every channel's filters turn the message away (nothing was sent; a higher severity may pass); ` +
		`or {"success":false,"error":{"kind","message"}}. Messages are rate limited per issue and overall; ` +
		`an error of kind rate_limited says when the next one may be sent.`,
	InputSchema: json.RawMessage(`{
  "type": "object",
  "properties": {
    "message": {
      "type": "string",
      "minLength": 1,
      "maxLength": 4000,
      "description": "What the operator should know or do. Plain text, at most 4000 characters."
    },
    "severity": {
      "type": "string",
      "enum": ["info", "warning", "critical"],
      "default": "info",
      "description": "How urgent it is."
    },
    "title": {
      "type": "string",
      "maxLength": 200,
      "description": "A short headline; optional."
    }
  },
  "required": ["message"],
  "additionalProperties": false
}`),
}

// NotifyOperator is the notify_operator tool; the daemon delivers the message with the
// backends' secrets only it holds.
type NotifyOperator struct {
	daemon  Daemon
	timeout time.Duration
}

// NewNotify returns notify_operator calling d, each call bounded by timeout (0 means
// DefaultCallTimeout).
func NewNotify(d Daemon, timeout time.Duration) *NotifyOperator {
	return &NotifyOperator{daemon: d, timeout: timeout}
}

// Spec implements Tool.
func (n *NotifyOperator) Spec() Spec { return NotifySpec }

// Call implements Tool.
func (n *NotifyOperator) Call(ctx context.Context, args json.RawMessage) Result {
	var req agentsock.NotifyRequest
	if err := decodeArgs(NotifySpec, args, &req); err != nil {
		return envelopeFail(KindInvalidInput, "%v", err)
	}
	if err := checkNotifyRequest(&req); err != nil {
		return envelopeFail(KindInvalidInput, "%v", err)
	}
	return daemonCall(ctx, n.timeout, KindTransport, func(ctx context.Context) (json.RawMessage, error) {
		return n.daemon.Notify(ctx, req)
	})
}

// checkNotifyRequest validates req and fills in the default severity.
func checkNotifyRequest(req *agentsock.NotifyRequest) error {
	switch n := utf8.RuneCountInString(req.Message); {
	case strings.TrimSpace(req.Message) == "":
		return fieldError("message", "is required and must not be blank")
	case n > MaxNotifyMessage:
		return fieldError("message", "is %d characters, more than %d; shorten it", n, MaxNotifyMessage)
	}
	if n := utf8.RuneCountInString(req.Title); n > MaxNotifyTitle {
		return fieldError("title", "is %d characters, more than %d", n, MaxNotifyTitle)
	}
	if req.Severity == "" {
		req.Severity = NotifySeverities[0]
	}
	if !slices.Contains(NotifySeverities, req.Severity) {
		return fieldError("severity", "must be one of %s (got %q)", strings.Join(NotifySeverities, ", "), req.Severity)
	}
	return nil
}
