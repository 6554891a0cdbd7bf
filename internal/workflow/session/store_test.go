package session

import (
	"bytes"
	"encoding/base64"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

var testKey = bytes.Repeat([]byte{0x5a}, KeySize)

func newTestStore(t testing.TB, key []byte) *Store {
	t.Helper()
	s, err := NewStore(key, func() time.Time { return time.Unix(1_750_000_000, 0) })
	if err != nil {
		t.Fatalf("NewStore: %v", err)
	}
	return s
}

func wantKind(t *testing.T, err error, sentinel *Error) {
	t.Helper()
	if !errors.Is(err, sentinel) {
		t.Fatalf("error = %v, want kind %s", err, sentinel.Kind)
	}
	var e *Error
	if !errors.As(err, &e) || e.Error() == "" {
		t.Fatalf("error %v is not a *Error with a message", err)
	}
}

func TestStore_RoundTrip(t *testing.T) {
	s := newTestStore(t, testKey)
	tok, start, err := s.Start("work-package", "3.5.0", "orchestrator")
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	got, err := s.Verify(tok)
	if err != nil {
		t.Fatalf("Verify(start token): %v", err)
	}
	if got.Workflow != "work-package" || got.Version != "3.5.0" || got.AgentID != "orchestrator" ||
		got.Seq != 0 || got.TS != 1_750_000_000 || got.SessionID != start.SessionID || len(got.Pending) != 0 {
		t.Fatalf("start payload = %+v", got)
	}
	if len(got.SessionID) != 36 || got.SessionID[14] != '4' {
		t.Fatalf("sid %q is not a version 4 UUID", got.SessionID)
	}

	got.Activity, got.Skill, got.Cond = "plan", "planning", "approved == true"
	got.Pending, got.PendingAt = []string{"approve-plan", "scope"}, 1_750_000_000
	tok2, issued, err := s.Issue(got)
	if err != nil {
		t.Fatalf("Issue: %v", err)
	}
	if issued.Seq != 1 {
		t.Fatalf("issued seq = %d, want 1", issued.Seq)
	}
	back, err := s.Verify(tok2)
	if err != nil {
		t.Fatalf("Verify(issued): %v", err)
	}
	if back.Activity != "plan" || back.Skill != "planning" || back.Cond != "approved == true" ||
		strings.Join(back.Pending, ",") != "approve-plan,scope" || back.PendingAt != 1_750_000_000 || back.Seq != 1 {
		t.Fatalf("round trip payload = %+v", back)
	}
	if strings.ContainsAny(tok2, "{ ") || strings.Contains(tok2, "work-package") {
		t.Fatalf("token %q is not opaque base64url", tok2)
	}
}

func TestStore_TokenShape(t *testing.T) {
	s := newTestStore(t, testKey)
	tok, _, err := s.Start("wf", "1.0.0", "")
	if err != nil {
		t.Fatal(err)
	}
	body, sig, ok := strings.Cut(tok, ".")
	if !ok || len(sig) != 64 || strings.ToLower(sig) != sig {
		t.Fatalf("token %q: want base64url \".\" 64 lower-case hex digits", tok)
	}
	raw, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"wf":"wf","act":"","skill":"","cond":"","v":"1.0.0","seq":0,"ts":1750000000,"sid":"`
	if !strings.HasPrefix(string(raw), want) || !strings.HasSuffix(string(raw), `","aid":"","pcp":[],"pcpt":0}`) {
		t.Fatalf("payload JSON = %s, want canonical field order starting %s", raw, want)
	}
}

func TestStore_RejectsAlteredTokens(t *testing.T) {
	s := newTestStore(t, testKey)
	tok, _, err := s.Start("work-package", "1.0.0", "")
	if err != nil {
		t.Fatal(err)
	}
	body, sig, _ := strings.Cut(tok, ".")

	// A forged payload with an empty pcp, signed with the wrong key.
	other := newTestStore(t, bytes.Repeat([]byte{1}, KeySize))
	otherTok, _, _ := other.Start("work-package", "1.0.0", "")
	tamperedBody := []byte(body)
	tamperedBody[len(tamperedBody)/2] ^= 0x01

	flip := []byte(sig)
	if flip[0] == 'a' {
		flip[0] = 'b'
	} else {
		flip[0] = 'a'
	}
	cases := []struct {
		name  string
		token string
		want  *Error
	}{
		{"empty", "", ErrMalformed},
		{"no signature", body, ErrMalformed},
		{"empty signature", body + ".", ErrMalformed},
		{"empty payload", "." + sig, ErrMalformed},
		{"tampered payload", string(tamperedBody) + "." + sig, ErrBadSignature},
		{"tampered signature", body + "." + string(flip), ErrBadSignature},
		{"upper-case signature", body + "." + strings.ToUpper(sig), ErrBadSignature},
		{"truncated signature", tok[:len(tok)-1], ErrBadSignature},
		{"truncated payload", body[1:] + "." + sig, ErrBadSignature},
		{"extra dot", tok + ".x", ErrBadSignature},
		{"wrong key", otherTok, ErrBadSignature},
		{"too long", strings.Repeat("a", MaxTokenLen+1), ErrMalformed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.Verify(tc.token)
			wantKind(t, err, tc.want)
		})
	}
}

func TestStore_ReplayedOlderTokenIsStale(t *testing.T) {
	s := newTestStore(t, testKey)
	tok0, p, _ := s.Start("work-package", "1.0.0", "")
	// next_activity arms the gate; the start token has an empty pcp.
	p.Activity, p.Pending = "plan", []string{"approve-plan"}
	tok1, p1, err := s.Issue(p)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Verify(tok0)
	wantKind(t, err, ErrStale)
	if !strings.Contains(err.Error(), "sequence 0") || !strings.Contains(err.Error(), "sequence 1") {
		t.Fatalf("stale error %q does not name both sequences", err)
	}
	// Issuing from the old payload is refused as well.
	p.Seq = 0
	if _, _, err := s.Issue(p); !errors.Is(err, ErrStale) {
		t.Fatalf("Issue from seq 0 after seq 1: %v, want stale", err)
	}
	if _, err := s.Verify(tok1); err != nil {
		t.Fatalf("newest token: %v", err)
	}
	// Even a verbatim replay of the previous newest token fails after one more step.
	if _, _, err := s.Issue(p1); err != nil {
		t.Fatal(err)
	}
	_, err = s.Verify(tok1)
	wantKind(t, err, ErrStale)
}

func TestStore_WorkflowMismatch(t *testing.T) {
	s := newTestStore(t, testKey)
	tok, _, _ := s.Start("work-package", "1.0.0", "")
	_, err := s.VerifyWorkflow(tok, "meta")
	wantKind(t, err, ErrWorkflowMismatch)
	if !strings.Contains(err.Error(), `"work-package"`) || !strings.Contains(err.Error(), `"meta"`) {
		t.Fatalf("mismatch error %q does not name both workflows", err)
	}
	if _, err := s.VerifyWorkflow(tok, "work-package"); err != nil {
		t.Fatalf("matching workflow: %v", err)
	}
}

func TestStore_UnknownSession(t *testing.T) {
	s := newTestStore(t, testKey)
	tok, p, _ := s.Start("work-package", "1.0.0", "")
	s.Forget(p.SessionID)
	_, err := s.Verify(tok)
	wantKind(t, err, ErrUnknownSession)
	if _, _, err := s.Issue(p); !errors.Is(err, ErrUnknownSession) {
		t.Fatalf("Issue after Forget: %v, want unknown session", err)
	}
}

func TestStore_RestoreAcceptsOnlyTheRestoredToken(t *testing.T) {
	s := newTestStore(t, testKey)
	tok0, p, _ := s.Start("work-package", "1.0.0", "")
	tok1, _, _ := s.Issue(p)

	restarted := newTestStore(t, testKey)
	if _, err := restarted.Restore(tok1); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if _, err := restarted.Verify(tok1); err != nil {
		t.Fatalf("restored token: %v", err)
	}
	_, err := restarted.Verify(tok0)
	wantKind(t, err, ErrStale)
}

func TestStore_ConcurrentIssueFromOneTokenDoesNotFork(t *testing.T) {
	s := newTestStore(t, testKey)
	tok, _, _ := s.Start("work-package", "1.0.0", "")
	const n = 8
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			p, err := s.Verify(tok)
			if err == nil {
				_, _, err = s.Issue(p)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	ok := 0
	for err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, ErrStale):
			t.Errorf("unexpected error: %v", err)
		}
	}
	if ok != 1 {
		t.Fatalf("%d of %d concurrent calls with one token advanced the session, want exactly 1", ok, n)
	}
}

func TestNewStore_RejectsShortKey(t *testing.T) {
	if _, err := NewStore(make([]byte, KeySize-1), nil); err == nil {
		t.Fatal("NewStore accepted a 31-byte key")
	}
}

// FuzzVerify checks that Verify never panics and that nothing but the token
// the store issued last for a session verifies.
func FuzzVerify(f *testing.F) {
	s := newTestStore(f, testKey)
	tok0, p, _ := s.Start("work-package", "1.0.0", "agent")
	p.Activity, p.Pending = "plan", []string{"approve-plan"}
	tok1, _, _ := s.Issue(p)
	other := newTestStore(f, bytes.Repeat([]byte{1}, KeySize))
	otherTok, _, _ := other.Start("work-package", "1.0.0", "")
	for _, seed := range []string{tok0, tok1, otherTok, "", ".", "a.b", tok1 + ".", strings.ToUpper(tok1), tok1[1:]} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, token string) {
		got, err := s.Verify(token)
		if err == nil && token != tok1 {
			t.Fatalf("Verify accepted %q (payload %+v); only %q was current", token, got, tok1)
		}
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Kind == "" {
				t.Fatalf("Verify error %v is not a *Error with a kind", err)
			}
		}
	})
}
