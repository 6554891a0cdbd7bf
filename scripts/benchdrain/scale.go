package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// backlog is a tracker of 10,000 open issues and 50 slots: the daemon polls all of
// them while agents run, and the API must stay responsive.
func (h *harness) backlog() (*report, error) {
	const issues, slots = 10000, 50
	type key struct {
		ident   string
		prio    int
		created time.Time
	}
	var keys []key
	s := setup{name: "backlog", issues: issues, slots: slots, tools: 8, pace: 2 * time.Second, pollMS: 5000,
		withServer: true, logStarts: true}
	s.issuesFile = issuesJSON(issues, func(ident string, prio int, created time.Time) {
		keys = append(keys, key{ident, prio, created})
	})
	w, d, err := h.startServing(s)
	if err != nil {
		return nil, err
	}
	defer h.cleanup(w)
	// 30 s of work: 50 agents of 2 s each start about 750 issues. The API is asked
	// for the state every 25 ms meanwhile (1,200 requests at most).
	window := 30 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), window)
	defer cancel()
	// /livez answers without the daemon's state: its latency, measured the same way
	// between the state requests, is what the machine's load alone costs a request.
	var lat, live []float64
	var apiErr error
	tick := time.NewTicker(25 * time.Millisecond)
	for done := false; !done; {
		select {
		case <-ctx.Done():
			done = true
		case <-tick.C:
			start := time.Now()
			if _, err := d.get(context.Background(), w.token, "/api/v1/state"); err != nil {
				apiErr = err
				done = true
				break
			}
			lat = append(lat, float64(time.Since(start).Microseconds())/1000)
			start = time.Now()
			if _, err := d.get(context.Background(), "", "/livez"); err != nil {
				apiErr = err
				done = true
				break
			}
			live = append(live, float64(time.Since(start).Microseconds())/1000)
		}
	}
	tick.Stop()
	metrics, merr := d.get(context.Background(), w.token, "/metrics")
	run, err := d.stop(w)
	if err != nil {
		return nil, err
	}
	if apiErr != nil {
		return nil, fmt.Errorf("/api/v1/state: %w", apiErr)
	}
	if merr != nil {
		return nil, fmt.Errorf("/metrics: %w", merr)
	}
	polls, pollSum := metricValue(metrics, "sortie_poll_duration_seconds_count"), metricValue(metrics, "sortie_poll_duration_seconds_sum")

	// The order agents started in against the order Sortie promises: priority (none
	// last), then oldest first, then identifier.
	slices.SortFunc(keys, func(a, b key) int {
		return cmp.Or(cmp.Compare(a.prio, b.prio), a.created.Compare(b.created), cmp.Compare(a.ident, b.ident))
	})
	rank := map[string]int{}
	for i, k := range keys {
		rank[k.ident] = i
	}
	started, err := readStarts(w.starts)
	if err != nil {
		return nil, err
	}
	displacement := 0
	for i, st := range started {
		r, ok := rank[st.issue]
		if !ok {
			return nil, fmt.Errorf("an agent started for unknown issue %q", st.issue)
		}
		displacement = max(displacement, abs(r-i))
	}

	r := &report{title: "Scale: 10,000 open issues, 50 slots, agents of 2 s (30 s of work)"}
	p99 := percentile(lat, 99)
	r.check("/api/v1/state p99", fmt.Sprintf("%.1f ms (%d requests, p50 %.1f ms)", p99, len(lat), percentile(lat, 50)), "< 20 ms", p99 < 20)
	r.add("/livez p99 (the same server, no state)", fmt.Sprintf("%.1f ms (p50 %.1f ms)", percentile(live, 99), percentile(live, 50)))
	r.check("dispatch order: furthest start from its rank", fmt.Sprintf("%d places (%d agents started)", displacement, len(started)),
		fmt.Sprintf("< %d (the slots)", slots), displacement < slots && len(started) > slots)
	if polls > 0 {
		r.add("poll of 10,000 issues (mean wall time)", fmt.Sprintf("%.1f ms over %.0f polls", pollSum/polls*1000, polls))
	}
	r.add("daemon CPU (whole run)", fmt.Sprintf("%.2f s, %.1f ms per started issue", run.cpu, run.cpu*1000/float64(max(len(started), 1))))
	r.add("daemon peak RSS", fmt.Sprintf("%.1f MB", float64(run.maxRSSKiB)/1024))
	return r, nil
}

// agents is 100 agents working at once for the -soak duration: memory, goroutines
// and open files must stay flat once warm, read from /metrics as an operator would.
func (h *harness) agents() (*report, error) {
	const slots = 100
	const turn = 20 * time.Second
	issues := int(h.opts.soak/turn+2) * slots
	s := setup{name: "agents", issues: issues, slots: slots, lines: 2000, pace: turn, withServer: true}
	w, d, err := h.startServing(s)
	if err != nil {
		return nil, err
	}
	defer h.cleanup(w)
	type sample struct {
		at                   time.Duration
		rss, goroutines, fds float64
		running, heapInUse   float64
	}
	var samples []sample
	every := min(10*time.Second, max(h.opts.soak/30, time.Second))
	start := time.Now()
	for time.Since(start) < h.opts.soak {
		time.Sleep(every)
		m, err := d.get(context.Background(), w.token, "/metrics")
		if err != nil {
			d.stop(w)
			return nil, fmt.Errorf("/metrics: %w", err)
		}
		samples = append(samples, sample{at: time.Since(start), rss: metricValue(m, "process_resident_memory_bytes"),
			goroutines: metricValue(m, "go_goroutines"), fds: metricValue(m, "process_open_fds"),
			running: metricValue(m, "sortie_sessions_running"), heapInUse: metricValue(m, "go_memstats_heap_inuse_bytes")})
		if h.opts.verbose {
			last := samples[len(samples)-1]
			fmt.Fprintf(os.Stderr, "benchdrain: agents %s: rss %.1f MB, heap %.1f MB, goroutines %.0f, fds %.0f, running %.0f\n",
				last.at.Round(time.Second), last.rss/1e6, last.heapInUse/1e6, last.goroutines, last.fds, last.running)
		}
	}
	run, err := d.stop(w)
	if err != nil {
		return nil, err
	}
	if len(samples) < 4 {
		return nil, fmt.Errorf("only %d samples: run longer (-soak)", len(samples))
	}
	// Warm-up is the first fifth; the rest is split in halves, each half's peak
	// compared.
	warm := samples[len(samples)/5:]
	first, second := warm[:len(warm)/2], warm[len(warm)/2:]
	peak := func(ss []sample, f func(sample) float64) float64 {
		m := 0.0
		for _, s := range ss {
			m = max(m, f(s))
		}
		return m
	}
	r := &report{title: fmt.Sprintf("Scale: %d agents at once for %s (2,000-line turns of %s)", slots, h.opts.soak, turn)}
	rss1, rss2 := peak(first, func(s sample) float64 { return s.rss }), peak(second, func(s sample) float64 { return s.rss })
	g1, g2 := peak(first, func(s sample) float64 { return s.goroutines }), peak(second, func(s sample) float64 { return s.goroutines })
	f1, f2 := peak(first, func(s sample) float64 { return s.fds }), peak(second, func(s sample) float64 { return s.fds })
	r.check("RSS peak, 2nd half / 1st half after warm-up", fmt.Sprintf("%.2f× (%.1f → %.1f MB)", rss2/rss1, rss1/1e6, rss2/1e6), "≤ 1.10×", rss2 <= 1.10*rss1)
	r.check("go_goroutines peak, 1st → 2nd half", fmt.Sprintf("%.0f → %.0f", g1, g2), "no growth (≤ +5%)", g2 <= g1*1.05)
	r.check("process_open_fds peak, 1st → 2nd half", fmt.Sprintf("%.0f → %.0f", f1, f2), "no growth (≤ +5%)", f2 <= f1*1.05)
	r.add("sessions running (mean)", fmt.Sprintf("%.0f", mean(samples, func(s sample) float64 { return s.running })))
	r.add("daemon CPU", fmt.Sprintf("%.1f s over %s", run.cpu, h.opts.soak))
	r.add("daemon peak RSS", fmt.Sprintf("%.1f MB", float64(run.maxRSSKiB)/1024))
	r.note("%d samples of /metrics, one every %s", len(samples), every)
	return r, nil
}

// latency appends an issue to the issues file, saved as editors save (a new file
// renamed over the old), and times the save to the agent's start, at two poll
// intervals: the file watch, not the poll, must start it.
func (h *harness) latency() (*report, error) {
	r := &report{title: "Dispatch latency of an appended issue (file watch)"}
	for _, poll := range []int{30000, 300000} {
		s := setup{name: "latency", issues: 0, slots: 10, tools: 8, pollMS: poll, withServer: true, logStarts: true,
			issuesFile: []byte("[]\n")}
		w, d, err := h.startServing(s)
		if err != nil {
			return nil, err
		}
		const samples = 30
		var lat []float64
		for i := 1; i <= samples; i++ {
			ident := "L-" + strconv.Itoa(i)
			saved, err := appendIssue(w.issues, i, ident)
			if err != nil {
				d.stop(w)
				return nil, err
			}
			at, err := waitStart(w.starts, ident, 30*time.Second)
			if err != nil {
				d.stop(w)
				return nil, err
			}
			lat = append(lat, float64(at.Sub(saved).Microseconds())/1000)
			if err := waitState(w.issues, ident, "Human Review", 30*time.Second); err != nil {
				d.stop(w)
				return nil, err
			}
		}
		if _, err := d.stop(w); err != nil {
			return nil, err
		}
		h.cleanup(w)
		p50 := percentile(lat, 50)
		r.check(fmt.Sprintf("save → agent start, p50 (poll every %s)", time.Duration(poll)*time.Millisecond),
			fmt.Sprintf("%.1f ms (p99 %.1f ms, %d appends)", p50, percentile(lat, 99), samples), "< 20 ms", p50 < 20)
	}
	return r, nil
}

// startServing prepares s and starts a daemon that keeps running, with its server,
// once it is ready.
func (h *harness) startServing(s setup) (*workdir, *daemon, error) {
	w, err := h.prepare(s)
	if err != nil {
		return nil, nil, err
	}
	profile := ""
	if h.opts.profile != "" {
		profile = filepath.Join(h.opts.profile, s.name)
	}
	d, err := h.startDaemon(w, false, true, profile)
	if err != nil {
		h.cleanup(w)
		return nil, nil, err
	}
	if err := d.ready(time.Minute); err != nil {
		d.stop(w)
		h.cleanup(w)
		return nil, nil, err
	}
	return w, d, nil
}

// appendIssue adds issue n to the issues file as an editor saves: a new file renamed
// over the old one. It returns the time of the rename.
func appendIssue(path string, n int, ident string) (time.Time, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return time.Time{}, err
	}
	var issues []map[string]any
	if err := json.Unmarshal(data, &issues); err != nil {
		return time.Time{}, err
	}
	issues = append(issues, map[string]any{"id": "l" + strconv.Itoa(n), "identifier": ident, "title": "Appended " + ident,
		"state": "Todo", "priority": 1})
	out, err := json.MarshalIndent(issues, "", "  ")
	if err != nil {
		return time.Time{}, err
	}
	tmp := filepath.Join(filepath.Dir(path), ".edit.tmp")
	if err := os.WriteFile(tmp, out, 0o644); err != nil {
		return time.Time{}, err
	}
	if err := os.Rename(tmp, path); err != nil {
		return time.Time{}, err
	}
	return time.Now(), nil
}

// start is one line of the agents' start log.
type start struct {
	at    time.Time
	issue string
}

func readStarts(path string) ([]start, error) {
	f, err := os.Open(path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, err
	}
	defer f.Close()
	var out []start
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		ns, issue, ok := strings.Cut(sc.Text(), " ")
		n, err := strconv.ParseInt(ns, 10, 64)
		if !ok || err != nil {
			continue
		}
		out = append(out, start{at: time.Unix(0, n), issue: issue})
	}
	return out, sc.Err()
}

// waitStart waits for the agent of issue to log its start.
func waitStart(path, issue string, limit time.Duration) (time.Time, error) {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		starts, err := readStarts(path)
		if err != nil {
			return time.Time{}, err
		}
		for _, s := range starts {
			if s.issue == issue {
				return s.at, nil
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	return time.Time{}, fmt.Errorf("no agent started for %s within %s", issue, limit)
}

// waitState waits for issue to reach state in the issues file.
func waitState(path, ident, state string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		data, err := os.ReadFile(path)
		if err == nil {
			var issues []struct{ Identifier, State string }
			if json.Unmarshal(data, &issues) == nil {
				for _, i := range issues {
					if i.Identifier == ident && i.State == state {
						return nil
					}
				}
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	return fmt.Errorf("%s did not reach %s within %s", ident, state, limit)
}

// metricValue is the value of an unlabelled sample in Prometheus text, 0 if absent.
func metricValue(text []byte, name string) float64 {
	for _, line := range bytes.Split(text, []byte("\n")) {
		rest, ok := bytes.CutPrefix(line, []byte(name+" "))
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(string(rest)), 64)
		if err == nil {
			return v
		}
	}
	return 0
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

func mean[T any](xs []T, f func(T) float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range xs {
		s += f(x)
	}
	return s / float64(len(xs))
}
