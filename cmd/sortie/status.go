package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"sortie/internal/config"
	"sortie/internal/daemon"
	"sortie/internal/store"
)

// statusReport is what `sortie status` shows, from the daemon's API or, when no daemon
// answers, from its database. Its JSON form is `sortie status --json`.
type statusReport struct {
	Source     string          `json:"source"`      // "daemon" or "database"
	SourceNote string          `json:"source_note"` // where it came from, for humans
	Running    []statusRunning `json:"running"`
	Retrying   []statusRetry   `json:"retrying"`
	Awaiting   []statusHeld    `json:"awaiting_input"`
	Held       []statusHeld    `json:"held"`
	Runs       []statusRun     `json:"recent_runs"`
	// WorkflowError is the daemon's rejected WORKFLOW.md edit, if any.
	WorkflowError string `json:"workflow_error,omitempty"`
}

type statusTokens struct {
	Input     int64 `json:"input_tokens"`
	Output    int64 `json:"output_tokens"`
	Total     int64 `json:"total_tokens"`
	CacheRead int64 `json:"cache_read_tokens"`
}

type statusRunning struct {
	Identifier  string       `json:"issue_identifier"`
	State       string       `json:"state"`
	Attempt     int          `json:"attempt"`
	Turn        int          `json:"turn"`
	MaxTurns    int          `json:"max_turns"`
	StartedAt   time.Time    `json:"started_at"`
	LastEvent   string       `json:"last_event"`
	LastMessage string       `json:"last_message"`
	Tokens      statusTokens `json:"tokens"`
	CostUSD     float64      `json:"cost_usd"`
	Host        string       `json:"host,omitempty"`
}

type statusRetry struct {
	Identifier string    `json:"issue_identifier"`
	Attempt    int       `json:"attempt"`
	Kind       string    `json:"kind"`
	DueAt      time.Time `json:"due_at"`
	Error      string    `json:"error"`
}

type statusHeld struct {
	Identifier string    `json:"issue_identifier"`
	Reason     string    `json:"reason"`
	Message    string    `json:"message"`
	Question   string    `json:"question,omitempty"`
	State      string    `json:"state"`
	Since      time.Time `json:"since"`
}

type statusRun struct {
	ID         int64        `json:"id"`
	Identifier string       `json:"issue_identifier"`
	Attempt    int          `json:"attempt"`
	Status     string       `json:"status"`
	StartedAt  time.Time    `json:"started_at"`
	EndedAt    *time.Time   `json:"ended_at"`
	Turns      int          `json:"turns"`
	Tokens     statusTokens `json:"tokens"`
	CostUSD    float64      `json:"cost_usd"`
	Error      string       `json:"error"`
}

// normalise makes every list non-nil, so that the JSON form has [] rather than null.
func (r *statusReport) normalise() {
	if r.Running == nil {
		r.Running = []statusRunning{}
	}
	if r.Retrying == nil {
		r.Retrying = []statusRetry{}
	}
	if r.Awaiting == nil {
		r.Awaiting = []statusHeld{}
	}
	if r.Held == nil {
		r.Held = []statusHeld{}
	}
	if r.Runs == nil {
		r.Runs = []statusRun{}
	}
}

// statusRuns is how many recent runs the report lists.
const statusRuns = 10

func cmdStatus(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	host := fs.String("host", "", "the daemon's API address (default: server.host)")
	port := fs.Int("port", -1, "the daemon's API port (default: server.port)")
	envFile := fs.String("env-file", "", "read SORTIE_* overrides from this .env file")
	login := fs.Bool("login-url", false, "print the link that logs a browser in to the dashboard, and exit")
	printToken := fs.Bool("token", false, "print the operator token, as a client sends it (Authorization: Bearer TOKEN), and exit")
	if err := fs.Parse(args); err != nil {
		return parseErrorCode(err)
	}
	if fs.NArg() > 1 {
		fmt.Fprintf(stderr, "sortie status: too many arguments: %s\n", strings.Join(fs.Args(), " "))
		return exitUsage
	}
	path := workflowPath(fs.Args())
	cfg, err := config.Load(path, config.Options{EnvFile: *envFile})
	if err != nil {
		fmt.Fprintf(stderr, "sortie status: %v\n", err)
		return exitFailure
	}
	if *host != "" {
		cfg.Server.Host = *host
	}
	if *port >= 0 {
		cfg.Server.Port = *port
	}
	token, err := daemon.ReadOperatorToken(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "sortie status: %v\n", err)
		return exitFailure
	}
	cfg.Server.AuthToken = token
	if (*printToken || *login) && token == "" {
		fmt.Fprintf(stderr, "sortie status: no operator token yet: the daemon writes %s on its first start (or set server.auth_token)\n", cfg.DBPath+daemon.OperatorTokenSuffix)
		return exitFailure
	}
	if *printToken {
		fmt.Fprintln(stdout, token)
		return exitOK
	}
	if *login {
		base := "http://" + net.JoinHostPort(daemon.APIHost(cfg.Server.Host), strconv.Itoa(cfg.Server.Port)) + "/"
		fmt.Fprintln(stdout, daemon.LoginURL(base, token))
		return exitOK
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	rep, apiErr := statusFromAPI(ctx, cfg)
	if apiErr != nil {
		var dbErr error
		rep, dbErr = statusFromDB(ctx, cfg)
		if dbErr != nil {
			fmt.Fprintf(stderr, "sortie status: no daemon answered (%v), and the database could not be read: %v\n", apiErr, dbErr)
			return exitFailure
		}
		rep.SourceNote = fmt.Sprintf("database %s (no daemon answered: %v)", cfg.DBPath, apiErr)
	}
	rep.normalise()
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			fmt.Fprintf(stderr, "sortie status: %v\n", err)
			return exitFailure
		}
		return exitOK
	}
	printStatus(stdout, rep, time.Now())
	return exitOK
}

// statusFromAPI asks a running daemon.
func statusFromAPI(ctx context.Context, cfg *config.Config) (statusReport, error) {
	if cfg.Server.Port == 0 {
		return statusReport{}, errors.New("server.port is 0, so the daemon serves no API")
	}
	base := "http://" + net.JoinHostPort(daemon.APIHost(cfg.Server.Host), strconv.Itoa(cfg.Server.Port))
	client := &http.Client{Timeout: 3 * time.Second}
	get := func(path string, v any) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
		if err != nil {
			return err
		}
		if cfg.Server.AuthToken != "" {
			req.Header.Set("Authorization", "Bearer "+cfg.Server.AuthToken)
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s%s answered %s", base, path, resp.Status)
		}
		return json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(v)
	}
	var state struct {
		Version       string          `json:"version"`
		Running       []statusRunning `json:"running"`
		Retrying      []statusRetry   `json:"retrying"`
		Awaiting      []statusHeld    `json:"awaiting_input"`
		Held          []statusHeld    `json:"held"`
		WorkflowError string          `json:"workflow_error"`
		Workflow      struct {
			ReloadError string `json:"reload_error"`
		} `json:"workflow"`
	}
	if err := get("/api/v1/state", &state); err != nil {
		return statusReport{}, err
	}
	var runs struct {
		Runs []statusRun `json:"runs"`
	}
	if err := get("/api/v1/runs?limit="+strconv.Itoa(statusRuns), &runs); err != nil {
		return statusReport{}, err
	}
	rep := statusReport{
		Source: "daemon", SourceNote: fmt.Sprintf("daemon at %s (version %s)", base, state.Version),
		Running: state.Running, Retrying: state.Retrying, Awaiting: state.Awaiting, Held: state.Held, Runs: runs.Runs,
		WorkflowError: state.Workflow.ReloadError,
	}
	if rep.WorkflowError == "" {
		rep.WorkflowError = state.WorkflowError
	}
	return rep, nil
}

// statusFromDB reads what a stopped (or API-less) daemon left in its database.
func statusFromDB(ctx context.Context, cfg *config.Config) (statusReport, error) {
	st, err := daemon.OpenStoreReader(ctx, cfg)
	if err != nil {
		return statusReport{}, err
	}
	defer st.Close()
	rep := statusReport{Source: "database"}
	inProgress, err := st.RunsInProgress(ctx)
	if err != nil {
		return rep, err
	}
	for _, r := range inProgress {
		rep.Running = append(rep.Running, statusRunning{Identifier: r.Identifier, Attempt: r.Attempt - 1,
			Turn: r.Turns, StartedAt: r.StartedAt, LastEvent: "no daemon: interrupted at its next start",
			Tokens: tokensOf(r.Tokens), CostUSD: r.CostUSD, Host: r.SSHHost})
	}
	retries, err := st.LoadRetries(ctx)
	if err != nil {
		return rep, err
	}
	for _, r := range retries {
		rep.Retrying = append(rep.Retrying, statusRetry{Identifier: r.Identifier, Attempt: r.Attempt - 1,
			Kind: string(r.Kind), DueAt: r.DueAt, Error: r.Error})
	}
	holds, err := st.LoadHolds(ctx)
	if err != nil {
		return rep, err
	}
	for _, h := range holds {
		v := statusHeld{Identifier: h.Identifier, Reason: h.Reason, Message: h.Message, State: h.State, Since: h.Since}
		rep.Held = append(rep.Held, v)
		if awaitsAnswer(h.Reason) {
			v.Question = h.Message
			rep.Awaiting = append(rep.Awaiting, v)
		}
	}
	runs, err := st.RecentRuns(ctx, statusRuns)
	if err != nil {
		return rep, err
	}
	for _, r := range runs {
		rep.Runs = append(rep.Runs, statusRunOf(r))
	}
	return rep, nil
}

func tokensOf(t store.Tokens) statusTokens {
	return statusTokens{Input: t.Input, Output: t.Output, Total: t.Total, CacheRead: t.CacheRead}
}

func statusRunOf(r store.Run) statusRun {
	v := statusRun{ID: r.ID, Identifier: r.Identifier, Attempt: r.Attempt, Status: string(r.Status),
		StartedAt: r.StartedAt, Turns: r.Turns, Tokens: tokensOf(r.Tokens), CostUSD: r.CostUSD, Error: r.Error}
	if !r.EndedAt.IsZero() {
		end := r.EndedAt
		v.EndedAt = &end
	}
	return v
}

// printStatus writes the report as tables.
func printStatus(w io.Writer, r statusReport, now time.Time) {
	fmt.Fprintf(w, "Sortie status from the %s\n", r.SourceNote)
	if r.WorkflowError != "" {
		fmt.Fprintf(w, "\nWORKFLOW.md edit rejected, the previous configuration is in force:\n  %s\n", r.WorkflowError)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	section := func(title string, n int, header string) bool {
		fmt.Fprintf(w, "\n%s (%d)\n", title, n)
		if n == 0 {
			return false
		}
		fmt.Fprintln(tw, header)
		return true
	}
	if section("RUNNING", len(r.Running), "ISSUE\tSTATE\tATTEMPT\tTURN\tFOR\tTOKENS\tCOST\tLAST EVENT") {
		for _, x := range r.Running {
			turn := strconv.Itoa(x.Turn)
			if x.MaxTurns > 0 {
				turn += "/" + strconv.Itoa(x.MaxTurns)
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%d\t%s\t%s\n", x.Identifier, dash(x.State), x.Attempt, turn,
				since(now, x.StartedAt), x.Tokens.Total, usd(x.CostUSD), clip(strings.TrimSpace(x.LastEvent+" "+x.LastMessage), 60))
		}
		tw.Flush()
	}
	if section("RETRYING", len(r.Retrying), "ISSUE\tATTEMPT\tKIND\tDUE\tERROR") {
		for _, x := range r.Retrying {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", x.Identifier, x.Attempt, x.Kind, due(now, x.DueAt), clip(dash(x.Error), 70))
		}
		tw.Flush()
	}
	if section("AWAITING INPUT", len(r.Awaiting), "ISSUE\tREASON\tSINCE\tQUESTION") {
		for _, x := range r.Awaiting {
			q := x.Question
			if q == "" {
				q = x.Message
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", x.Identifier, x.Reason, since(now, x.Since)+" ago", clip(dash(q), 70))
		}
		tw.Flush()
	}
	if other := otherHolds(r); section("HELD", len(other), "ISSUE\tREASON\tSINCE\tWHY") {
		for _, x := range other {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", x.Identifier, x.Reason, since(now, x.Since)+" ago", clip(dash(x.Message), 70))
		}
		tw.Flush()
	}
	if section("RECENT RUNS", len(r.Runs), "RUN\tISSUE\tATTEMPT\tSTATUS\tSTARTED\tTOOK\tTURNS\tTOKENS\tCOST\tERROR") {
		for _, x := range r.Runs {
			took := "running"
			if x.EndedAt != nil {
				took = x.EndedAt.Sub(x.StartedAt).Round(time.Second).String()
			}
			fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%s\t%s\t%d\t%d\t%s\t%s\n", x.ID, x.Identifier, x.Attempt, x.Status,
				x.StartedAt.Local().Format("01-02 15:04:05"), took, x.Turns, x.Tokens.Total, usd(x.CostUSD), clip(dash(x.Error), 50))
		}
		tw.Flush()
	}
}

// awaitsAnswer reports whether a hold waits for a human's answer: the agent asked
// (blocked, needs_human_review) or a workflow checkpoint did (awaiting_input).
func awaitsAnswer(reason string) bool {
	return reason == "blocked" || reason == "needs_human_review" || reason == "awaiting_input"
}

// otherHolds are the holds that do not wait for an answer (errors, retries used up).
func otherHolds(r statusReport) []statusHeld {
	var out []statusHeld
	for _, h := range r.Held {
		if !awaitsAnswer(h.Reason) {
			out = append(out, h)
		}
	}
	return out
}

func dash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "-"
	}
	return s
}

// clip puts s on one line and cuts it to n characters.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len([]rune(s)) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

func usd(v float64) string {
	if v == 0 {
		return "-"
	}
	return fmt.Sprintf("$%.2f", v)
}

func since(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return now.Sub(t).Round(time.Second).String()
}

func due(now, t time.Time) string {
	d := t.Sub(now).Round(time.Second)
	if d <= 0 {
		return "now"
	}
	return "in " + d.String()
}
