package orchestrator

import (
	"context"
	"os"

	"sortie/internal/agent/proc"
	"sortie/internal/agentsock"
)

// runPeers binds a local run's capability token to the run's own processes
// (agentsock.RunProcesses): a token read by another agent (from a sibling's
// .sortie/mcp.json, or its MCP sidecar's /proc/<pid>/environ) is refused on the agent
// socket, and the refusal is logged with the run and the caller.
type runPeers struct {
	*agentsock.RunProcesses
	w *worker
}

// newPeers is the binding of the run's token: to the processes of the run's user
// (agent.run_as's, or the daemon's).
func (w *worker) newPeers() *runPeers {
	uid := os.Geteuid()
	if u := w.runAs(); u != nil {
		uid = int(u.UID)
	}
	return &runPeers{RunProcesses: agentsock.NewRunProcesses(uid), w: w}
}

// Admit implements agentsock.Binding, logging a refusal.
func (p *runPeers) Admit(ctx context.Context, peer agentsock.Peer) error {
	err := p.RunProcesses.Admit(ctx, peer)
	if err != nil {
		p.w.o.log.Warn("agent socket: refused a capability token presented by a process that is not its run's",
			"issue_identifier", p.w.issue.Identifier, "run_id", p.w.runID, "pid", peer.PID, "uid", peer.UID, "why", err.Error())
	}
	return err
}

// bindPeers tells the run's token binding, once the run's cgroup is settled, where
// the run's processes are: its cgroup, or else each process the daemon starts for it
// under the returned context (a fork-per-turn CLI's new process every turn). ctx
// unchanged when the run's token is not bound (no token, an SSH host).
func (w *worker) bindPeers(ctx context.Context) context.Context {
	p := w.peers
	if p == nil {
		return ctx
	}
	if w.cgroup != nil {
		p.SetCgroup(w.cgroup.Dir())
	}
	return proc.WithTrace(ctx, &proc.Trace{Starting: p.Starting, Started: p.Started, Exited: p.Exited})
}
