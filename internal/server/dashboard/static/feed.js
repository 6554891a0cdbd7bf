// Live event feeds: what an activity from the event stream looks like as a row.

import { el, fmtClock, fmtMillis, parseTime, fmtCost } from './dom.js';

// describe turns an activity (normalized by api.js; for agent_event, its agent event) into
// {time, kind, text, tone}, or null for what a feed does not show: token usage (the
// counters show it), polls and reload errors (the header and banner do).
export function describe(a) {
  const time = parseTime(a.time) || new Date();
  const row = (kind, text, tone = '') => ({ time, kind, text: String(text ?? ''), tone });
  switch (a.kind) {
    case 'agent_event':
      return describeAgentEvent(a.event || {}, row);
    case 'dispatch':
      return row('run', a.attempt ? `run started (attempt ${a.attempt})` : 'run started', 'info');
    case 'turn': {
      const ok = a.result === 'turn_completed';
      const text = `turn ${String(a.result || 'ended').replace(/^turn_/, '').replace(/_/g, ' ')}` +
        (a.duration_ms ? ` in ${fmtMillis(a.duration_ms)}` : '') + (a.message ? `: ${a.message}` : '');
      return row('turn', text, ok ? 'ok' : 'error');
    }
    case 'run_finished': {
      const good = a.result === 'succeeded' || a.result === 'handed_off';
      const parts = [`run ${String(a.result || 'finished').replace(/_/g, ' ')}`];
      if (a.duration_ms) parts.push(`after ${fmtMillis(a.duration_ms)}`);
      if (a.cost_usd) parts.push(fmtCost(a.cost_usd));
      return row('run', parts.join(' · ') + (a.message ? `: ${a.message}` : ''), good ? 'ok' : 'warn');
    }
    case 'handoff':
      return a.result === 'success'
        ? row('handoff', `handed off to ${a.message || 'humans'}`, 'ok')
        : row('handoff', `handoff failed: ${a.message || ''}`, 'error');
    case 'retry': {
      const inText = a.duration_ms ? ` in ${fmtMillis(a.duration_ms)}` : '';
      return row('retry', `${a.result || 'retry'} retry #${a.attempt || '?'}${inText}` + (a.message ? `: ${a.message}` : ''), 'warn');
    }
    case 'hold':
      return row('hold', `held (${String(a.result || 'hold').replace(/_/g, ' ')})` + (a.message ? `: ${a.message}` : ''), 'warn');
    case 'checkpoint': {
      const tone = { armed: 'warn', answered: 'ok', resolved: 'info' }[a.result] || '';
      return row('checkpoint', `checkpoint ${a.result || ''}` + (a.message ? `: ${a.message}` : ''), tone);
    }
    case 'reconcile':
      return row('reconcile', `${a.result || 'reconciled'}` + (a.message ? `: ${a.message}` : ''), 'info');
    default:
      return null;
  }
}

function describeAgentEvent(ev, row) {
  const msg = ev.message || '';
  switch (ev.type) {
    case 'token_usage':
      return null;
    case 'session_started':
      return row('session', 'session started' + (ev.model ? ` · ${ev.model}` : ''), 'info');
    case 'notification':
      return row('note', msg || 'notification');
    case 'tool_result': {
      const name = ev.tool_name || 'tool';
      const dur = ev.tool_duration_ms ? ` · ${fmtMillis(ev.tool_duration_ms)}` : '';
      return ev.tool_error
        ? row('tool', `${name}${dur} · failed${msg ? ': ' + msg : ''}`, 'error')
        : row('tool', `${name}${dur}`, 'tool');
    }
    // The turn activity that follows says how the turn ended, with its duration.
    case 'turn_completed':
    case 'turn_failed':
    case 'turn_cancelled':
    case 'turn_ended_with_error':
      return null;
    case 'turn_input_required':
      return row('input', 'input required' + (msg ? `: ${msg}` : ''), 'warn');
    case 'startup_failed':
      return row('error', 'startup failed' + (msg ? `: ${msg}` : ''), 'error');
    case 'approval_auto_approved':
      return row('approval', 'auto-approved' + (msg ? `: ${msg}` : ''));
    case 'unsupported_tool_call':
      return row('tool', 'unsupported tool call' + (ev.tool_name ? `: ${ev.tool_name}` : ''), 'warn');
    case 'malformed':
      return row('malformed', 'unreadable line from the agent' + (msg ? `: ${msg}` : ''), 'warn');
    case 'other_message':
      return msg ? row('message', msg) : null;
    default:
      return row(String(ev.type || 'event'), msg);
  }
}

// Short names for the agent event types, as the live rows show them.
const SHORT = {
  notification: 'note', tool_result: 'tool', session_started: 'session', turn_completed: 'turn',
  turn_failed: 'turn', turn_cancelled: 'turn', turn_ended_with_error: 'turn', turn_input_required: 'input',
  startup_failed: 'error', approval_auto_approved: 'approval', unsupported_tool_call: 'tool', other_message: 'message',
};
const TONE = {
  turn_completed: 'ok', turn_failed: 'error', turn_ended_with_error: 'error', startup_failed: 'error',
  turn_cancelled: 'warn', turn_input_required: 'warn', malformed: 'warn', unsupported_tool_call: 'warn',
  tool_result: 'tool', session_started: 'info',
};

// describeRecent turns one of an issue's recent events ({time, type, message}, as the
// daemon keeps them) into a row.
export function describeRecent(e) {
  const type = String(e.type || 'event');
  const text = String(e.message || '') || type.replace(/_/g, ' ');
  return { time: parseTime(e.time) || new Date(), kind: SHORT[type] || type, text, tone: TONE[type] || '' };
}

// Feed is a list of rows, newest first, keeping at most max.
export class Feed {
  constructor(max = 50) {
    this.max = max;
    this.rows = [];
  }

  // add records r (from describe) and returns whether it was kept.
  add(r) {
    if (!r) return false;
    this.rows.unshift(r);
    if (this.rows.length > this.max) this.rows.length = this.max;
    return true;
  }
}

// rowEl renders one row.
export function rowEl(r) {
  return el('li', { class: 'ev' + (r.tone ? ' tone-' + r.tone : '') },
    el('time', { datetime: r.time.toISOString(), title: r.time.toLocaleString() }, fmtClock(r.time)),
    el('span', { class: 'ev-kind' }, r.kind),
    el('span', { class: 'ev-text', title: r.text.length > 120 ? r.text : null }, r.text));
}

// FeedView shows a Feed in an <ol>, adding new rows at the top without redrawing the
// rest, and an empty-state line while there are none.
export class FeedView {
  constructor(feed, emptyText) {
    this.feed = feed;
    this.list = el('ol', { class: 'feed', 'aria-live': 'off' });
    this.empty = el('p', { class: 'feed-empty muted' }, emptyText);
    this.node = el('div', { class: 'feed-box' }, this.empty, this.list);
    for (const r of [...feed.rows].reverse()) this.prepend(r);
    this.sync();
  }

  prepend(r) {
    this.list.prepend(rowEl(r));
    while (this.list.childElementCount > this.feed.max) this.list.lastElementChild.remove();
    this.sync();
  }

  sync() {
    this.empty.hidden = this.list.childElementCount > 0;
  }
}
