package workflow

import "slices"

// Gate is a blocking checkpoint on every path through a workflow: a required,
// blocking checkpoint of an activity that every way from the initial activity to an
// end passes through. A session that ends without a human's answer to each gate
// skipped a human (docs/workflows.md, "Hand-off"); the daemon does not hand such an
// issue off.
type Gate struct {
	Activity   string
	Checkpoint string
}

// Gates returns the workflow's gates in activity order, then checkpoint order.
//
// An end is an activity a session cannot leave (Next). A free_entry activity may be
// entered from any activity, so it counts as a successor of each. An activity is on
// every path when no end is reachable from the initial activity without it; the
// initial activity always is. A workflow with no reachable end has only the initial
// activity's gates.
func (w *Workflow) Gates() []Gate {
	if len(w.Activities) == 0 {
		return nil
	}
	start := w.InitialActivity
	if start == "" {
		start = w.Activities[0].ID
	}
	var free []string
	ends := map[string]bool{}
	byID := make(map[string]*Activity, len(w.Activities))
	for _, a := range w.Activities {
		byID[a.ID] = a
		if a.FreeEntry {
			free = append(free, a.ID)
		}
		if len(w.Next(a)) == 0 {
			ends[a.ID] = true
		}
	}
	// reachesEnd reports whether an end is reachable from start without entering skip.
	reachesEnd := func(skip string) bool {
		if start == skip {
			return false
		}
		seen := map[string]bool{start: true}
		queue := []string{start}
		for len(queue) > 0 {
			id := queue[0]
			queue = queue[1:]
			if ends[id] {
				return true
			}
			a, ok := byID[id]
			if !ok {
				continue
			}
			for _, next := range slices.Concat(w.Next(a), free) {
				if next != skip && !seen[next] {
					seen[next] = true
					queue = append(queue, next)
				}
			}
		}
		return false
	}
	anyEnd := reachesEnd("")
	var out []Gate
	for _, a := range w.Activities {
		if a.ID != start && (!anyEnd || reachesEnd(a.ID)) {
			continue
		}
		for _, cp := range a.Checkpoints {
			if cp.Required && cp.Blocking {
				out = append(out, Gate{Activity: a.ID, Checkpoint: cp.ID})
			}
		}
	}
	return out
}

// Next returns the activities a session may enter from a, free-entry ones aside: a's
// successors (Successors) and, when a is an activity of a loop, the loop's activity and
// the loop's activities, which the loop returns to. next_activity refuses any other
// target that is not a.ID itself. An activity with no Next ends the workflow.
func (w *Workflow) Next(a *Activity) []string {
	out := a.successors()
	for _, p := range w.Activities {
		for _, l := range p.Loops {
			if slices.Contains(l.Activities, a.ID) {
				out = append(out, p.ID)
				out = append(out, l.Activities...)
			}
		}
	}
	return out
}

// hasBlockingAfterStart reports whether an activity other than start has a required,
// blocking checkpoint.
func (w *Workflow) hasBlockingAfterStart(start string) bool {
	for _, a := range w.Activities {
		if a.ID == start {
			continue
		}
		for _, cp := range a.Checkpoints {
			if cp.Required && cp.Blocking {
				return true
			}
		}
	}
	return false
}
