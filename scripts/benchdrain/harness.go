package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// harness holds what every workload shares.
type harness struct {
	opts      options
	self      string   // this program, which is also the fake agent
	leftovers []string // workload directories to remove at exit
}

// setup is one workload's directory and configuration.
type setup struct {
	name       string
	issues     int
	slots      int
	lines      int           // lines of each agent turn's transcript
	tools      int           // tool calls in it (with lines 0: the 8-tool transcript)
	pace       time.Duration // spread each turn's lines over this long (0: at once)
	pollMS     int
	withServer bool
	logStarts  bool          // the agent logs its start, for order and latency checks
	burn       time.Duration // CPU the agent burns at each start (-agent-cpu)
	issuesFile []byte
}

// workdir is a prepared workload directory.
type workdir struct {
	dir, workflow, transcript, issues, starts string
	agent                                     string // the fake agent: a copy of this program
	lines                                     int
	token                                     string
	burn                                      []string // the agent's --burn flag, for Sortie and xargs alike
}

const benchToken = "benchdrain-operator-token-0123456789abcdef"

// prepare writes the transcript, the issues file and WORKFLOW.md.
func (h *harness) prepare(s setup) (*workdir, error) {
	dir, err := os.MkdirTemp("", "sortie-bench-"+s.name+"-")
	if err != nil {
		return nil, err
	}
	// The agent is confined (Landlock): it reads its program and transcript in agent/
	// and writes its start log in starts/, both granted in WORKFLOW.md.
	w := &workdir{dir: dir, workflow: filepath.Join(dir, "WORKFLOW.md"), transcript: filepath.Join(dir, "agent", "transcript.jsonl"),
		issues: filepath.Join(dir, "issues.json"), starts: filepath.Join(dir, "starts", "starts.log"), token: benchToken}
	for _, d := range []string{"agent", "starts"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			return nil, err
		}
	}
	capture, err := os.ReadFile(h.opts.capture)
	if err != nil {
		return nil, fmt.Errorf("the captured transcript: %w (run from the repository's root)", err)
	}
	var data []byte
	if s.lines > 0 {
		data, err = longTranscript(capture, s.lines)
	} else {
		data, err = toolTranscript(capture, s.tools)
	}
	if err != nil {
		return nil, err
	}
	w.lines = bytes.Count(data, []byte("\n"))
	if err := os.WriteFile(w.transcript, data, 0o644); err != nil {
		return nil, err
	}
	issues := s.issuesFile
	if issues == nil {
		issues = issuesJSON(s.issues, nil)
	}
	if err := os.WriteFile(w.issues, issues, 0o644); err != nil {
		return nil, err
	}
	w.agent = filepath.Join(dir, "agent", "benchdrain")
	if err := copyFile(h.self, w.agent); err != nil {
		return nil, err
	}
	if s.burn > 0 {
		w.burn = []string{"--burn", s.burn.String()}
	}
	command := append([]string{w.agent, "replay", "--transcript", w.transcript}, w.burn...)
	if s.pace > 0 {
		command = append(command, "--pace", s.pace.String())
	}
	if s.logStarts {
		command = append(command, "--log", w.starts)
	}
	poll := s.pollMS
	if poll == 0 {
		poll = 30000
	}
	wf := fmt.Sprintf(`---
tracker:
  kind: file
  path: issues.json
  active_states: [Todo, In Progress]
  in_progress_state: In Progress
  handoff_state: Human Review
  terminal_states: [Done]
polling:
  interval_ms: %d
workspace:
  root: ./workspaces
agent:
  kind: claude-code
  command: %s
  max_turns: 1
  max_concurrent_agents: %d
  sandbox:
    read_paths: [./agent]
    write_paths: [./starts]
claude-code:
  permission_mode: bypassPermissions
db_path: ./sortie.db
---
You are working on {{ .issue.identifier }}: {{ .issue.title }}.

{{ .issue.description }}
`, poll, strings.Join(command, " "), s.slots)
	if err := os.WriteFile(w.workflow, []byte(wf), 0o644); err != nil {
		return nil, err
	}
	return w, nil
}

// cleanup removes the workload's directory unless -keep, when the harness exits:
// removing thousands of files between runs would slow the next run's file creation
// on some file systems (ext4 without a journal scans recently deleted inodes), so
// that one run would pay for the one before.
func (h *harness) cleanup(w *workdir) {
	if h.opts.keep {
		fmt.Fprintf(os.Stderr, "benchdrain: kept %s\n", w.dir)
		return
	}
	h.leftovers = append(h.leftovers, w.dir)
}

// removeAll removes the directories cleanup kept for the end.
func (h *harness) removeAll() {
	for _, d := range h.leftovers {
		os.RemoveAll(d)
	}
}

// issuesJSON is a file tracker's issues: n issues in Todo, priorities 1–4 and creation
// times spread so that the dispatch order is neither the file's nor the identifiers'.
// key, when not nil, is given each issue's dispatch key in order of the file.
func issuesJSON(n int, key func(ident string, prio int, created time.Time)) []byte {
	var b bytes.Buffer
	b.WriteString("[\n")
	base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for i := 1; i <= n; i++ {
		prio := (i*7)%4 + 1
		created := base.Add(time.Duration((i*7919)%n) * time.Minute)
		ident := "B-" + strconv.Itoa(i)
		if key != nil {
			key(ident, prio, created)
		}
		fmt.Fprintf(&b, `  {"id": "%d", "identifier": %q, "title": "Benchmark issue %d", "description": "Replay the transcript.", "priority": %d, "state": "Todo", "created_at": %q}`,
			i, ident, i, prio, created.Format(time.RFC3339))
		if i < n {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	b.WriteString("]\n")
	return b.Bytes()
}

// daemonRun is what one daemon run measured.
type daemonRun struct {
	wall      time.Duration
	cpu       float64 // the daemon's user+system seconds
	childCPU  float64 // its agents' (and hooks') user+system seconds
	maxRSSKiB int64
	handedOff int
	exitErr   error
	logPath   string
}

// daemon is a running sortie.
type daemon struct {
	cmd     *exec.Cmd
	start   time.Time
	log     *os.File
	port    int
	done    chan struct{}
	waitErr error
}

// startDaemon starts bin/sortie on w. exitWhenIdle makes it exit when the work is
// done; profile names the files of --cpuprofile and --memprofile ("" for none).
func (h *harness) startDaemon(w *workdir, exitWhenIdle bool, withServer bool, profile string) (*daemon, error) {
	args := []string{"--log-format", "json"}
	if exitWhenIdle {
		args = append(args, "--exit-when-idle")
	}
	d := &daemon{done: make(chan struct{})}
	if withServer {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		d.port = port
		args = append(args, "--port", strconv.Itoa(port))
	} else {
		args = append(args, "--port", "0")
	}
	if profile != "" {
		args = append(args, "--cpuprofile", profile+".cpu.pprof", "--memprofile", profile+".heap.pprof")
		if h.opts.trace {
			args = append(args, "--trace", profile+".trace")
		}
	}
	args = append(args, w.workflow)
	log, err := os.Create(filepath.Join(w.dir, "sortie.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(h.opts.sortie, args...)
	cmd.Dir = w.dir
	cmd.Stdout = log
	cmd.Stderr = log
	// The agents' per-issue CLI state (XDG_CACHE_HOME/sortie/…) goes in the workload's
	// directory too: on the same file system as the rest, and removed with it rather
	// than left in the home directory, two hundred directories a run.
	cmd.Env = append(os.Environ(), "SORTIE_SERVER_AUTH_TOKEN="+w.token, "XDG_CACHE_HOME="+filepath.Join(w.dir, "cache"))
	d.cmd, d.log = cmd, log
	d.start = time.Now()
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, err
	}
	go func() {
		d.waitErr = cmd.Wait()
		close(d.done)
	}()
	return d, nil
}

// wait waits for the daemon to exit (at most limit) and reads its figures.
func (d *daemon) wait(w *workdir, limit time.Duration) (daemonRun, error) {
	select {
	case <-d.done:
	case <-time.After(limit):
		d.cmd.Process.Signal(syscall.SIGTERM)
		<-d.done
		return daemonRun{}, fmt.Errorf("the daemon did not finish within %s (log: %s)", limit, d.log.Name())
	}
	run := daemonRun{wall: time.Since(d.start), exitErr: d.waitErr, logPath: d.log.Name()}
	d.log.Close()
	if d.waitErr != nil {
		return run, fmt.Errorf("sortie exited: %v; its log: %s", d.waitErr, lastLines(d.log.Name(), 10))
	}
	u, err := resourcesUsed(d.log.Name())
	if err != nil {
		return run, err
	}
	run.cpu, run.childCPU, run.maxRSSKiB = u.cpu, u.childCPU, u.rssKiB
	run.handedOff, err = countState(w.issues, "Human Review")
	return run, err
}

// stop sends SIGTERM and waits for the daemon's graceful exit.
func (d *daemon) stop(w *workdir) (daemonRun, error) {
	d.cmd.Process.Signal(syscall.SIGTERM)
	return d.wait(w, 2*time.Minute)
}

// get fetches an authenticated API path from the daemon.
func (d *daemon) get(ctx context.Context, token, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d%s", d.port, path), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return body, nil
}

// ready waits until the daemon answers /readyz (or exits).
func (d *daemon) ready(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		select {
		case <-d.done:
			return fmt.Errorf("sortie exited early: %v; its log: %s", d.waitErr, lastLines(d.log.Name(), 10))
		default:
		}
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", d.port))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("the daemon was not ready within %s", limit)
}

// usage is what the daemon's "resources used" log line says.
type usage struct {
	cpu      float64 // the daemon's own user+system seconds
	childCPU float64 // those of the processes it waited for: its agents
	rssKiB   int64
}

// resourcesUsed reads the daemon's "resources used" log line.
func resourcesUsed(logPath string) (u usage, err error) {
	f, err := os.Open(logPath)
	if err != nil {
		return u, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	found := false
	for sc.Scan() {
		var rec struct {
			Msg    string  `json:"msg"`
			User   float64 `json:"cpu_user_s"`
			System float64 `json:"cpu_system_s"`
			RSS    int64   `json:"max_rss_kb"`
			Child  float64 `json:"children_cpu_s"`
		}
		if json.Unmarshal(sc.Bytes(), &rec) != nil || rec.Msg != "resources used" {
			continue
		}
		u, found = usage{cpu: rec.User + rec.System, childCPU: rec.Child, rssKiB: rec.RSS}, true
	}
	if !found {
		return usage{}, fmt.Errorf("no \"resources used\" line in %s", logPath)
	}
	return u, sc.Err()
}

// countState counts the issues of the issues file in state.
func countState(path, state string) (int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	var issues []struct {
		State string `json:"state"`
	}
	if err := json.Unmarshal(data, &issues); err != nil {
		return 0, err
	}
	n := 0
	for _, i := range issues {
		if i.State == state {
			n++
		}
	}
	return n, nil
}

// xargs runs the fake agent n times at concurrency slots, each in a directory of its
// own under w.dir, output to /dev/null: the physical limit of the drain. It returns
// the wall time and the CPU time of xargs and the agents.
func (h *harness) xargs(w *workdir, n, slots int) (time.Duration, float64, error) {
	var list bytes.Buffer
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&list, "%d\n", i)
	}
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return 0, 0, err
	}
	defer null.Close()
	args := append([]string{"-P", strconv.Itoa(slots), "-n", "1", "--", w.agent, "replay", "--transcript", w.transcript}, w.burn...)
	cmd := exec.Command("xargs", args...)
	cmd.Dir = w.dir
	cmd.Stdin = &list
	cmd.Stdout = null
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return 0, 0, fmt.Errorf("xargs: %v: %s", err, stderr.String())
	}
	wall := time.Since(start)
	return wall, (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds(), nil
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func lastLines(path string, n int) string {
	data, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// percentile is the p-th percentile (0–100) of xs, nearest rank.
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	rank := int(p/100*float64(len(s))+0.999999) - 1
	return s[min(max(rank, 0), len(s)-1)]
}

func copyFile(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, data, 0o755)
}
