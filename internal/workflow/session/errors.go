package session

// Kind classifies a token error so the tools can map it to a response without
// matching message text.
type Kind string

// Token error kinds. Every one is a hard error: the call that presented the
// token must fail (workflow-tools-api.md, "Validation": HMAC integrity;
// workflow-server-behaviour.md §4.1).
const (
	// KindMalformed: the token is not a token of this format (empty, too long,
	// no signature, bad base64 or JSON, missing or invalid payload fields).
	KindMalformed Kind = "token_malformed"
	// KindBadSignature: the signature does not match the payload under this
	// server's key; the token was altered or issued elsewhere.
	KindBadSignature Kind = "token_signature_invalid"
	// KindUnknownSession: the signature is valid but the store holds no
	// session with the token's sid (ended, or lost across a restart).
	KindUnknownSession Kind = "session_not_found"
	// KindStale: the token was genuinely issued but a newer token has been
	// issued since; only the newest token of a session is accepted.
	KindStale Kind = "token_stale"
	// KindWorkflowMismatch: the token belongs to a different workflow than the
	// one the caller named.
	KindWorkflowMismatch Kind = "workflow_mismatch"
)

// Error is the error every token check returns. Its message is written for
// the agent that sent the token and says what to do next; it never contains
// the token itself.
type Error struct {
	Kind      Kind
	SessionID string // the token's sid, when it could be read and trusted
	msg       string
}

func (e *Error) Error() string { return e.msg }

// Is reports whether target is an *Error of the same Kind, so that
// errors.Is(err, session.ErrStale) works whatever the details.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Kind == e.Kind
}

// Sentinels for errors.Is; the errors returned carry the same Kind with a
// specific message.
var (
	ErrMalformed        = &Error{Kind: KindMalformed, msg: "session token is malformed"}
	ErrBadSignature     = &Error{Kind: KindBadSignature, msg: "session token signature verification failed"}
	ErrUnknownSession   = &Error{Kind: KindUnknownSession, msg: "session not found"}
	ErrStale            = &Error{Kind: KindStale, msg: "session token is stale"}
	ErrWorkflowMismatch = &Error{Kind: KindWorkflowMismatch, msg: "workflow mismatch"}
)
