package orchestrator

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"sortie/internal/agent"
	"sortie/internal/agentsock"
	"sortie/internal/config"
	"sortie/internal/mcp"
	"sortie/internal/prompt"
	"sortie/internal/store"
	"sortie/internal/workspace"
)

// fakeGranter records the tokens the worker asks for and gives back.
type fakeGranter struct {
	mu      sync.Mutex
	granted []agentsock.Session
	live    map[string]agentsock.Session
}

func (g *fakeGranter) Grant(s agentsock.Session) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.live == nil {
		g.live = map[string]agentsock.Session{}
	}
	g.granted = append(g.granted, s)
	tok := "token-" + s.Identifier
	g.live[tok] = s
	return tok
}

func (g *fakeGranter) Revoke(tok string) {
	g.mu.Lock()
	delete(g.live, tok)
	g.mu.Unlock()
}

func (g *fakeGranter) Path() string { return "/run/sortie/agent.sock" }

func (g *fakeGranter) counts() (granted, live int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.granted), len(g.live)
}

type mcpFile struct {
	MCPServers map[string]struct {
		Type    string            `json:"type"`
		Command string            `json:"command"`
		Args    []string          `json:"args"`
		Env     map[string]string `json:"env"`
	} `json:"mcpServers"`
}

func TestExtensions_SessionGetsMCPConfigStateAndToken(t *testing.T) {
	operator := filepath.Join(t.TempDir(), "mcp-servers.json")
	os.WriteFile(operator, []byte(`{"mcpServers":{"github":{"command":"gh-mcp","args":["--stdio"]}}}`), 0o644)
	cfg := testConfig(t, func(c *config.Config) {
		c.Agent.MaxTurns = 2
		c.SecretEnv = []string{"SORTIE_TRACKER_API_KEY", "SLACK_HOOK"}
		c.Extensions = map[string]any{"mock": map[string]any{
			"mcp_config": operator, "input_tokens_per_turn": 100, "output_tokens_per_turn": 10,
		}}
	})
	g := &fakeGranter{}
	docs := []prompt.ToolDoc{{Name: "sortie_status", Description: "turns and tokens of this session"}}
	h := newHarness(t, cfg, harnessOptions{pollOnly: true,
		environ: append(os.Environ(), "SORTIE_TRACKER_API_KEY=tracker-secret", "SLACK_HOOK=https://hooks.example/secret", "SORTIE_REPO_URL=https://git.example/repo", "SORTIE_TRACKER_PROJECT=PROJ",
			"SORTIE_SERVER_AUTH_TOKEN=operator-secret", "SORTIE_ENV_FILE=/srv/sortie/.env", "SORTIE_DB_PATH=/srv/sortie/state.db",
			"SORTIE_POLLING_INTERVAL_MS=5000", "SORTIE_AGENT_MAX_TOKENS=90000", "SORTIE_TOOL_TIMEOUT_MS=1000"),
		ext: workspace.Extensions{Executable: "/opt/sortie/bin/sortie", Socket: g,
			PromptTools: func(map[string]string) []prompt.ToolDoc { return docs }}})
	h.trk.Put(issue("EXT-1", "Todo"))
	h.start()
	h.awaitStep(StepExit, "EXT-1")

	starts := h.agent.startsOf("EXT-1")
	if len(starts) != 1 {
		t.Fatalf("sessions = %d", len(starts))
	}
	ws := starts[0].Workspace
	wantPath := filepath.Join(ws, ".sortie", "mcp.json")
	if starts[0].MCPConfigPath != wantPath {
		t.Errorf("MCPConfigPath = %q, want %q", starts[0].MCPConfigPath, wantPath)
	}
	raw, err := os.ReadFile(wantPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"tracker-secret", "hooks.example/secret"} {
		if strings.Contains(string(raw), secret) {
			t.Errorf(".sortie/mcp.json contains the secret %q:\n%s", secret, raw)
		}
	}
	if fi, _ := os.Stat(wantPath); fi.Mode().Perm() != 0o600 {
		t.Errorf("mcp.json mode = %v, want 0600", fi.Mode().Perm())
	}
	var f mcpFile
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	tools, ok := f.MCPServers[agent.ToolsServer]
	if !ok || tools.Command != "/opt/sortie/bin/sortie" || !slices.Equal(tools.Args, []string{"mcp-server", "--workflow", cfg.Path}) {
		t.Errorf("sortie-tools entry = %+v", tools)
	}
	if _, ok := f.MCPServers["github"]; !ok {
		t.Errorf("the operator's server was not merged: %v", f.MCPServers)
	}
	// The session's identity, the socket and the token, and nothing else of the
	// daemon's environment: no credential, no SORTIE_* override (the sidecar asks the
	// daemon for the budget), no path to the daemon's private state (the run history
	// comes through the socket).
	env := tools.Env
	want := map[string]string{
		"SORTIE_WORKSPACE": ws, "SORTIE_ISSUE_ID": "EXT-1", "SORTIE_ISSUE_IDENTIFIER": "EXT-1",
		"SORTIE_RUN_ID": env["SORTIE_RUN_ID"], "SORTIE_SESSION_ID": "", "SORTIE_ATTEMPT": "",
		agentsock.EnvSocket: "/run/sortie/agent.sock", agentsock.EnvToken: "token-EXT-1",
	}
	if !maps.Equal(env, want) {
		t.Errorf("the sidecar's env in .sortie/mcp.json =\n%v\nwant\n%v", env, want)
	}
	for _, leak := range []string{"operator-secret", "/srv/sortie", "SORTIE_DB_PATH", "SORTIE_ENV_FILE", "SORTIE_SERVER_AUTH_TOKEN",
		"SORTIE_REPO_URL", "SORTIE_TRACKER_", "SORTIE_POLLING_INTERVAL_MS", "SORTIE_AGENT_MAX_TOKENS", "SORTIE_TOOL_TIMEOUT_MS"} {
		if strings.Contains(string(raw), leak) {
			t.Errorf(".sortie/mcp.json contains %q:\n%s", leak, raw)
		}
	}
	// The agent's own environment: the daemon's minus every SORTIE_*, plus the
	// session's identity.
	for _, kv := range starts[0].Env {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "SORTIE_") && !slices.Contains([]string{"SORTIE_WORKSPACE", "SORTIE_ISSUE_ID",
			"SORTIE_ISSUE_IDENTIFIER", "SORTIE_ATTEMPT", "SORTIE_RUN_ID"}, name) {
			t.Errorf("the agent's environment has %s", kv)
		}
	}
	if env["SORTIE_RUN_ID"] == "" || env["SORTIE_RUN_ID"] == "0" {
		t.Errorf("SORTIE_RUN_ID = %q", env["SORTIE_RUN_ID"])
	}

	if gi, err := os.ReadFile(filepath.Join(ws, ".sortie", ".gitignore")); err != nil || strings.TrimSpace(string(gi)) != "*" {
		t.Errorf(".sortie/.gitignore = %q, %v", gi, err)
	}

	var st workspace.State
	data, err := os.ReadFile(filepath.Join(ws, ".sortie", "state.json"))
	if err != nil || json.Unmarshal(data, &st) != nil {
		t.Fatalf("state.json: %s, %v", data, err)
	}
	if st.TurnNumber != 2 || st.MaxTurns != 2 || st.IssueID != "EXT-1" || st.Attempt != nil || st.SessionID == "" {
		t.Errorf("state.json = %+v", st)
	}
	if st.Tokens.Total != 220 {
		t.Errorf("state.json tokens = %+v, want 220 in total after two turns", st.Tokens)
	}

	if granted, live := g.counts(); granted != 1 || live != 0 {
		t.Errorf("tokens granted %d, still live %d; want 1 and 0 (revoked with the session)", granted, live)
	}
	// The first turn's prompt lists the tools; the second does not.
	prompts := h.agent.promptsOf("EXT-1")
	if len(prompts) != 2 || !strings.Contains(prompts[0], "sortie_status") || strings.Contains(prompts[1], "sortie_status") {
		t.Errorf("prompts = %q", prompts)
	}
}

// TestExtensions_FirstPromptListsTheToolsTheSessionGets: the first prompt lists the
// tools of the sidecar as configured for that session. A local session has the agent
// socket and its token, so its sidecar offers the daemon's Tier 2 and workflow tools;
// an agent on an SSH host cannot reach the socket, gets no token, and is not told
// about tools it cannot use.
func TestExtensions_FirstPromptListsTheToolsTheSessionGets(t *testing.T) {
	caps := agentsock.Capabilities{TrackerAPI: true, NotifyOperator: true, Workflows: true, Runs: true}
	tools := func(env map[string]string) []prompt.ToolDoc {
		return mcp.ToolDocs(mcp.Offered(mcp.SessionGates(env, caps)))
	}
	tier2 := []string{"tracker_api", "notify_operator", "start_session"}
	tests := []struct {
		name     string
		hosts    []string
		listed   []string
		unlisted []string
	}{
		{"local", nil, append([]string{"sortie_status", "workspace_history"}, tier2...), nil},
		{"ssh host", []string{"builder-1"}, []string{"sortie_status"}, append([]string{"workspace_history"}, tier2...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(t, func(c *config.Config) { c.Worker.SSHHosts = tt.hosts })
			g := &fakeGranter{}
			h := newHarness(t, cfg, harnessOptions{pollOnly: true,
				ext: workspace.Extensions{Executable: "/opt/sortie/bin/sortie", Socket: g, PromptTools: tools}})
			h.trk.Put(issue("EXT-1", "Todo"))
			h.start()
			h.awaitStep(StepExit, "EXT-1")
			prompts := h.agent.promptsOf("EXT-1")
			if len(prompts) != 1 {
				t.Fatalf("prompts = %q, want one", prompts)
			}
			for _, name := range tt.listed {
				if !strings.Contains(prompts[0]+"\n", "\n### "+name+"\n") {
					t.Errorf("the first prompt does not list %s, which the session's sidecar offers:\n%s", name, prompts[0])
				}
			}
			for _, name := range tt.unlisted {
				if strings.Contains(prompts[0]+"\n", "\n### "+name+"\n") {
					t.Errorf("the first prompt lists %s, which the session's sidecar cannot offer:\n%s", name, prompts[0])
				}
			}
		})
	}
}

func TestExtensions_ReservedOperatorServerNameHoldsTheIssue(t *testing.T) {
	operator := filepath.Join(t.TempDir(), "mcp.json")
	os.WriteFile(operator, []byte(`{"mcpServers":{"sortie-tools":{"command":"evil"}}}`), 0o644)
	cfg := testConfig(t, func(c *config.Config) {
		c.Extensions = map[string]any{"mock": map[string]any{"mcp_config": operator}}
	})
	h := newHarness(t, cfg, harnessOptions{pollOnly: true,
		ext: workspace.Extensions{Executable: "/opt/sortie/bin/sortie", Socket: &fakeGranter{}}})
	h.trk.Put(issue("EXT-2", "Todo"))
	h.start()
	o := h.awaitStep(StepExit, "EXT-2")
	hd, held := heldOf(o.Snapshot, "EXT-2")
	if !held || !strings.Contains(hd.Message, "reserved") {
		t.Fatalf("EXT-2 held = %v (%+v), want held with the reserved-name error", held, hd)
	}
	if runs := h.runs("EXT-2"); len(runs) != 1 || runs[0].Status != store.StatusFailed || !strings.Contains(runs[0].Error, "config_error: mock.mcp_config") {
		t.Errorf("runs = %+v", runs)
	}
	if n := len(h.agent.startsOf("EXT-2")); n != 0 {
		t.Errorf("an agent session started despite the bad mcp_config")
	}
}

func TestBudget_MaxCostUSDPricedWithTokenRates(t *testing.T) {
	var mu sync.Mutex
	var alerts []Alert
	cfg := testConfig(t, func(c *config.Config) {
		c.Agent.MaxCostUSD = 0.3
		c.Agent.MaxTurns = 5
		// $1000 and $2000 per million: each turn's 100 in and 50 out cost $0.20.
		c.TokenRates = map[string]config.TokenRate{"mock": {InputPerMTok: 1000, OutputPerMTok: 2000}}
		c.Extensions = map[string]any{"mock": map[string]any{"input_tokens_per_turn": 100, "output_tokens_per_turn": 50}}
	})
	h := newHarness(t, cfg, harnessOptions{pollOnly: true, alert: func(_ context.Context, a Alert) error {
		mu.Lock()
		alerts = append(alerts, a)
		mu.Unlock()
		return nil
	}})
	h.trk.Put(issue("USD-1", "Todo"))
	h.start()
	h.awaitStep(StepExit, "USD-1")
	runs := h.runs("USD-1")
	if len(runs) != 1 || runs[0].Status != store.StatusBudgetExhausted || runs[0].Turns != 2 {
		t.Fatalf("runs = %+v, want budget_exhausted after 2 turns ($0.40 ≥ $0.30)", runs)
	}
	if !strings.Contains(runs[0].Error, "agent.max_cost_usd reached") {
		t.Errorf("run error = %q", runs[0].Error)
	}
	h.advance(cfg.Polling.Interval)
	if o := h.awaitStep(StepTick, ""); isRunning(o.Snapshot, "USD-1") {
		t.Fatal("dispatched again over its cost budget")
	}
	h.stop() // alerts are delivered in the background; stopping waits for them
	mu.Lock()
	defer mu.Unlock()
	if len(alerts) != 1 || alerts[0].Event != "budget_exhausted" || alerts[0].Issue.Identifier != "USD-1" {
		t.Errorf("alerts = %+v, want one budget_exhausted for USD-1", alerts)
	}
}

func TestAlerts_HoldsAlertTheOperator(t *testing.T) {
	var mu sync.Mutex
	var alerts []Alert
	cfg := testConfig(t, func(c *config.Config) {
		c.Extensions = map[string]any{"mock": map[string]any{"status": "blocked"}}
	})
	h := newHarness(t, cfg, harnessOptions{pollOnly: true, alert: func(_ context.Context, a Alert) error {
		mu.Lock()
		alerts = append(alerts, a)
		mu.Unlock()
		return nil
	}})
	h.trk.Put(issue("BLK-1", "Todo"))
	h.start()
	h.awaitStep(StepExit, "BLK-1")
	h.stop()
	mu.Lock()
	defer mu.Unlock()
	if len(alerts) != 1 || alerts[0].Event != holdBlocked || alerts[0].Severity != "warning" || !strings.Contains(alerts[0].Title, "BLK-1") {
		t.Errorf("alerts = %+v, want one blocked alert", alerts)
	}
}

// An agent that moves its own issue out of the active states (tracker_api) finishes
// its turn; a human's identical move stops it at once (TestReconcile tests that).
func TestAgentMoved_OwnTransitionLetsTheTurnFinish(t *testing.T) {
	cfg := testConfig(t, func(c *config.Config) {
		c.Agent.MaxTurns = 3
		c.Extensions = map[string]any{"mock": map[string]any{"delay_ms": 600}}
	})
	h := newHarness(t, cfg, harnessOptions{pollOnly: true})
	h.trk.Put(issue("MOV-1", "Todo"))
	h.start()
	h.awaitEvent("MOV-1", "session_started")

	// What the agent tools (agenttools.Service) do for a transition_issue of the agent's own issue.
	h.orch.AgentMoving("MOV-1", "In Review")
	h.setState("MOV-1", "In Review")
	h.refresh()
	o := h.awaitStep(StepTick, "")
	if !isRunning(o.Snapshot, "MOV-1") {
		t.Fatalf("after the agent's own transition: %s, want MOV-1 still running its turn", describe(o.Snapshot))
	}
	h.awaitStep(StepExit, "MOV-1")
	runs := h.runs("MOV-1")
	if len(runs) != 1 || runs[0].Status != store.StatusSucceeded || runs[0].Turns != 1 {
		t.Fatalf("runs = %+v, want one succeeded after its first turn", runs)
	}
}

// TestAlerts_BudgetWarningGoesOutOnceAtTheRatio: agent.budget_warn_ratio (0.8) of
// max_cost_usd alerts once, before the budget_exhausted alert.
func TestAlerts_BudgetWarningGoesOutOnceAtTheRatio(t *testing.T) {
	var mu sync.Mutex
	var alerts []Alert
	cfg := testConfig(t, func(c *config.Config) {
		c.Agent.MaxCostUSD = 0.5
		c.Agent.BudgetWarnRatio = 0.8
		c.Agent.MaxTurns = 5
		// Each turn's 100 in and 50 out cost $0.20: $0.40 is 80%, $0.60 is over.
		c.TokenRates = map[string]config.TokenRate{"mock": {InputPerMTok: 1000, OutputPerMTok: 2000}}
		c.Extensions = map[string]any{"mock": map[string]any{"input_tokens_per_turn": 100, "output_tokens_per_turn": 50}}
	})
	h := newHarness(t, cfg, harnessOptions{pollOnly: true, alert: func(_ context.Context, a Alert) error {
		mu.Lock()
		alerts = append(alerts, a)
		mu.Unlock()
		return nil
	}})
	h.trk.Put(issue("USD-2", "Todo"))
	h.start()
	h.awaitStep(StepExit, "USD-2")
	if runs := h.runs("USD-2"); len(runs) != 1 || runs[0].Status != store.StatusBudgetExhausted || runs[0].Turns != 3 {
		t.Fatalf("runs = %+v, want budget_exhausted in the 3rd turn", runs)
	}
	h.stop()
	mu.Lock()
	defer mu.Unlock()
	var events []string
	for _, a := range alerts {
		events = append(events, a.Event)
	}
	if !slices.Equal(events, []string{"budget_warning", "budget_exhausted"}) || !strings.Contains(alerts[0].Message, "warning at 80%") {
		t.Errorf("alerts = %+v, want one budget_warning (at 80%%) then budget_exhausted", alerts)
	}
}
