package session

import (
	"crypto/hmac"
	"crypto/rand"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Store is the server-side record of live sessions: for each session id, its
// workflow and the sequence and signature of the one token it issued last.
// It signs every token it issues with its key. A Store is safe for
// concurrent use; it keeps sessions in memory only (the owner persists the
// latest token and calls Restore after a restart) and until Forget.
type Store struct {
	key []byte
	now func() time.Time

	mu       sync.Mutex
	sessions map[string]*record
}

type record struct {
	workflow string
	seq      uint64
	sig      string // signature part of the token issued at seq
}

// NewStore returns an empty Store signing with key, which must be at least
// KeySize bytes (a key from LoadOrCreateKey, or one the daemon passes in). now
// stamps ts and, if nil, is time.Now.
func NewStore(key []byte, now func() time.Time) (*Store, error) {
	if len(key) < KeySize {
		return nil, fmt.Errorf("session: key is %d bytes, want at least %d", len(key), KeySize)
	}
	if now == nil {
		now = time.Now
	}
	return &Store{key: append([]byte(nil), key...), now: now, sessions: map[string]*record{}}, nil
}

// Start begins a session for workflowID at workflow version and returns its
// first token (seq 0) with the payload it carries. agentID may be empty.
func (s *Store) Start(workflowID, version, agentID string) (string, Payload, error) {
	if workflowID == "" {
		return "", Payload{}, fmt.Errorf("session: start: workflow_id is required")
	}
	sid, err := newUUID()
	if err != nil {
		return "", Payload{}, fmt.Errorf("session: start: %w", err)
	}
	p := Payload{Workflow: workflowID, Version: version, SessionID: sid, AgentID: agentID,
		Pending: []string{}, TS: s.now().Unix()}
	tok, err := Sign(s.key, p)
	if err != nil {
		return "", Payload{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sessions[sid] = &record{workflow: workflowID, seq: 0, sig: sigOf(tok)}
	return tok, p, nil
}

// Verify checks token on a tool call whose workflow comes from the token: the
// signature (in constant time), that its session is known, and that it is the
// session's latest token. Every failure is a hard error of type *Error.
func (s *Store) Verify(token string) (Payload, error) {
	return s.VerifyWorkflow(token, "")
}

// VerifyWorkflow is Verify for a caller that names the workflow it expects
// (start_session with an inherited token): a token of another workflow fails
// with KindWorkflowMismatch. An empty workflowID expects none.
func (s *Store) VerifyWorkflow(token, workflowID string) (Payload, error) {
	p, err := Parse(s.key, token)
	if err != nil {
		return Payload{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.latest(p, workflowID)
	if err != nil {
		return Payload{}, err
	}
	// Each sequence is signed once, so the signature check is redundant with
	// a single Store; it keeps a token of another process sharing the key
	// (and the same sid and seq) from passing as this store's.
	if !hmac.Equal([]byte(sigOf(token)), []byte(r.sig)) {
		return Payload{}, staleError(p, r)
	}
	return p, nil
}

// latest returns the record of p's session if p carries the session's
// latest sequence, or the error saying why not. s.mu must be held.
func (s *Store) latest(p Payload, workflowID string) (*record, error) {
	r, ok := s.sessions[p.SessionID]
	if !ok {
		return nil, &Error{Kind: KindUnknownSession, SessionID: p.SessionID, msg: fmt.Sprintf(
			"session %q not found: it has ended or this server no longer knows it; call start_session(workflow_id) to begin a new session", p.SessionID)}
	}
	if workflowID != "" && p.Workflow != workflowID {
		return nil, &Error{Kind: KindWorkflowMismatch, SessionID: p.SessionID, msg: fmt.Sprintf(
			"Workflow mismatch: session token is for %q but %q was requested; call start_session(workflow_id=%q) without session_token to start a session for it",
			p.Workflow, workflowID, workflowID)}
	}
	if p.Workflow != r.workflow {
		return nil, &Error{Kind: KindWorkflowMismatch, SessionID: p.SessionID, msg: fmt.Sprintf(
			"Workflow mismatch: session token is for %q but session %q is bound to %q; call start_session(workflow_id) for a new session",
			p.Workflow, p.SessionID, r.workflow)}
	}
	if p.Seq != r.seq {
		return nil, staleError(p, r)
	}
	return r, nil
}

func staleError(p Payload, r *record) *Error {
	return &Error{Kind: KindStale, SessionID: p.SessionID, msg: fmt.Sprintf(
		"session token is stale: it was issued at sequence %d but session %q is at sequence %d, and only the newest token is accepted; "+
			"use the session_token from the most recent response (if another agent shares this session, it holds the newest token)",
		p.Seq, p.SessionID, r.seq)}
}

// Issue returns the session's next token carrying p, and the payload it
// carries. p is the payload of the session's latest token (from Verify) with
// the fields the tool changed; Issue sets Seq to the next sequence and TS to
// now, and from then on only the returned token verifies. If another token
// was issued since p's (a concurrent call with the same token), it fails with
// KindStale and issues nothing, so a session never forks. Issue trusts p's
// other fields: it is for server code, never for a payload an agent sent.
func (s *Store) Issue(p Payload) (string, Payload, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.latest(p, "")
	if err != nil {
		return "", Payload{}, err
	}
	p.Seq = r.seq + 1
	p.TS = s.now().Unix()
	if p.Pending == nil {
		p.Pending = []string{}
	}
	tok, err := Sign(s.key, p)
	if err != nil {
		return "", Payload{}, err
	}
	r.seq, r.sig = p.Seq, sigOf(tok)
	return tok, p, nil
}

// Restore re-registers the session of token, a token this store's key signed
// (the latest one the owner persisted), as current at its sequence. It is for
// reloading sessions after a restart; a session already known is replaced.
func (s *Store) Restore(token string) (Payload, error) {
	p, err := Parse(s.key, token)
	if err != nil {
		return Payload{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sessions[p.SessionID] = &record{workflow: p.Workflow, seq: p.Seq, sig: sigOf(token)}
	return p, nil
}

// Forget ends session sid: none of its tokens verify afterwards.
func (s *Store) Forget(sid string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.sessions, sid)
}

func sigOf(token string) string {
	_, sig, _ := strings.Cut(token, ".")
	return sig
}

// newUUID returns a random (version 4) UUID in its canonical text form.
func newUUID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16]), nil
}
