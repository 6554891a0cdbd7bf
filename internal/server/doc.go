// Package server is the daemon's HTTP surface for operators: the health probes
// (/livez, /readyz), the JSON API under /api/v1 (state, run history, issue detail,
// refresh), the live feed of orchestrator activity as Server-Sent Events, and the
// mount points of /metrics and the dashboard, all behind one bearer-token check.
//
// It reads the scheduler only through the functions in Options and run history only
// through Runs; the one thing it asks the scheduler to do is poll now (refresh). It
// owns no scheduling state. The dashboard's assets live in server/dashboard and the
// metrics in internal/metrics; internal/daemon mounts them here. docs/api.md is the
// reference for every route.
package server
