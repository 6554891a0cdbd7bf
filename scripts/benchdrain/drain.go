package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// w1 is 200 issues, 10 slots, one turn each of an 8-tool transcript.
func (h *harness) w1() (*report, error) {
	return h.drain("W1: 200 issues, 10 slots, an 8-tool claude transcript, 1 turn"+h.burnTitle(),
		setup{name: "w1", issues: 200, slots: 10, tools: 8, burn: h.opts.agentCPU}, h.opts.agentCPU <= 0)
}

// w2 is 20 issues, 10 slots, one turn each of a 20,000-line transcript.
func (h *harness) w2() (*report, error) {
	return h.drain("W2: 20 issues, 10 slots, 20,000-line claude transcripts, 1 turn"+h.burnTitle(),
		setup{name: "w2", issues: 20, slots: 10, lines: 20000, burn: h.opts.agentCPU}, false)
}

// w2long is W2 with 100,000-line transcripts, what a multi-hour agent session prints:
// the daemon's memory must not grow with the length of its agents' sessions.
func (h *harness) w2long() (*report, error) {
	return h.drain("W2-long: 20 issues, 10 slots, 100,000-line claude transcripts, 1 turn"+h.burnTitle(),
		setup{name: "w2long", issues: 20, slots: 10, lines: 100000, burn: h.opts.agentCPU}, false)
}

// burnTitle names -agent-cpu in a drain's title. The targets were set for the agent
// without it, so with it W1 is reported without them.
func (h *harness) burnTitle() string {
	if h.opts.agentCPU <= 0 {
		return ""
	}
	return fmt.Sprintf(", the agent burning %v of CPU per start (-agent-cpu)", h.opts.agentCPU)
}

// drain runs the workload count times, each time xargs then sortie on a fresh
// directory, and reports the medians. withTargets: W1's wall and CPU targets apply.
func (h *harness) drain(title string, s setup, withTargets bool) (*report, error) {
	var walls, limits, ratios, cpus, rsss, agentCPUs, limitCPUs, perAgent []float64
	var events int
	for i := 0; i < max(h.opts.count, 1); i++ {
		w, err := h.prepare(s)
		if err != nil {
			return nil, err
		}
		limit, limitCPU, err := h.xargs(w, s.issues, s.slots)
		if err != nil {
			return nil, err
		}
		profile := ""
		if h.opts.profile != "" && i == 0 {
			profile = filepath.Join(h.opts.profile, s.name)
		}
		d, err := h.startDaemon(w, true, true, profile)
		if err != nil {
			return nil, err
		}
		run, err := d.wait(w, 10*time.Minute)
		if err != nil {
			return nil, err
		}
		if run.handedOff != s.issues {
			return nil, fmt.Errorf("%d of %d issues were handed off (log: %s)", run.handedOff, s.issues, run.logPath)
		}
		events = w.lines * s.issues
		walls = append(walls, run.wall.Seconds())
		limits = append(limits, limit.Seconds())
		ratios = append(ratios, run.wall.Seconds()/limit.Seconds())
		cpus = append(cpus, run.cpu)
		agentCPUs, limitCPUs = append(agentCPUs, run.childCPU), append(limitCPUs, limitCPU)
		if run.childCPU > 0 {
			perAgent = append(perAgent, run.cpu/run.childCPU)
		}
		rsss = append(rsss, float64(run.maxRSSKiB))
		if h.opts.verbose {
			fmt.Fprintf(os.Stderr, "benchdrain: %s run %d: sortie %.2fs, xargs %.2fs, daemon CPU %.2fs, peak RSS %.1f MB\n",
				s.name, i+1, run.wall.Seconds(), limit.Seconds(), run.cpu, float64(run.maxRSSKiB)/1024)
		}
		h.cleanup(w)
	}
	r := &report{title: title}
	ratio, cpu := median(ratios), median(cpus)
	perIssue := cpu / float64(s.issues) * 1000
	r.add("sortie wall", fmt.Sprintf("%.2f s", median(walls)))
	r.add("xargs wall (the limit)", fmt.Sprintf("%.2f s", median(limits)))
	if withTargets {
		r.check("wall / limit", fmt.Sprintf("%.2f×", ratio), "≤ 1.5×", ratio <= 1.5)
		r.check("daemon CPU per issue", fmt.Sprintf("%.2f ms", perIssue), "≤ 2.5 ms", perIssue <= 2.5)
	} else {
		r.add("wall / limit", fmt.Sprintf("%.2f×", ratio))
		r.add("daemon CPU per issue", fmt.Sprintf("%.2f ms", perIssue))
	}
	r.add("daemon CPU", fmt.Sprintf("%.2f s", cpu))
	// What the agents themselves cost under Sortie (confined, each in its cgroup, its
	// output read through a pipe) against under xargs: the part of the wall time that
	// is not the daemon's own on a machine the drain keeps busy.
	ms := func(sec float64) float64 { return sec / float64(s.issues) * 1000 }
	r.add("agent CPU per issue: sortie / xargs", fmt.Sprintf("%.2f / %.2f ms", ms(median(agentCPUs)), ms(median(limitCPUs))))
	// The daemon's CPU over its agents', both measured in the same run: a host that
	// is slower for a while (other guests' steal) slows both alike, so this moves far
	// less from run to run than either, and is what to compare two builds by.
	if len(perAgent) > 0 {
		r.add("daemon CPU / its agents' CPU", fmt.Sprintf("%.3f", median(perAgent)))
	}
	r.peakRSSKiB = median(rsss)
	r.add("daemon peak RSS", fmt.Sprintf("%.1f MB", r.peakRSSKiB/1024))
	r.add("events per daemon CPU-second", fmt.Sprintf("%.0f", float64(events)/cpu))
	r.note("medians of %d runs; every issue handed off in each; ratios of %s", len(ratios), spread(ratios, "×"))
	return r, nil
}

// spread is "min–max" of xs.
func spread(xs []float64, unit string) string {
	lo, hi := xs[0], xs[0]
	for _, x := range xs {
		lo, hi = min(lo, x), max(hi, x)
	}
	return fmt.Sprintf("%.2f–%.2f%s", lo, hi, unit)
}
