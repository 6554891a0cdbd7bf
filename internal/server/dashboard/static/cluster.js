// The overview's Cluster panel: the daemons that share this daemon's PostgreSQL store
// (docs/cluster.md), which of them polls the tracker, which one serves this page, and
// the issues each holds a lease on. Shown only when the state has a cluster object.
// Daemon ids and hosts come from the database: like everything else, they reach the
// page as text.

import { el, setText, issueLink, badge, table, parseTime, fmtClock, fmtInt, agoText, tickSince } from './dom.js';
import { serverClock } from './api.js';

export class ClusterPanel {
  // p: the panel ({node, count}) the daemons are drawn in; hidden until a state has
  // a cluster.
  constructor(p) {
    this.p = p;
    this.node = p.node;
    this.body = el('div', {});
    this.leases = el('span', { dataset: { field: 'leases' } });
    this.at = el('span', {});
    p.node.append(this.body, el('p', { class: 'muted small cluster-note' }, this.leases, this.at));
    this.node.hidden = true;
    this.sig = '';
  }

  // update draws c, the state's cluster (undefined for a lone daemon). The table is
  // drawn again only when something in it changed, so a hovered link stays.
  update(c) {
    this.node.hidden = !c;
    if (!c) {
      this.sig = '';
      return;
    }
    const daemons = c.daemons || [];
    const leases = c.leases || [];
    const running = leases.filter((l) => l.running).length;
    setText(this.p.count, daemons.length ? `(${daemons.length})` : '');
    setText(this.leases, `${fmtInt(leases.length)} live ${leases.length === 1 ? 'lease' : 'leases'}` +
      (leases.length ? `: ${fmtInt(running)} running an agent, ${fmtInt(leases.length - running)} waiting for a retry` : ''));
    const at = parseTime(c.at);
    setText(this.at, at ? ` · as of the last renewal, ${fmtClock(at)}` : '');

    const sig = JSON.stringify([c.self, c.leader, daemons, leases]);
    if (sig === this.sig) return;
    this.sig = sig;
    if (!daemons.length) return this.body.replaceChildren(el('p', { class: 'empty' }, 'No daemon has a heartbeat yet.'));

    const byDaemon = new Map();
    for (const l of leases) {
      if (!byDaemon.has(l.daemon)) byDaemon.set(l.daemon, []);
      byDaemon.get(l.daemon).push(l);
    }
    const now = serverClock.now();
    const t = table(['Daemon', 'Host', 'PID', 'Agents', 'Heartbeat', 'Issues'], daemons.map((d) => [
      el('span', { class: 'daemon-id' }, el('code', {}, d.id || '?'),
        d.id === c.leader ? marker('polling', 'leader', 'polls the tracker for the whole cluster') : null,
        d.id === c.self ? marker('this_daemon', 'self', 'the daemon that serves this page') : null),
      d.host || '—',
      d.pid ? String(d.pid) : '—',
      el('span', { class: 'nowrap', title: 'agents it runs now, of its agent.max_concurrent_agents' },
        d.max_concurrent_agents ? `${fmtInt(d.running || 0)} / ${fmtInt(d.max_concurrent_agents)}` : fmtInt(d.running || 0)),
      heartbeat(d, now),
      leaseList(byDaemon.get(d.id) || []),
    ]), 'cluster-daemons');
    daemons.forEach((d, i) => {
      const tr = t.tBodies[0].rows[i];
      tr.dataset.daemon = d.id || '';
      tr.classList.toggle('lapsed', !d.alive);
    });
    // A lease whose daemon is not listed (its heartbeat is gone) is still shown.
    const known = new Set(daemons.map((d) => d.id));
    const orphans = leases.filter((l) => !known.has(l.daemon));
    this.body.replaceChildren(t);
    if (orphans.length) {
      this.body.append(el('p', { class: 'muted small' }, 'Leases of daemons not listed: ',
        orphans.map((l, i) => [i ? ', ' : '', issueLink(l.issue_identifier), ` (${l.daemon || '?'})`])));
    }
    for (const n of this.body.querySelectorAll('[data-since]')) tickSince(n, now);
  }
}

// marker is a daemon's role in the cluster, a badge with data-marker set to key.
function marker(status, key, title) {
  const b = badge(status, title);
  b.dataset.marker = key;
  return b;
}

// heartbeat is alive, or lapsed and for how long: a lapsed daemon's runs and retries
// are taken over by the others.
function heartbeat(d, now) {
  const started = parseTime(d.started_at);
  const expires = parseTime(d.expires_at);
  const since = started ? `started ${agoText(started, now)}` : '';
  if (d.alive) {
    return badge('alive', [since, expires ? `heartbeat valid until ${fmtClock(expires)}` : ''].filter(Boolean).join(' · '));
  }
  return el('span', { class: 'nowrap' },
    badge('lapsed', [since, 'its heartbeat expired: the other daemons take its runs and retries over'].filter(Boolean).join(' · ')),
    expires ? el('span', { class: 'muted' }, ' for ', el('span', { dataset: { since: d.expires_at } }, '—')) : null);
}

// leaseList is the issues a daemon holds a lease on: running an agent, or waiting for
// a retry (marked).
function leaseList(list) {
  if (!list.length) return el('span', { class: 'muted' }, '—');
  return el('span', { class: 'lease-list' }, list.map((l) => el('span', { class: 'nowrap', dataset: { lease: l.issue_identifier || '' } },
    issueLink(l.issue_identifier),
    l.running ? null : el('span', { class: 'muted', title: 'the lease is kept while the issue waits for a retry' }, ' (retry)'))));
}
