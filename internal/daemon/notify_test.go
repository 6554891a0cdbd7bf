package daemon

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"go.yaml.in/yaml/v3"

	"sortie/internal/notify"
)

// TestDeliverAgentMessage_FilteredOutIsNotDelivered: a notify_operator message that
// every backend filters out by severity or event is answered "not delivered" with the
// reason, and nothing is posted; one a backend takes is posted and names the backend.
func TestDeliverAgentMessage_FilteredOutIsNotDelivered(t *testing.T) {
	var posts atomic.Int32
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		posts.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer hook.Close()
	var raw map[string]any
	src := "notifications:\n  - kind: webhook\n    name: ops\n    url: " + hook.URL + "\n    min_severity: warning\n" +
		"  - kind: webhook\n    name: pager\n    url: " + hook.URL + "\n    events: [blocked]\n"
	if err := yaml.Unmarshal([]byte(src), &raw); err != nil {
		t.Fatal(err)
	}
	n, err := notify.Parse(raw["notifications"], func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	res, err := deliverAgentMessage(ctx, n, notify.Notification{Event: notify.EventAgent, Message: "fyi"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Delivered || !strings.Contains(res.Reason, "ops takes severity warning and above") ||
		!strings.Contains(res.Reason, "pager takes only the events blocked") {
		t.Errorf("an info message both backends filter out: %+v, want not delivered, naming both filters", res)
	}
	if got := posts.Load(); got != 0 {
		t.Errorf("%d posts for a message no backend takes, want 0", got)
	}

	res, err = deliverAgentMessage(ctx, n, notify.Notification{Event: notify.EventAgent, Severity: "critical", Message: "prod down"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Delivered || res.Reason != "" || len(res.Backends) != 1 || res.Backends[0] != "ops" {
		t.Errorf("a critical message: %+v, want delivered to ops", res)
	}
	if got := posts.Load(); got != 1 {
		t.Errorf("%d posts, want 1 (ops)", got)
	}
}
