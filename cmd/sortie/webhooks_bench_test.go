package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"sortie/internal/testkit/fakegithub"
)

// BenchmarkWebhook_DeliveryToAgentStart measures, on the real daemon with a fake
// GitHub and polling at 10 minutes, the time from posting a signed "issues opened"
// delivery to the agent's session_started event on the live feed: the poll the
// delivery causes, the dispatch, the workspace, the confined agent's start. Each
// iteration files a new issue; the mock agent's one turn hands it off, so slots free
// up. Deliveries are 300 ms apart (untimed), past the daemon's 250 ms between the polls
// deliveries cause. Reported: p50-ms and p99-ms over the iterations (run with
// -benchtime 300x for a meaningful p99; docs/performance.md).
func BenchmarkWebhook_DeliveryToAgentStart(b *testing.B) {
	gh := fakegithub.New(b)
	dir := b.TempDir()
	port := freePort(b)
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	wf := writeFile(b, dir, "WORKFLOW.md", fmt.Sprintf(`---
tracker:
  kind: github
  project: %s
  api_key: %s
  endpoint: %s
  webhook_secret: $HOOK_SECRET
  active_states: [todo]
  terminal_states: [done]
  handoff_state: review
polling:
  interval_ms: 600000
server:
  port: %d
agent:
  kind: mock
  max_turns: 1
  max_concurrent_agents: 8
workspace:
  root: ./ws
db_path: ./sortie.db
mock:
  delay_ms: 0
---
Work on {{ .issue.identifier }}.
`, gh.Project(), fakegithub.Token, gh.URL(), port))
	d := startDaemon(b, testEnv(b.TempDir(), "HOOK_SECRET="+hookSecret), wf)
	waitHTTP(b, d, base+"/livez")
	token := daemonToken(b, filepath.Join(dir, "sortie.db"))
	started := followSessionStarts(b, base, token)

	owner, repo, _ := strings.Cut(gh.Project(), "/")
	var samples []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// Deliveries a tracker sends for separate changes: further apart than the 250 ms
		// the daemon leaves between the polls deliveries cause (a burst is measured by
		// the orchestrator's tests, not here).
		b.StopTimer()
		time.Sleep(300 * time.Millisecond)
		b.StartTimer()
		n := int64(i + 1)
		is := gh.AddIssue(n, "Filed just now", "open", "todo")
		body := fmt.Appendf(nil, `{"action":"opened","issue":{"id":%d,"number":%d,"title":"Filed just now","state":"open",`+
			`"labels":[{"name":"todo"}],"user":{"login":"octocat","id":1,"type":"User"}},`+
			`"repository":{"id":1296269,"name":"%s","full_name":"%s","owner":{"login":"%s"}},"sender":{"login":"octocat","id":1,"type":"User"}}`,
			is.ID, n, repo, gh.Project(), owner)
		h := http.Header{"X-Github-Event": {"issues"}, "X-Github-Delivery": {deliveryID()}}
		h.Set("X-Hub-Signature-256", "sha256="+hmacHex(hookSecret, body))
		sent := time.Now()
		if code := postDelivery(b, base+"/webhooks/github", body, h); code != http.StatusAccepted {
			b.Fatalf("delivery %d: HTTP %d", n, code)
		}
		want, seen := strconv.FormatInt(n, 10), false
		for ident := range started {
			if seen = ident == want; seen {
				break
			}
		}
		if !seen {
			b.Fatalf("the live feed ended before issue %d's agent started:\n%s", n, d.stderrText())
		}
		samples = append(samples, time.Since(sent))
	}
	b.StopTimer()
	slices.Sort(samples)
	pct := func(p float64) float64 {
		return float64(samples[min(len(samples)-1, int(p*float64(len(samples))))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}

// followSessionStarts reads the daemon's live feed and sends the identifier of each
// issue whose agent session started.
func followSessionStarts(b *testing.B, base, token string) <-chan string {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v1/events", nil)
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Fatalf("GET /api/v1/events: %v %v", resp, err)
	}
	out := make(chan string, 64)
	go func() {
		defer resp.Body.Close()
		defer close(out)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var a struct {
				Kind       string `json:"kind"`
				Identifier string `json:"issue_identifier"`
				Event      struct {
					Type string `json:"type"`
				} `json:"event"`
			}
			if json.Unmarshal([]byte(data), &a) == nil && a.Kind == "agent_event" && a.Event.Type == "session_started" {
				select {
				case out <- a.Identifier:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out
}
