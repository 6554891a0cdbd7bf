package webhook

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

// jiraPayload is the part of a Jira webhook payload the receiver reads
// (developer.atlassian.com, Jira Cloud platform "Webhooks"): webhookEvent and the
// issue's key and project. Data Center and Automation for Jira ("Send web request"
// with the issue data in Jira's format) send the same fields.
type jiraPayload struct {
	WebhookEvent string `json:"webhookEvent"`
	Issue        *struct {
		Key    string `json:"key"`
		Fields *struct {
			Project *struct {
				Key string `json:"key"`
			} `json:"project"`
		} `json:"fields"`
	} `json:"issue"`
}

// jiraEvents are the webhookEvent values Sortie acts on.
var jiraEvents = map[string]bool{
	"jira:issue_created": true,
	"jira:issue_updated": true,
	"comment_created":    true,
	"comment_updated":    true,
}

// parseJira reads a Jira delivery: an issue created or updated, or a comment created or
// updated, names issue.key; other events are ignored, and so is an issue whose
// project key is not s.Project.
func parseJira(d *Delivery, _ http.Header, body []byte, s Settings, _ time.Time) (string, error) {
	var p jiraPayload
	if err := decode(Jira, body, &p); err != nil {
		return Malformed, err
	}
	if !isName(p.WebhookEvent) {
		return Malformed, fmt.Errorf("jira: webhookEvent is missing or not an event name")
	}
	d.Event = p.WebhookEvent
	if !jiraEvents[p.WebhookEvent] {
		return Ignored, fmt.Errorf("jira: %s events are not ones Sortie acts on; subscribe the webhook to issue created and updated, and comment created and updated, only", p.WebhookEvent)
	}
	if p.Issue == nil || !isIdentifier(p.Issue.Key) {
		return Malformed, fmt.Errorf("jira: %s: issue.key is missing or not an issue key", d.Event)
	}
	if f := p.Issue.Fields; s.Project != "" && f != nil && f.Project != nil && f.Project.Key != "" &&
		!strings.EqualFold(f.Project.Key, s.Project) {
		return Ignored, fmt.Errorf("jira: %s is in project %s, not tracker.project %s", p.Issue.Key, brief(f.Project.Key), brief(s.Project))
	}
	d.Issues = []string{p.Issue.Key}
	return Accepted, nil
}
