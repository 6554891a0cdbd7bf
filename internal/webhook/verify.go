package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// ErrUnauthorized is wrapped by every error of Verify: the request does not prove it
// comes from the tracker holding the secret.
var ErrUnauthorized = errors.New("webhook: unauthorized")

// Verify reports whether h and body prove knowledge of secret the way tracker kind
// signs its deliveries: nil, or an error wrapping ErrUnauthorized that names the header
// and the fix but never repeats a header's value. GitHub and Linear must carry an
// HMAC-SHA256 of body in hex; Jira either that (X-Hub-Signature: sha256=…, sha1
// refused) or X-Sortie-Webhook-Token equal to secret. Comparisons take constant time.
// An empty secret verifies nothing.
func Verify(kind, secret string, h http.Header, body []byte) error {
	rc, ok := receivers[kind]
	if !ok {
		return fmt.Errorf("%w: no webhook receiver for tracker kind %q (known: %s)", ErrUnauthorized, kind, strings.Join(Kinds(), ", "))
	}
	if secret == "" {
		return fmt.Errorf("%w: %s: tracker.webhook_secret is empty, so no delivery can be verified; set it", ErrUnauthorized, kind)
	}
	sig, tok := h.Get(rc.signature), ""
	if rc.token != "" {
		tok = h.Get(rc.token)
	}
	if sig == "" && tok == "" {
		return fmt.Errorf("%w: %s: %s", ErrUnauthorized, kind, rc.missing())
	}
	// Both are checked when both are sent, so the time taken says nothing about which
	// one matched.
	sigOK := sig != "" && signatureValid(rc.prefix, sig, secret, body)
	tokOK := tok != "" && tokenValid(tok, secret)
	if sigOK || tokOK {
		return nil
	}
	if sig != "" && !hasPrefixFold(sig, rc.prefix) {
		return fmt.Errorf("%w: %s: the %s header is not %s<hex HMAC-SHA256>: only SHA-256 signatures are accepted", ErrUnauthorized, kind, rc.signature, rc.prefix)
	}
	what := "the " + rc.signature + " header does not match the body signed with tracker.webhook_secret"
	if sig == "" {
		what = "the " + rc.token + " header is not tracker.webhook_secret"
	}
	return fmt.Errorf("%w: %s: %s; set the webhook's secret in the tracker to tracker.webhook_secret", ErrUnauthorized, kind, what)
}

// presented reports whether h carries a signature or token at all: without one the
// request is refused before its body is read.
func (rc receiver) presented(h http.Header) bool {
	return h.Get(rc.signature) != "" || (rc.token != "" && h.Get(rc.token) != "")
}

// missing says which header a request lacked.
func (rc receiver) missing() string {
	if rc.token != "" {
		return fmt.Sprintf("neither the %s nor the %s header is present; set the webhook's secret in the tracker to tracker.webhook_secret", rc.signature, rc.token)
	}
	return fmt.Sprintf("the %s header is missing; set the webhook's secret in the tracker to tracker.webhook_secret", rc.signature)
}

// signatureValid reports whether header is prefix followed by the hex HMAC-SHA256 of
// body keyed with secret.
func signatureValid(prefix, header, secret string, body []byte) bool {
	if !hasPrefixFold(header, prefix) {
		return false
	}
	got, err := hex.DecodeString(header[len(prefix):])
	if err != nil {
		return false
	}
	return hmac.Equal(got, sign(secret, body))
}

// tokenValid compares token with secret in constant time, of their contents and of
// their lengths: both are hashed first, so a shorter guess takes as long as a longer one.
func tokenValid(token, secret string) bool {
	a, b := sha256.Sum256([]byte(token)), sha256.Sum256([]byte(secret))
	return hmac.Equal(a[:], b[:])
}

// sign returns HMAC-SHA256(body) keyed with secret: what a tracker puts, in hex, in its
// signature header.
func sign(secret string, body []byte) []byte {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return mac.Sum(nil)
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}
