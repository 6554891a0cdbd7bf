package config

import "strings"

// agent.tracker_reads: what tracker_api lets an agent read of the other issues of the
// project. Writes act on the agent's own issue whatever it says.
const (
	// TrackerReadsOwn (the default): another issue's fields without its comments, and
	// no fetch_comments of it.
	TrackerReadsOwn = "own"
	// TrackerReadsProject: any issue of the configured project, comments included.
	TrackerReadsProject = "project"
)

// buildTrackerReads reads agent.tracker_reads into a.TrackerReads: "" when absent,
// which is TrackerReadsOwn.
func (b *builder) buildTrackerReads(a *AgentConfig, sec map[string]any) {
	const field = "agent.tracker_reads"
	v, ok := b.value(sec, field)
	if !ok {
		return
	}
	s, _ := v.(string)
	switch strings.ToLower(strings.TrimSpace(s)) {
	case TrackerReadsOwn:
		a.TrackerReads = TrackerReadsOwn
	case TrackerReadsProject:
		a.TrackerReads = TrackerReadsProject
	default:
		b.invalid(field, "must be own (the default: another issue's fields without its comments) or project (every issue of tracker.project, comments included)", v)
	}
}
