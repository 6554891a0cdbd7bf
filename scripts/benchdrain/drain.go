package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// w1 is 200 issues, 10 slots, one turn each of an 8-tool transcript: the fake agent
// costs about 3 ms of CPU, so the drain is all start-up and scheduling.
func (h *harness) w1() (*report, error) {
	return h.drain("W1: 200 issues, 10 slots, an 8-tool claude transcript, 1 turn"+h.burnTitle(h.opts.agentCPU),
		setup{name: "w1", issues: 200, slots: 10, tools: 8, burn: h.opts.agentCPU}, w1Targets(h.opts.agentCPU))
}

// w1cpu is W1 with an agent that burns 10 ms of CPU at each start, what a small real
// CLI's start costs: the daemon's share of the wall time is what it is against a
// real agent.
func (h *harness) w1cpu() (*report, error) {
	burn := max(h.opts.agentCPU, heavyAgent)
	return h.drain("W1-cpu: 200 issues, 10 slots, an 8-tool claude transcript, 1 turn"+h.burnTitle(burn),
		setup{name: "w1cpu", issues: 200, slots: 10, tools: 8, burn: burn}, w1Targets(burn))
}

// heavyAgent is W1-cpu's agent start.
const heavyAgent = 10 * time.Millisecond

// targets are a drain's targets: wall over the xargs limit, and the daemon's CPU per
// issue; 0 for none.
type targets struct {
	wall, cpuMS float64
}

// w1Targets are W1's: with the 3 ms fake agent, wall ≤ 2.0× the limit (the daemon
// confines, supervises and records every agent, which xargs does not) and daemon CPU
// ≤ 2.5 ms per issue; with an agent of at least heavyAgent per start, wall ≤ 1.3×.
func w1Targets(burn time.Duration) targets {
	switch {
	case burn <= 0:
		return targets{wall: 2.0, cpuMS: 2.5}
	case burn >= heavyAgent:
		return targets{wall: 1.3, cpuMS: 2.5}
	}
	return targets{cpuMS: 2.5}
}

// w2 is 20 issues, 10 slots, one turn each of a 20,000-line transcript.
func (h *harness) w2() (*report, error) {
	return h.drain("W2: 20 issues, 10 slots, 20,000-line claude transcripts, 1 turn"+h.burnTitle(h.opts.agentCPU),
		setup{name: "w2", issues: 20, slots: 10, lines: 20000, burn: h.opts.agentCPU}, targets{})
}

// w2long is W2 with 100,000-line transcripts, what a multi-hour agent session prints:
// the daemon's memory must not grow with the length of its agents' sessions.
func (h *harness) w2long() (*report, error) {
	return h.drain("W2-long: 20 issues, 10 slots, 100,000-line claude transcripts, 1 turn"+h.burnTitle(h.opts.agentCPU),
		setup{name: "w2long", issues: 20, slots: 10, lines: 100000, burn: h.opts.agentCPU}, targets{})
}

// burnTitle names the agent's CPU burn in a drain's title.
func (h *harness) burnTitle(burn time.Duration) string {
	if burn <= 0 {
		return ""
	}
	return fmt.Sprintf(", the agent burning %v of CPU per start", burn)
}

// drain runs the workload count times, each time xargs then sortie on a fresh
// directory, and reports the medians, each beside its target when t sets one.
func (h *harness) drain(title string, s setup, t targets) (*report, error) {
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
	if t.wall > 0 {
		r.check("wall / limit", fmt.Sprintf("%.2f×", ratio), fmt.Sprintf("≤ %.1f×", t.wall), ratio <= t.wall)
	} else {
		r.add("wall / limit", fmt.Sprintf("%.2f×", ratio))
	}
	if t.cpuMS > 0 {
		r.check("daemon CPU per issue", fmt.Sprintf("%.2f ms", perIssue), fmt.Sprintf("≤ %.1f ms", t.cpuMS), perIssue <= t.cpuMS)
	} else {
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
