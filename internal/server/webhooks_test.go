package server

import (
	"net/http"
	"sync"
	"testing"

	"sortie/internal/webhook"
)

// fakeReceiver stands for the webhook receiver: it answers 202 and says it was reached.
type fakeReceiver struct {
	mu      sync.Mutex
	reached int
	status  []webhook.Status
}

func (f *fakeReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.reached++
	f.mu.Unlock()
	w.WriteHeader(http.StatusAccepted)
}

func (f *fakeReceiver) Status() []webhook.Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.status
}

func (f *fakeReceiver) set(s ...webhook.Status) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.status = s
}

// A tracker's delivery carries no operator token and names the public host it was sent
// to; the signature is its guard, so /webhooks/ is served without the token (and, with
// no token set, whatever the Host). Every other route still needs the token.
func TestWebhooks_ServedWithoutTheTokenOnly(t *testing.T) {
	recv := &fakeReceiver{}
	f := newFixture(t, func(o *Options) { withToken(o); o.Webhooks = recv })
	r := request(http.MethodPost, "/webhooks/github")
	r.Host = "sortie.example.com"
	if w := f.serve(r); w.Code != http.StatusAccepted || recv.reached != 1 {
		t.Fatalf("POST /webhooks/github without a token = %d (receiver reached %d times), want 202 from the receiver", w.Code, recv.reached)
	}
	for _, p := range protected {
		wantError(t, f.serve(request(p.method, p.path)), http.StatusUnauthorized, codeUnauthorized)
	}

	// Without a token (loopback only), a public Host is refused everywhere but here.
	local := &fakeReceiver{}
	g := newFixture(t, func(o *Options) { o.Webhooks = local })
	r = request(http.MethodPost, "/webhooks/jira")
	r.Host = "hooks.example.com"
	if w := g.serve(r); w.Code != http.StatusAccepted || local.reached != 1 {
		t.Fatalf("POST /webhooks/jira with a public Host = %d, want the receiver's 202", w.Code)
	}
	r = request(http.MethodGet, "/api/v1/state")
	r.Host = "hooks.example.com"
	wantError(t, g.serve(r), http.StatusForbidden, codeForbiddenHost)
}

// Without a receiver, /webhooks/ is an ordinary protected path.
func TestWebhooks_NoReceiverNoRoute(t *testing.T) {
	f := newFixture(t, withToken)
	wantError(t, f.serve(request(http.MethodPost, "/webhooks/github")), http.StatusUnauthorized, codeUnauthorized)
}

// /api/v1/state shows the receiver's last delivery per tracker, and [] before any.
func TestWebhooks_StateShowsTheLastDelivery(t *testing.T) {
	recv := &fakeReceiver{}
	f := newFixture(t, func(o *Options) { o.Webhooks = recv })
	var st struct {
		Webhooks []webhook.Status `json:"webhooks"`
	}
	w := f.get(t, "/api/v1/state")
	decode(t, w, &st)
	if st.Webhooks == nil || len(st.Webhooks) != 0 {
		t.Fatalf("webhooks before any delivery = %#v, want []", st.Webhooks)
	}
	recv.set(webhook.Status{Tracker: "github", LastAt: t0, LastEvent: "issues.opened", LastResult: webhook.Accepted,
		LastAcceptedAt: t0, Counts: map[string]int64{webhook.Accepted: 1}})
	decode(t, f.get(t, "/api/v1/state"), &st)
	if len(st.Webhooks) != 1 || st.Webhooks[0].LastEvent != "issues.opened" || st.Webhooks[0].Counts[webhook.Accepted] != 1 {
		t.Fatalf("webhooks = %+v", st.Webhooks)
	}
}
