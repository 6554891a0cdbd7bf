// The dashboard's entry point: the header and banners every page shares, the state
// poll, the event stream, and the page itself (overview.js or issue.js).

import { el, setText, fmtDuration, parseTime, agoText, tickSince, tickDue } from './dom.js';
import { getJSON, AuthError, APIError, EventStream, serverClock, Poller } from './api.js';
import { startOverview } from './overview.js';
import { startIssue } from './issue.js';

const STATE_EVERY = 2000; // ms between state refreshes while the page is visible

// Banners are messages across the top of the page, one per key.
class Banners {
  constructor(node) {
    this.node = node;
    this.byKey = new Map();
  }

  set(key, tone, ...content) {
    const b = el('div', { class: `banner ${tone}`, role: tone === 'error' ? 'alert' : 'status', dataset: { banner: key } }, ...content);
    const old = this.byKey.get(key);
    if (old && old.textContent === b.textContent) return;
    if (old) old.replaceWith(b);
    else this.node.append(b);
    this.byKey.set(key, b);
  }

  clear(key) {
    const old = this.byKey.get(key);
    if (old) old.remove();
    this.byKey.delete(key);
  }
}

function main() {
  const body = document.body;
  const banners = new Banners(document.getElementById('banners'));
  const status = document.getElementById('status');
  const h = {
    version: document.getElementById('version'),
    uptime: el('span', { class: 'pill', title: 'time since the daemon started', hidden: true }),
    poll: el('span', { class: 'pill', hidden: true }),
    webhook: el('span', { class: 'pill', hidden: true, dataset: { role: 'webhook' } }),
    draining: el('span', { class: 'pill warn', hidden: true, title: 'no new work is dispatched; running sessions finish' }, 'draining'),
    live: el('span', { class: 'pill live', title: 'live event stream' }, 'connecting'),
  };
  status.append(h.uptime, h.poll, h.webhook, h.draining, h.live);

  let state = null;
  let stateAt = 0;
  const listeners = [];
  const page = body.dataset.page === 'issue' ? 'issue' : 'overview';
  const ctx = {
    banners,
    // onState registers fn(state) for every fresh /api/v1/state.
    onState(fn) {
      listeners.push(fn);
      if (state) fn(state);
    },
    refreshState: () => statePoll.kick(),
    // handleError shows err's banner; it returns a slower poll interval (ms) for errors
    // that will not go away soon.
    handleError,
  };

  function handleError(err) {
    if (err.name === 'AbortError') return 0;
    if (err instanceof AuthError) {
      banners.set('auth', 'error',
        el('strong', {}, 'Log in needed. '),
        'This daemon asks for its access token (server.auth_token), and this browser is not logged in ' +
        '(the login expired, or the token changed). Reload the page to get the login form, or open ',
        el('code', {}, `${location.origin}/login?token=…`),
        ' with the token in place of …. This page picks up the login by itself.');
      body.dataset.auth = 'required';
      return 5000;
    }
    if (err instanceof APIError && err.code === 'unreachable') {
      banners.set('conn', 'error', el('strong', {}, 'The daemon is not answering. '),
        'It may have stopped or restarted; this page keeps trying.');
      return 3000;
    }
    banners.set('api', 'error', el('strong', {}, 'The API answered an error: '), err.message);
    return 5000;
  }

  function clearErrors() {
    banners.clear('auth');
    banners.clear('conn');
    banners.clear('api');
    delete body.dataset.auth;
  }

  async function loadState() {
    try {
      const s = await getJSON('/api/v1/state');
      serverClock.observe(s.generated_at);
      clearErrors();
      state = s;
      stateAt = Date.now();
      renderHeader(s);
      for (const fn of listeners) fn(s);
      body.dataset.loaded = 'true';
      return 0;
    } catch (err) {
      return handleError(err);
    }
  }

  function renderHeader(s) {
    setText(h.version, s.version || body.dataset.version || '');
    tickHeader();
    h.draining.hidden = !s.draining;
    if (s.draining) {
      banners.set('draining', 'warn', el('strong', {}, 'Draining. '),
        'The daemon is shutting down: it dispatches no new work and waits for the running sessions to end.');
    } else banners.clear('draining');
    const wf = s.workflow || {};
    if (wf.reload_error) {
      banners.set('reload', 'error', el('strong', {}, 'WORKFLOW.md was not reloaded. '),
        'Sortie keeps running with the last configuration that loaded. Fix the file and save it again. ',
        el('pre', { class: 'banner-detail' }, wf.reload_error),
        wf.path ? el('span', { class: 'muted' }, wf.path) : null);
    } else banners.clear('reload');
    if (s.agents_confined === false) {
      banners.set('confine', 'warn', el('strong', {}, 'Agents not confined. '),
        'They can read and write whatever the daemon\'s user can, its database and secrets included' +
        (s.not_confined ? ` (${s.not_confined}). ` : '. '),
        el('span', { class: 'muted' }, 'See "Confinement" in docs/security.md.'));
    } else banners.clear('confine');
    // The cluster's view is as old as its last good renewal; a daemon that cannot
    // renew for a whole lease stops its agents (docs/cluster.md).
    if (s.cluster?.error) {
      banners.set('cluster', 'warn', el('strong', {}, 'This daemon could not renew its leases or read the cluster: '),
        s.cluster.error,
        el('span', { class: 'muted' }, '. If it cannot renew them for a whole cluster.lease_ms, it stops its agents, ' +
          'since other daemons may take its issues over. See docs/cluster.md.'));
    } else banners.clear('cluster');
    if (s.last_poll_ok === false && s.last_error) {
      banners.set('poll', 'warn', el('strong', {}, 'The last tracker poll failed: '), s.last_error);
    } else banners.clear('poll');
  }

  function tickHeader() {
    if (!state) return;
    h.uptime.hidden = h.poll.hidden = false;
    const up = (state.uptime_seconds || 0) + (Date.now() - stateAt) / 1000;
    setText(h.uptime, `up ${fmtDuration(up)}`);
    const at = parseTime(state.last_poll_at);
    const failed = state.last_poll_ok === false;
    setText(h.poll, at ? `${failed ? 'poll failed' : 'polled'} ${agoText(at, serverClock.now())}` : 'not polled yet');
    h.poll.className = 'pill ' + (failed ? 'error' : 'ok');
    h.poll.title = failed && state.last_error ? state.last_error : 'last poll of the tracker';
    tickWebhook(state.webhooks || []);
  }

  // tickWebhook shows the tracker's last authentic webhook delivery (docs/webhooks.md):
  // when it came, in green. Refused requests, which anyone can send, change neither its
  // time nor its colour once deliveries have been accepted; with none accepted yet it
  // is amber, so a wrong secret shows. The tooltip has the last request and the counts.
  function tickWebhook(hooks) {
    const last = hooks.reduce((a, w) => (!a || parseTime(w.last_at) > parseTime(a.last_at) ? w : a), null);
    h.webhook.hidden = !last;
    if (!last) return;
    const accepted = parseTime(last.last_accepted_at);
    const ok = accepted !== null;
    setText(h.webhook, ok ? `${last.tracker} webhook ${agoText(accepted, serverClock.now())}` : `${last.tracker} webhooks refused`);
    h.webhook.className = 'pill ' + (ok ? 'ok' : 'warn');
    const counts = Object.entries(last.counts || {}).filter(([, v]) => v > 0).map(([k, v]) => `${v} ${k.replace('_', ' ')}`).join(', ');
    h.webhook.title = `last request: ${last.last_event || 'unknown event'}, ${last.last_result.replace('_', ' ')}` +
      (counts ? ` (since start-up: ${counts})` : '');
  }

  const statePoll = new Poller(loadState, STATE_EVERY);
  const stream = (url, onActivity) => new EventStream(url, onActivity, (st) => {
    body.dataset.live = st;
    setText(h.live, st === 'open' ? 'live' : st === 'down' ? 'offline' : 'connecting');
    h.live.className = 'pill live ' + st;
    // Anything that happened while the stream was down is only in the state.
    if (st === 'open') statePoll.kick(0);
  });
  ctx.stream = stream;
  setInterval(() => {
    tickHeader();
    const now = serverClock.now();
    for (const n of document.querySelectorAll('[data-since]')) tickSince(n, now);
    for (const n of document.querySelectorAll('[data-due]')) tickDue(n, now);
  }, 1000);

  const mainEl = document.getElementById('main');
  if (page === 'issue') startIssue(mainEl, ctx, body.dataset.issue);
  else startOverview(mainEl, ctx);
  statePoll.start();
}

main();
