package webhook

import (
	"net/http"
	"slices"
	"time"
)

// Tracker kinds that have a receiver, as tracker.kind spells them; each is also the
// last segment of its receiver's path, /webhooks/{kind}.
const (
	GitHub = "github"
	Linear = "linear"
	Jira   = "jira"
)

// Kinds returns the tracker kinds that have a receiver, sorted.
func Kinds() []string {
	kinds := make([]string, 0, len(receivers))
	for k := range receivers {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	return kinds
}

// Settings are the receiver's settings for the tracker in force. The receiver reads
// them on every request (Options.Settings), because the workflow file hot-reloads.
type Settings struct {
	// Tracker is tracker.kind in force. Only the receiver of that kind answers; any
	// other kind (and a Tracker with no receiver) is 404 not_configured.
	Tracker string
	// Secret is tracker.webhook_secret, resolved. "" means webhooks are not configured:
	// every request is 404 not_configured. It is never logged or answered.
	Secret string
	// Project limits accepted deliveries to the project Sortie works on: GitHub's
	// "owner/repo" (compared with repository.full_name) and Jira's project key (with
	// issue.fields.project.key), both case-insensitively. For Linear it is the project's
	// slug id, which Linear's payloads do not carry, so it filters nothing there. ""
	// means no filter.
	Project string
	// Team is Linear's team key (tracker.team_key): a delivery naming another team's key
	// is ignored. "" means no filter.
	Team string
}

// Delivery is one accepted delivery: what a tracker said changed. It is a hint to poll,
// never a statement of an issue's state.
type Delivery struct {
	// Tracker is the kind that sent it (GitHub, Linear, Jira).
	Tracker string
	// ID is the tracker's id for the delivery (X-GitHub-Delivery, Linear-Delivery,
	// X-Atlassian-Webhook-Identifier), at most 256 bytes; "" when absent.
	ID string
	// Event names what happened: GitHub's event and action ("issues.opened",
	// "issue_comment.created", "label.deleted"), Linear's type and action
	// ("Issue.create", "Comment.create"), Jira's webhookEvent ("jira:issue_updated",
	// "comment_created").
	Event string
	// Issues are the identifiers it names as Sortie shows them: GitHub "12", Linear
	// "ENG-12" (or, for a comment whose payload carries no identifier, the issue's id),
	// Jira "PROJ-7". Empty for an event about no one issue (a GitHub label change).
	Issues []string
	// At is when the receiver got it (Options.Now).
	At time.Time
}

// Results of a request: how it ended. Each is a metric label value (Options.Count), a
// Status.Counts key, and the "result" or error "code" of the JSON answer.
const (
	// Accepted: authentic, fresh, new and relevant; Deliver was called (202).
	Accepted = "accepted"
	// Ignored: authentic, but not an event Sortie acts on, or about another repository,
	// project or team; also GitHub's ping (200).
	Ignored = "ignored"
	// Replayed: authentic, but its delivery id was seen within the replay window (200).
	Replayed = "replayed"
	// Unauthorized: the signature or token is missing or wrong (401).
	Unauthorized = "unauthorized"
	// Stale: a Linear delivery whose webhookTimestamp is more than a minute from now,
	// either way (401).
	Stale = "stale"
	// Malformed: authentic, but not JSON of the expected shape (400); also a body that
	// could not be read.
	Malformed = "malformed"
	// TooLarge: the body is over MaxBody (413).
	TooLarge = "too_large"
	// NotConfigured: no receiver for this kind now, because the tracker in force is
	// another or it has no webhook secret (404).
	NotConfigured = "not_configured"
	// Busy: MaxReading bodies are being read already (503 with Retry-After); the
	// tracker's next delivery or the next poll brings the change.
	Busy = "busy"
)

// Results returns every result, in the order above.
func Results() []string {
	return []string{Accepted, Ignored, Replayed, Unauthorized, Stale, Malformed, TooLarge, NotConfigured, Busy}
}

// MaxBody is the largest body a receiver reads, in bytes. GitHub caps its payloads at
// 25 MB, but an issue event with its repository is a few tens of kilobytes, and a Jira
// issue with a long description and changelog a few hundred; a larger body is refused
// (413), and the next poll brings what it said.
const MaxBody = 1 << 20

// MaxReading is how many bodies a receiver reads at once. Bodies are read before their
// signature can be checked, by anyone who sends a signature header; without a bound, a
// few hundred senders that stall inside their bodies would hold MaxBody each.
const MaxReading = 16

// maxIDLen bounds a delivery id. Real ids are GUIDs or numbers; the header is not
// signed, so a longer one is refused rather than remembered or logged.
const maxIDLen = 256

// receiver is what one tracker's webhooks differ in: where the signature and the
// delivery id are, and how the payload reads. The order of the checks, the replay
// memory and the answers are shared (ServeHTTP), so that a fix to one is a fix to all.
type receiver struct {
	// signature is the header carrying the hex HMAC-SHA256 of the body, after prefix.
	signature, prefix string
	// token is a header that may carry the secret itself instead of a signature, for
	// senders that cannot sign; "" when the tracker has none.
	token string
	// delivery is the header carrying the delivery id.
	delivery string
	// parse fills d.Event and d.Issues from an authentic request and says how it ends:
	// Accepted, Ignored, Stale or Malformed, with the reason for any but Accepted.
	parse func(d *Delivery, h http.Header, body []byte, s Settings, now time.Time) (string, error)
}

// receivers is the registry of tracker kinds that have a receiver.
var receivers = map[string]receiver{
	GitHub: {signature: "X-Hub-Signature-256", prefix: "sha256=", delivery: "X-GitHub-Delivery", parse: parseGitHub},
	Linear: {signature: "Linear-Signature", delivery: "Linear-Delivery", parse: parseLinear},
	Jira: {signature: "X-Hub-Signature", prefix: "sha256=", token: "X-Sortie-Webhook-Token",
		delivery: "X-Atlassian-Webhook-Identifier", parse: parseJira},
}
