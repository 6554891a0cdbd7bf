package webhook

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// githubPayload is the part of a GitHub repository webhook payload the receiver reads
// (docs.github.com, "Webhook events and payloads": issues, issue_comment, label, ping).
type githubPayload struct {
	Action string `json:"action"`
	Issue  *struct {
		Number int64 `json:"number"`
		// PullRequest is present on the issue of an issue_comment about a pull
		// request: GitHub models pull requests as issues.
		PullRequest json.RawMessage `json:"pull_request"`
	} `json:"issue"`
	Repository *struct {
		FullName string `json:"full_name"`
	} `json:"repository"`
}

// parseGitHub reads a delivery whose event is named by X-GitHub-Event: issues (any
// action) and issue_comment on an issue name the issue by number ("12", Sortie's
// identifier for an issue of tracker.project); label is accepted naming none, since a
// label's change can change which issues Sortie picks; ping and every other event are
// ignored. A repository other than s.Project is ignored.
func parseGitHub(d *Delivery, h http.Header, body []byte, s Settings, _ time.Time) (string, error) {
	event := h.Get("X-GitHub-Event")
	if !isName(event) {
		return Malformed, fmt.Errorf("github: the X-GitHub-Event header is missing or not an event name")
	}
	var p githubPayload
	if err := decode(GitHub, body, &p); err != nil {
		return Malformed, err
	}
	d.Event = event
	if p.Action != "" {
		if !isName(p.Action) {
			return Malformed, fmt.Errorf("github: %s: action is not an action name", event)
		}
		d.Event += "." + p.Action
	}
	switch event {
	case "issues", "issue_comment", "label":
	case "ping":
		return Ignored, fmt.Errorf("github: ping: the webhook reaches Sortie; a ping names no issue")
	default:
		return Ignored, fmt.Errorf("github: %s events are not ones Sortie acts on; subscribe the webhook to Issues, Issue comments and Labels only", event)
	}
	if p.Action == "" {
		return Malformed, fmt.Errorf("github: %s: action is missing", event)
	}
	if p.Repository == nil || p.Repository.FullName == "" {
		return Malformed, fmt.Errorf("github: %s: repository.full_name is missing", event)
	}
	if s.Project != "" && !strings.EqualFold(p.Repository.FullName, s.Project) {
		return Ignored, fmt.Errorf("github: the delivery is about repository %s, not tracker.project %s", brief(p.Repository.FullName), brief(s.Project))
	}
	if event == "label" {
		return Accepted, nil
	}
	if p.Issue == nil || p.Issue.Number <= 0 {
		return Malformed, fmt.Errorf("github: %s: issue.number is missing or not positive", event)
	}
	if event == "issue_comment" && present(p.Issue.PullRequest) {
		return Ignored, fmt.Errorf("github: issue_comment: #%d is a pull request, not an issue", p.Issue.Number)
	}
	d.Issues = []string{strconv.FormatInt(p.Issue.Number, 10)}
	return Accepted, nil
}
