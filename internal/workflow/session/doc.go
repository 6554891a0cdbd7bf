// Package session owns the workflow tools' session tokens: their signed
// encoding, the HMAC key they are signed with, and the server-side record of
// each session's sequence that decides which token is current. It does not
// know about workflows, activities or checkpoints beyond carrying their ids in
// the payload; the checkpoint gate and validation warnings belong to the tools
// that read the Payload.
//
// # Token format
//
// A token is the spec's payload (workflow-tools-api.md, "Session Token"),
// interoperable in shape with the upstream server:
//
//	base64url(JSON(payload)) "." hex(HMAC-SHA256(key, base64url(JSON(payload))))
//
// base64url is RFC 4648 §5 without padding (base64.RawURLEncoding); the MAC is
// taken over the base64url text exactly as it appears in the token, and is
// written as 64 lowercase hex digits. Where the spec is silent this package
// fixes one encoding: compact JSON (no whitespace) of an object with exactly
// the eleven keys in the spec's order
//
//	{"wf":…,"act":…,"skill":…,"cond":…,"v":…,"seq":…,"ts":…,"sid":…,"aid":…,"pcp":[…],"pcpt":…}
//
// where seq is an unsigned decimal integer, ts and pcpt are Unix seconds, and
// pcp is always an array (never null). Decoding is strict: a token with a
// missing, null, extra or mistyped field, padding, non-canonical base64 or an
// upper-case signature is rejected, so no two strings verify as the same
// token. Tokens are signed, not encrypted: anyone can read the payload.
//
// # Replay
//
// Upstream tokens are self-contained, so any earlier valid token can be
// replayed, for example one issued before next_activity armed pcp, to skip the
// checkpoint gate (workflow-server-behaviour.md §4). Here a Store remembers,
// per session id, the sequence and signature of the one token it issued last;
// Verify accepts only that token and Issue only advances from it, so an older
// token (or a second holder of the same token racing the first) gets a stale
// error instead of a session state of its choosing.
package session
