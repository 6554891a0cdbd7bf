package orchestrator

import (
	"context"

	"sortie/internal/config"
	"sortie/internal/tracker"
)

// Decision is what a dry run would do with one candidate: dispatch it (Reason "") or
// skip it, and why.
type Decision struct {
	Issue  tracker.Issue
	Reason string
}

// Plan fetches candidates once and applies the same sort, eligibility and slot rules
// as the loop, with nothing running, to show what a first tick would dispatch. It
// writes nothing and starts nothing.
func Plan(ctx context.Context, cfg *config.Config, trk tracker.Tracker) ([]Decision, error) {
	issues, err := trk.FetchCandidateIssues(ctx)
	if err != nil {
		return nil, err
	}
	o := &Orchestrator{running: map[string]*runningEntry{}, retrying: map[string]*retryEntry{},
		holds: map[string]*hold{}, hostLoad: map[string]int{}}
	var out []Decision
	for _, is := range SortForDispatch(issues) {
		why := o.eligible(cfg, is)
		if why == "" && o.globalSlots(cfg) <= 0 {
			why = "no free agent slot (agent.max_concurrent_agents)"
		}
		if why == "" && o.stateSlots(cfg, is.State) <= 0 {
			why = "no free slot for state " + is.State + " (agent.max_concurrent_agents_by_state)"
		}
		if why == "" {
			host, ok := o.pickHost(cfg, "")
			if !ok {
				why = "no SSH host with a free slot"
			} else {
				// Count it as running so later slot checks see it.
				o.running[is.ID] = &runningEntry{issue: is, host: host}
				if host != "" {
					o.hostLoad[host]++
				}
			}
		}
		out = append(out, Decision{Issue: is, Reason: why})
	}
	return out, nil
}
