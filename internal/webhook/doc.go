// Package webhook receives the signed deliveries GitHub, Linear and Jira push when an
// issue changes, so that Sortie polls its tracker at once instead of at the next tick.
// It owns the receiver's security decisions (is this request authentic, fresh, new and
// about the project Sortie works on?) and the record of what each tracker last sent; it
// does not poll, read issues or change scheduling state: it hands each accepted
// Delivery to Options.Deliver and the daemon decides what to do with it.
//
// # A hint, never the truth
//
// A delivery only says "something changed, look now". Sortie never takes an issue's
// state, labels or text from a payload: it polls the tracker, which is the one source of
// truth, exactly as it would on its timer. So the worst an accepted delivery can do is
// cause a poll, a lost one only delays work until the next tick, and this package keeps
// no more of a payload than the event's name and the identifiers it names.
//
// # Signature first
//
// A request is authenticated before anything in it is believed. The order of checks in
// ServeHTTP is part of the contract:
//
//  1. Only POST to /webhooks/{kind}, for a kind in Kinds() (405, 404).
//  2. The kind must be the tracker in force with a webhook secret set (404
//     not_configured): the workflow file hot-reloads, so Settings is read per request.
//  3. No signature header: 401 unauthorized, before a byte of the body is read, so an
//     unauthenticated client cannot make the daemon buffer anything.
//  4. A body declared larger than MaxBody is 413 too_large, unread. With MaxReading
//     bodies being read already, 503 busy, unread. The body is read up to MaxBody (413
//     too_large past it; one that stops short is 400 and counts as unauthorized) and
//     its signature checked in constant time (401 unauthorized):
//     GitHub: X-Hub-Signature-256: sha256=<hex HMAC-SHA256(body, secret)>;
//     Linear: Linear-Signature: <hex HMAC-SHA256(body, secret)>;
//     Jira: X-Hub-Signature: sha256=<hex> (Cloud admin webhooks with a secret; sha1 is
//     refused), or X-Sortie-Webhook-Token: <secret> for Jira Data Center and Automation
//     for Jira's "Send web request", which cannot sign a body.
//  5. Only then is the body parsed as JSON (400 malformed); a Linear delivery's
//     webhookTimestamp is checked (401 stale, below); and the delivery is judged: an
//     event Sortie does not act on, or another repository, project or team, is 200
//     ignored.
//  6. A delivery id seen before is 200 replayed (below). Otherwise Deliver is called
//     and the answer is 202 accepted.
//
// Answers are small JSON documents, {"result":"accepted"} or
// {"error":{"code":"unauthorized","message":"..."}}; the code is one of Results(). No
// answer repeats the body or a header's value, and no log line holds the body, a
// signature, a token or the secret (an authentic delivery's id is logged).
//
// # Replays
//
// Trackers retry a delivery they think failed, and GitHub offers a "Redeliver" button;
// both resend the same delivery id (X-GitHub-Delivery, Linear-Delivery,
// X-Atlassian-Webhook-Identifier). The receiver remembers the ids of authentic,
// well-formed deliveries for Options.ReplayWindow (24 h by default, at most 100,000 ids)
// and answers a repeat with 200 replayed without calling Deliver. Only
// requests that passed verification are remembered, so forged ones cannot fill the
// memory or evict real ids. A delivery with no id (Jira Automation sends none) cannot be
// recognised again; a repeat is harmless, since it is a hint.
//
// # Why the Linear timestamp
//
// The delivery id is a header, outside what the signature covers: whoever captured one
// signed delivery could resend it under fresh ids forever. Linear puts
// webhookTimestamp (Unix milliseconds) inside the signed body, so a Linear delivery more
// than a minute from the receiver's clock, in either direction, is refused (401 stale)
// and a captured one is worth a minute. GitHub and Jira sign no time; a replayed capture
// of theirs can only make Sortie poll early, which the hint rule makes safe.
package webhook
