package webhook

import (
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"
)

// linearMaxSkew is how far a Linear delivery's webhookTimestamp may be from the
// receiver's clock, either way: Linear's guidance for rejecting replayed deliveries.
const linearMaxSkew = time.Minute

// linearPayload is the part of a Linear data change webhook payload the receiver reads
// (linear.app/developers/webhooks): action, type, data and webhookTimestamp; url,
// createdAt, webhookId and organizationId are not needed.
type linearPayload struct {
	Action string `json:"action"`
	Type   string `json:"type"`
	// WebhookTimestamp is when Linear sent the delivery, in Unix milliseconds. It is
	// inside the signed body, unlike the delivery id.
	WebhookTimestamp *float64 `json:"webhookTimestamp"`
	Data             *struct {
		Identifier string      `json:"identifier"` // Issue: "ENG-12"
		Team       *linearTeam `json:"team"`       // Issue
		IssueID    string      `json:"issueId"`    // Comment
		Issue      *struct {   // Comment
			Identifier string      `json:"identifier"`
			Team       *linearTeam `json:"team"`
		} `json:"issue"`
	} `json:"data"`
}

type linearTeam struct {
	Key string `json:"key"`
}

// parseLinear reads a Linear delivery: first its webhookTimestamp, which must be within
// a minute of now (Stale otherwise); then an Issue names data.identifier and a Comment
// its issue's identifier (data.issue.identifier, else data.issueId). Other types are
// ignored, and so is a delivery naming a team key other than s.Team.
func parseLinear(d *Delivery, _ http.Header, body []byte, s Settings, now time.Time) (string, error) {
	var p linearPayload
	if err := decode(Linear, body, &p); err != nil {
		return Malformed, err
	}
	if !isName(p.Type) {
		return Malformed, fmt.Errorf("linear: type is missing or not a type name")
	}
	d.Event = p.Type
	if p.Action != "" {
		if !isName(p.Action) {
			return Malformed, fmt.Errorf("linear: %s: action is not an action name", p.Type)
		}
		d.Event += "." + p.Action
	}
	if p.WebhookTimestamp == nil {
		return Malformed, fmt.Errorf("linear: %s: webhookTimestamp is missing", d.Event)
	}
	skew := float64(now.UnixMilli()) - *p.WebhookTimestamp
	if math.Abs(skew) > float64(linearMaxSkew.Milliseconds()) {
		return Stale, fmt.Errorf("linear: %s: webhookTimestamp is %s the receiver's clock, more than %s: a replayed delivery, or a clock to set right (NTP)",
			d.Event, skewText(skew), linearMaxSkew)
	}
	var issue, team string
	switch p.Type {
	case "Issue":
		if p.Data == nil || !isIdentifier(p.Data.Identifier) {
			return Malformed, fmt.Errorf("linear: %s: data.identifier is missing or not an issue identifier", d.Event)
		}
		issue = p.Data.Identifier
		if p.Data.Team != nil {
			team = p.Data.Team.Key
		}
	case "Comment":
		if p.Data == nil {
			return Malformed, fmt.Errorf("linear: %s: data is missing", d.Event)
		}
		issue = p.Data.IssueID
		if p.Data.Issue != nil {
			if p.Data.Issue.Identifier != "" {
				issue = p.Data.Issue.Identifier
			}
			if p.Data.Issue.Team != nil {
				team = p.Data.Issue.Team.Key
			}
		}
		if !isIdentifier(issue) {
			return Malformed, fmt.Errorf("linear: %s: neither data.issue.identifier nor data.issueId names an issue", d.Event)
		}
	default:
		return Ignored, fmt.Errorf("linear: %s deliveries are not ones Sortie acts on; subscribe the webhook to Issues and Comments only", p.Type)
	}
	if s.Team != "" && team != "" && !strings.EqualFold(team, s.Team) {
		return Ignored, fmt.Errorf("linear: %s is in team %s, not tracker.team_key %s", issue, brief(team), brief(s.Team))
	}
	d.Issues = []string{issue}
	return Accepted, nil
}

// skewText says how far ahead of or behind a clock a timestamp is, skew being the
// clock's time minus the timestamp, in milliseconds: "1m1s behind", "2h0m0s ahead of".
func skewText(skew float64) string {
	where := " behind"
	if skew < 0 {
		skew, where = -skew, " ahead of"
	}
	if skew >= float64(math.MaxInt64/int64(time.Millisecond)) {
		return "centuries" + where
	}
	return (time.Duration(skew) * time.Millisecond).Round(time.Second).String() + where
}
