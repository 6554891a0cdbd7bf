package orchestrator

import "sortie/internal/config"

// pickHost chooses where the next agent runs. With no worker.ssh_hosts it returns ""
// (local). Otherwise it prefers the host named by prefer (the one holding the agent's
// session) when it has a free slot, else the least-loaded host with a free slot; when
// every host is full it returns false and the issue waits — there is no silent
// fallback to local.
func (o *Orchestrator) pickHost(cfg *config.Config, prefer string) (string, bool) {
	hosts := cfg.Worker.SSHHosts
	if len(hosts) == 0 {
		return "", true
	}
	limit := cfg.Worker.MaxConcurrentAgentsPerHost
	free := func(h string) bool { return limit <= 0 || o.hostLoad[h] < limit }
	if prefer != "" {
		for _, h := range hosts {
			if h == prefer {
				if free(h) {
					return h, true
				}
				// The session lives there; waiting for it is better than losing it.
				return "", false
			}
		}
	}
	best, found := "", false
	for _, h := range hosts {
		if free(h) && (!found || o.hostLoad[h] < o.hostLoad[best]) {
			best, found = h, true
		}
	}
	return best, found
}
