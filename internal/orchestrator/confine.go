package orchestrator

import (
	"fmt"
	"os"
	"strconv"

	"sortie/internal/agent"
	"sortie/internal/agent/supervise"
	"sortie/internal/config"
	"sortie/internal/confine"
	"sortie/internal/runas"
)

// confinement is the run's confinement, or nil when its agent runs unconfined (an SSH
// host, agent.sandbox.mode off, no Landlock here). A confined run gets a private
// temporary directory (its TMPDIR, Policy.Write[1]), which cleanup removes.
func (w *worker) confinement(cfg *config.Config, env []string) (*agent.Confinement, func(), error) {
	s := w.o.opts.Sandbox
	if ok, _ := s.Confined(cfg); !ok || w.e.host != "" {
		return nil, func() {}, nil
	}
	parent := confine.RunTmpRoot(cfg)
	if err := os.MkdirAll(parent, 0o711); err != nil { // run_as users search it, never list it
		return nil, nil, fmt.Errorf("the runs' temporary directory: %w", err)
	}
	tmp, err := w.o.runTmp.Get(parent, w.runID, w.runAs())
	if err != nil {
		return nil, nil, fmt.Errorf("the run's temporary directory: %w", err)
	}
	// Kept for another run only when nothing of this one's can still be running: the
	// cgroup it ran in was emptied and removed (closeCgroup, which runs first).
	cleanup := func() { w.o.runTmp.Put(tmp, w.cgroupEmptied) }
	w.confined = true
	return &agent.Confinement{Self: s.Self, Policy: s.RunPolicy(cfg, w.ws.Path, tmp, env), Owner: w.runAs()}, cleanup, nil
}

// supervision runs a local agent under `sortie supervise`, which stops whatever the
// agent leaves behind when its CLI exits (agent.keep_processes opts out); nil over SSH
// and for a daemon that has no sortie executable to run it with (tests).
func (w *worker) supervision() *agent.Supervision {
	if w.e.host != "" || w.o.opts.Sandbox.Self == "" {
		return nil
	}
	s := &agent.Supervision{Self: w.o.opts.Sandbox.Self, KeepProcesses: w.cfg.Agent.KeepProcesses}
	if w.cgroup != nil {
		s.CgroupFD = w.cgroup.FD()
	}
	return s
}

// closeCgroup kills what is left in the run's cgroup (unless agent.keep_processes)
// and removes it, once the run's agent has stopped.
func (w *worker) closeCgroup() {
	g := w.cgroup
	if g == nil {
		return
	}
	w.cgroup = nil
	if w.cfg.Agent.KeepProcesses {
		g.Release()
		return
	}
	n, err := g.Kill(supervise.DefaultGrace)
	w.cgroupEmptied = err == nil
	if err != nil || n > 0 {
		w.o.log.Warn("killed what the agent left running in its run's cgroup", "issue_identifier", w.issue.Identifier,
			"run_id", w.runID, "count", n, "error", err)
	}
}

// openCgroup gives a local supervised run its own cgroup when the daemon has a tree of
// them (Options.Cgroups). Without one the run goes on: the supervisor still owns its
// process tree.
func (w *worker) openCgroup() {
	if w.o.opts.Cgroups == nil || w.supervision() == nil {
		return
	}
	g, err := w.o.opts.Cgroups.Run(w.runID)
	if err != nil {
		w.o.log.Warn("the run gets no cgroup of its own", "issue_identifier", w.issue.Identifier, "error", err)
		return
	}
	w.cgroup = g
}

// stopLeftovers stops what the run's local agent left running that its supervisor
// could not (a supervisor killed before it swept): every process whose environment
// still carries SORTIE_RUN_ID=<this run> and SORTIE_WORKSPACE=<its workspace> (run ids
// alone repeat across daemons). Not with agent.keep_processes, nor for a run
// without a supervisor.
func (w *worker) stopLeftovers() {
	s := w.supervision()
	if s == nil || s.KeepProcesses {
		return
	}
	if w.cgroup != nil && w.confined {
		// Every process of a confined run is in its cgroup, which it cannot leave, and
		// closeCgroup kills that whole: no need to read every process's environment.
		return
	}
	if n := supervise.StopMarked(supervise.DefaultGrace, "SORTIE_RUN_ID="+strconv.FormatInt(w.runID, 10),
		"SORTIE_WORKSPACE="+w.ws.Path); n > 0 {
		w.o.log.Warn("stopped processes the agent left running after its run", "issue_identifier", w.issue.Identifier,
			"run_id", w.runID, "count", n)
	}
}

// runAs is the OS user the run's agent runs as: agent.run_as's for a local agent, nil
// (the daemon's) otherwise, and always nil over SSH, where the remote login decides.
func (w *worker) runAs() *runas.User {
	if w.e.host != "" {
		return nil
	}
	return w.o.opts.RunAs
}
