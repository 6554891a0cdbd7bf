package main

import (
	"strings"
	"testing"
)

// `sortie webhooks` prints what to register: the URL under server.public_url, the
// events, and the secret's variable, never its value.
func TestWebhooksCommand_PrintsWhatToRegister(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, tracker, extra string
		env                  []string
		want, not            []string
	}{
		{"github behind a proxy", "kind: github\n  project: octo/app\n  api_key: $GH_TOKEN\n  webhook_secret: $GH_HOOK_SECRET\n",
			"server: {public_url: 'https://sortie.example.com/'}\n", []string{"GH_TOKEN=t", "GH_HOOK_SECRET=hunter2-hook"},
			[]string{"URL:      https://sortie.example.com/webhooks/github", "Events:   Issues, Issue comments, Labels",
				"the value of $GH_HOOK_SECRET", "https://github.com/octo/app/settings/hooks", "every 5m0s while deliveries arrive"},
			[]string{"hunter2-hook", "Note:"}},
		{"jira on loopback", "kind: jira\n  project: PROJ\n  api_key: $JIRA_KEY\n  endpoint: https://jira.example.com\n  webhook_secret: $JIRA_HOOK\n",
			"", []string{"JIRA_KEY=a:b", "JIRA_HOOK=s3cret-value"},
			[]string{"URL:      http://127.0.0.1:7678/webhooks/jira", "Comment: created", "project = PROJ", "X-Sortie-Webhook-Token",
				"Note:     the daemon listens on 127.0.0.1, which jira cannot reach"},
			[]string{"s3cret-value"}},
		{"linear without a secret", "kind: linear\n  team_key: ENG\n", "", []string{"LINEAR_API_KEY=k"},
			[]string{"/webhooks/linear", "Secret:   not set: the daemon answers 404", "webhook_secret: $LINEAR_WEBHOOK_SECRET"}, nil},
		{"file tracker", "kind: file\n  path: issues.json\n", "", nil,
			[]string{"The file tracker needs no webhook"}, []string{"URL:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			wf := writeFile(t, dir, "WORKFLOW.md", "---\ntracker:\n  "+tt.tracker+"  active_states: [Todo]\n"+tt.extra+
				"agent: {kind: mock}\n---\nWork.\n")
			r := runSortie(t, dir, testEnv(t.TempDir(), tt.env...), "webhooks", wf)
			if r.code != exitOK {
				t.Fatalf("sortie webhooks: %s", r)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.stdout, w) {
					t.Errorf("output lacks %q:\n%s", w, r.stdout)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(r.stdout+r.stderr, n) {
					t.Errorf("output has %q:\n%s", n, r)
				}
			}
		})
	}
}

func TestWebhooksCommand_InvalidWorkflowFails(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	wf := writeFile(t, dir, "WORKFLOW.md", "---\ntracker: {kind: github}\nagent: {kind: mock}\n---\nWork.\n")
	r := runSortie(t, dir, testEnv(t.TempDir()), "webhooks", wf)
	if r.code != exitFailure || !strings.Contains(r.stderr, "is not valid") || !strings.Contains(r.stderr, "tracker.api_key") {
		t.Fatalf("sortie webhooks on an invalid file: %s", r)
	}
}
