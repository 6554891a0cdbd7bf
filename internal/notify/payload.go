package notify

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"
	"unicode/utf8"
)

// webhookPayload is the body of a generic webhook POST (docs/notifications.md). Its
// fields are a contract with receivers: add, never rename.
type webhookPayload struct {
	Source   string       `json:"source"`
	Event    string       `json:"event"`
	Severity string       `json:"severity"`
	Title    string       `json:"title"`
	Message  string       `json:"message"`
	Issue    webhookIssue `json:"issue"`
	Time     string       `json:"time"`
}

type webhookIssue struct {
	ID         string `json:"id"`
	Identifier string `json:"identifier"`
	URL        string `json:"url"`
}

func webhookBody(msg Notification) ([]byte, error) {
	return encodeJSON(webhookPayload{
		Source:   "sortie",
		Event:    msg.Event,
		Severity: msg.Severity,
		Title:    msg.Title,
		Message:  msg.Message,
		Issue:    webhookIssue{ID: msg.IssueID, Identifier: msg.IssueIdentifier, URL: msg.IssueURL},
		Time:     msg.Time.UTC().Format(time.RFC3339),
	})
}

// slackBody is a Slack incoming-webhook body. Only `text` is used: Slack, Mattermost and
// Discord's /slack endpoint all accept it.
func slackBody(msg Notification) ([]byte, error) {
	return encodeJSON(struct {
		Text string `json:"text"`
	}{slackText(msg)})
}

// slackEscaper escapes the three characters Slack's text format reserves
// (https://api.slack.com/reference/surfaces/formatting#escaping), so an agent's message
// cannot ping @channel via <!channel> or forge links.
var slackEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// slackText renders msg as `[severity] IDENT Title: message (issue URL)`, leaving out
// the parts msg does not have.
func slackText(msg Notification) string {
	var b strings.Builder
	b.WriteString("[" + msg.Severity + "]")
	if msg.IssueIdentifier != "" {
		b.WriteString(" " + msg.IssueIdentifier)
	}
	b.WriteString(" ")
	if msg.Title != "" {
		b.WriteString(msg.Title + ": ")
	}
	b.WriteString(msg.Message)
	if msg.IssueURL != "" {
		b.WriteString(" (" + msg.IssueURL + ")")
	}
	return slackEscaper.Replace(b.String())
}

// encodeJSON marshals v without HTML escaping, so receivers that show raw bodies see `<`
// rather than `\u003c`.
func encodeJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// truncatedMark ends a value that was cut.
const truncatedMark = "… [truncated]"

// truncate cuts s to at most max bytes, including the mark, on a UTF-8 boundary.
func truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max - len(truncatedMark)
	if cut < 0 {
		cut = 0
	}
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + truncatedMark
}
