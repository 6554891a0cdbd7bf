package webhook

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
)

// fuzzKind maps a fuzzed byte onto a tracker kind.
func fuzzKind(k uint8) string {
	kinds := Kinds()
	return kinds[int(k)%len(kinds)]
}

func kindIndex(kind string) uint8 { return uint8(slices.Index(Kinds(), kind)) }

// FuzzParse feeds any headers and body to each kind's parser: it must never panic, end
// in one of its four results, give a reason exactly when it does not accept, and
// accept only a delivery that says which tracker sent it, what happened, and names
// well-formed issues.
func FuzzParse(f *testing.F) {
	for _, fx := range fixtures {
		f.Add(kindIndex(fx.kind), fx.event, "72d3162e-cc78-11e3-81ab-4c9367dc0958", readFixture(f, fx.file))
	}
	f.Add(kindIndex(GitHub), "issues", "", []byte(`{"action":"opened","issue":{"number":1},"repository":{"full_name":"acme/widgets"}}`))
	f.Add(kindIndex(Linear), "", "", []byte(`{"type":"Comment","action":"create","data":{"issueId":"x"},"webhookTimestamp":1767268800500}`))
	f.Add(kindIndex(Jira), "", "", []byte(`{"webhookEvent":"comment_created","issue":{"key":"PROJ-1"}}`))
	f.Add(uint8(0), "", "", []byte(`null`))
	f.Add(uint8(1), "", "", []byte(`{"issue":{"fields":[]}}`))

	f.Fuzz(func(t *testing.T, k uint8, event, id string, body []byte) {
		kind := fuzzKind(k)
		h := http.Header{}
		h.Set("X-GitHub-Event", event)
		h.Set(receivers[kind].delivery, id)
		d, result, err := Parse(kind, h, body, settingsFor(kind), testNow)
		switch result {
		case Accepted, Ignored, Malformed:
		case Stale:
			if kind != Linear {
				t.Fatalf("%s answered stale: only Linear deliveries carry a time", kind)
			}
		default:
			t.Fatalf("result %q is not one Parse gives", result)
		}
		if (err == nil) != (result == Accepted) {
			t.Fatalf("result %s with error %v: want an error exactly when not accepted", result, err)
		}
		if result != Accepted {
			if len(d.Issues) != 0 {
				t.Fatalf("%s names issues %q", result, d.Issues)
			}
			return
		}
		if d.Tracker != kind || d.Event == "" || !d.At.Equal(testNow) {
			t.Fatalf("accepted %+v: want tracker %s, an event and At %v", d, kind, testNow)
		}
		if len(id) <= maxIDLen && d.ID != id {
			t.Fatalf("accepted with ID %q, want %q", d.ID, id)
		}
		for _, part := range strings.SplitN(d.Event, ".", 2) {
			if !isName(part) {
				t.Fatalf("event %q is not a name", d.Event)
			}
		}
		for _, issue := range d.Issues {
			if !isIdentifier(strings.TrimPrefix(issue, "#")) {
				t.Fatalf("issue %q is not an identifier", issue)
			}
		}
		if kind != GitHub && len(d.Issues) != 1 {
			t.Fatalf("a %s delivery accepted naming %q, want one issue", kind, d.Issues)
		}
	})
}

// FuzzServeHTTP sends any signature, token, event, id and body to the receiver of the
// kind in force. Only the seeded path (sign) computes a valid signature; otherwise
// the fuzzed header is sent as it is. The receiver must never panic, count each
// request once, answer with a known status, and never Deliver a request whose
// signature or token, checked here apart from the package's code, is not valid.
func FuzzServeHTTP(f *testing.F) {
	for _, fx := range fixtures {
		body := readFixture(f, fx.file)
		f.Add(kindIndex(fx.kind), true, "", "", fx.event, "72d3162e-cc78-11e3-81ab-4c9367dc0958", body)
		f.Add(kindIndex(fx.kind), false, "sha256="+signHex("wrong", body), "", fx.event, "", body)
	}
	f.Add(kindIndex(Jira), false, "", testSecret, "", "", readFixture(f, "jira_issue_updated.json"))
	f.Add(kindIndex(Jira), false, "sha1=00", "guess", "", "x", []byte(`{}`))
	f.Add(kindIndex(Linear), false, "00", "", "", "", []byte(``))
	f.Add(kindIndex(GitHub), true, "", "", "ping", "", []byte(`{"zen":"x"}`))

	f.Fuzz(func(t *testing.T, k uint8, sign bool, sig, token, event, id string, body []byte) {
		kind := fuzzKind(k)
		rc := receivers[kind]
		good := rc.prefix + signHex(testSecret, body)

		h := http.Header{}
		h.Set("X-GitHub-Event", event)
		h.Set(rc.delivery, id)
		h.Set("X-Sortie-Webhook-Token", token)
		if sign {
			h.Set(rc.signature, good)
		} else {
			h.Set(rc.signature, sig)
		}
		// The oracle: a valid signature is good up to the case of ASCII letters (hex
		// digits and the prefix); a valid token is the secret, for Jira only.
		valid := sign || (sig != "" && asciiLower(sig) == good) || (kind == Jira && token == testSecret)

		var delivered []Delivery
		var counted []string
		r := New(Options{
			Settings: func() Settings { return settingsFor(kind) },
			Deliver:  func(d Delivery) { delivered = append(delivered, d) },
			Count:    func(k, r string) { counted = append(counted, k+" "+r) },
			Now:      func() time.Time { return testNow },
			Logger:   slog.New(slog.DiscardHandler),
		})
		req := httptest.NewRequest(http.MethodPost, "/webhooks/"+kind, bytes.NewReader(body))
		req.Header = h
		w := httptest.NewRecorder()
		r.ServeHTTP(w, req)

		if len(delivered) > 0 && !valid {
			t.Fatalf("delivered %+v without a valid signature or token", delivered)
		}
		if len(delivered) > 1 {
			t.Fatalf("one request delivered %d times", len(delivered))
		}
		if len(counted) != 1 || !strings.HasPrefix(counted[0], kind+" ") {
			t.Fatalf("counted %q, want one count for %s", counted, kind)
		}
		result := strings.TrimPrefix(counted[0], kind+" ")
		want := map[string]int{
			Accepted: http.StatusAccepted, Ignored: http.StatusOK, Replayed: http.StatusOK,
			Unauthorized: http.StatusUnauthorized, Stale: http.StatusUnauthorized,
			Malformed: http.StatusBadRequest, TooLarge: http.StatusRequestEntityTooLarge,
		}
		if code, ok := want[result]; !ok || w.Code != code {
			t.Fatalf("result %s answered %d", result, w.Code)
		}
		if (result == Accepted) != (len(delivered) == 1) {
			t.Fatalf("result %s with %d deliveries", result, len(delivered))
		}
		if !valid && result != Unauthorized && result != TooLarge {
			t.Fatalf("an unverified request ended %s", result)
		}
		if len(delivered) == 1 && (delivered[0].Tracker != kind || delivered[0].Event == "") {
			t.Fatalf("delivered %+v: want tracker %s and an event", delivered[0], kind)
		}
		if strings.Contains(w.Body.String(), testSecret) {
			t.Fatalf("the answer repeats the secret: %s", w.Body)
		}
	})
}

func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
