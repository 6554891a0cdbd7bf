package main

import (
	"fmt"
	"io"
	"strings"
)

// report is one workload's figures, each beside its target.
type report struct {
	title string
	rows  []row
	notes []string
	// kept for the checks across workloads
	peakRSSKiB float64
}

type row struct {
	metric, value, target string
	met                   *bool // nil: no target
}

func (r *report) add(metric, value string) {
	r.rows = append(r.rows, row{metric: metric, value: value})
}

func (r *report) check(metric, value, target string, met bool) {
	r.rows = append(r.rows, row{metric: metric, value: value, target: target, met: &met})
}

func (r *report) note(format string, args ...any) {
	r.notes = append(r.notes, fmt.Sprintf(format, args...))
}

func (r *report) print(w io.Writer) {
	fmt.Fprintf(w, "\n%s\n", r.title)
	mw, vw := len("metric"), len("value")
	for _, x := range r.rows {
		mw, vw = max(mw, len(x.metric)), max(vw, len(x.value))
	}
	fmt.Fprintf(w, "  %-*s  %-*s  %s\n", mw, "metric", vw, "value", "target")
	fmt.Fprintf(w, "  %s  %s  %s\n", strings.Repeat("-", mw), strings.Repeat("-", vw), strings.Repeat("-", 20))
	for _, x := range r.rows {
		target := x.target
		if x.met != nil {
			verdict := "met"
			if !*x.met {
				verdict = "NOT MET"
			}
			target += "  " + verdict
		}
		fmt.Fprintf(w, "  %-*s  %-*s  %s\n", mw, x.metric, vw, x.value, target)
	}
	for _, n := range r.notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
}

// crossChecks compares workloads' peak RSS, side by side: W2's against W1's (longer
// transcripts, same issues) and W2-long's against W2's (five times longer again). The
// daemon's memory must follow the number of agents, not the length of their sessions.
func crossChecks(reports []*report) *report {
	var w1, w2, long *report
	for _, r := range reports {
		switch {
		case strings.HasPrefix(r.title, "W1:"):
			w1 = r
		case strings.HasPrefix(r.title, "W2-long:"):
			long = r
		case strings.HasPrefix(r.title, "W2:"):
			w2 = r
		}
	}
	mb := func(r *report) string { return fmt.Sprintf("%.1f MB", r.peakRSSKiB/1024) }
	r := &report{title: "Flat memory: peak RSS of W1, W2 and W2-long"}
	for _, x := range []*report{w1, w2, long} {
		if x != nil && x.peakRSSKiB > 0 {
			r.add("peak RSS "+strings.SplitN(x.title, ":", 2)[0], mb(x))
		}
	}
	if w1 != nil && w2 != nil && w1.peakRSSKiB > 0 {
		ratio := w2.peakRSSKiB / w1.peakRSSKiB
		r.check("peak RSS W2 / W1", fmt.Sprintf("%.2f×", ratio), "≤ 1.5×", ratio <= 1.5)
	}
	if w2 != nil && long != nil && w2.peakRSSKiB > 0 {
		ratio := long.peakRSSKiB / w2.peakRSSKiB
		r.check("peak RSS W2-long / W2", fmt.Sprintf("%.2f×", ratio), "≤ 1.3×", ratio <= 1.3)
	}
	if len(r.rows) < 2 {
		return nil
	}
	return r
}
