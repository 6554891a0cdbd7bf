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

// crossChecks compares workloads: W2's peak RSS against W1's (flat memory).
func crossChecks(reports []*report) *report {
	var w1, w2 *report
	for _, r := range reports {
		switch {
		case strings.HasPrefix(r.title, "W1"):
			w1 = r
		case strings.HasPrefix(r.title, "W2"):
			w2 = r
		}
	}
	if w1 == nil || w2 == nil || w1.peakRSSKiB == 0 {
		return nil
	}
	r := &report{title: "Flat memory: W2 against W1"}
	ratio := w2.peakRSSKiB / w1.peakRSSKiB
	r.check("peak RSS W2 / W1", fmt.Sprintf("%.2f× (%.1f MB / %.1f MB)", ratio, w2.peakRSSKiB/1024, w1.peakRSSKiB/1024), "≤ 1.5×", ratio <= 1.5)
	return r
}
