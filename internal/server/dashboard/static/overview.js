// The overview page (/): counters, running sessions with their live events, the pull
// requests of handed-off issues (when any is watched), the retry queue, issues awaiting
// input, held issues, the cluster of daemons (when there is one), usage over time and
// run history.

import { el, setText, issueLink, badge, table, fmtTokens, fmtInt, fmtCost, fmtDuration, parseTime, timeEl, clip, agoText, tickSince, tickDue } from './dom.js';
import { getJSON, serverClock, Poller } from './api.js';
import { Feed, describe } from './feed.js';
import { SessionCard } from './session.js';
import { bucketize, usageChart, legend } from './chart.js';
import { runsTable } from './runs.js';
import { Answers, checkpointCard } from './checkpoint.js';
import { ClusterPanel } from './cluster.js';
import { ReactionsPanel } from './reactions.js';

const FEED_ROWS = 50; // kept per session
const FEEDS_KEPT = 200; // sessions whose feeds are kept (the newest)
const HISTORY_PAGE = 25;
const CHART_RUNS = 500; // the newest runs the chart draws
const STATUSES = ['running', 'succeeded', 'handed_off', 'blocked', 'budget_exhausted', 'failed',
  'timed_out', 'stalled', 'cancelled', 'interrupted'];
// Activities after which the state has changed in a way the page shows.
// "dropped": the stream skipped activities, so the page may have missed a change.
const STATE_KINDS = new Set(['dispatch', 'turn', 'run_finished', 'handoff', 'retry', 'hold', 'checkpoint', 'poll', 'reconcile', 'reload_error', 'dropped']);

function panel(id, title, ...content) {
  const count = el('span', { class: 'count' });
  const node = el('section', { class: 'panel', id }, el('h2', {}, title, ' ', count), ...content);
  return { node, count };
}

export function startOverview(main, ctx) {
  // Counters.
  const cardEls = {};
  const card = (key, label, hint) => el('div', { class: 'card', dataset: { card: key }, title: hint },
    el('div', { class: 'card-label' }, label),
    cardEls[key] = el('div', { class: 'card-value' }, '—'),
    cardEls[key + 'Sub'] = el('div', { class: 'card-sub muted' }));
  const cards = el('section', { class: 'cards', 'aria-label': 'summary' },
    card('running', 'Running', 'agent sessions working now'),
    card('retrying', 'Retrying', 'issues waiting for a retry'),
    card('awaiting', 'Awaiting input', 'issues waiting for a human answer'),
    card('held', 'Held', 'issues Sortie will not touch until a human acts, those awaiting input included'),
    card('slots', 'Slots free', 'agent.max_concurrent_agents minus running'),
    card('tokens', 'Tokens', 'all runs: input + output'),
    card('cost', 'Cost', 'all runs, as the agents reported it'));

  const running = panel('running', 'Running sessions');
  const runningList = el('div', { class: 'sessions' });
  const runningEmpty = el('p', { class: 'empty' }, 'Asking the daemon…');
  running.node.append(runningEmpty, runningList);

  const pulls = new ReactionsPanel(panel('reactions', 'Pull requests'));

  const awaiting = panel('awaiting', 'Awaiting input');
  const awaitingBody = el('div', {});
  awaiting.node.append(awaitingBody);
  const retrying = panel('retrying', 'Retry queue');
  const retryingBody = el('div', {});
  retrying.node.append(retryingBody);
  const held = panel('held', 'Held for a human');
  const heldBody = el('div', {});
  held.node.append(heldBody);

  const cluster = new ClusterPanel(panel('cluster', 'Cluster'));

  const usage = panel('usage', 'Tokens and cost over time');
  const rangeSel = el('select', { 'aria-label': 'time range' },
    ['all', '1h', '24h', '7d'].map((v) => el('option', { value: v }, v === 'all' ? 'all runs' : `last ${v}`)));
  const chartBox = el('div', { class: 'chart-box' });
  const chartLegend = el('div', {});
  usage.node.querySelector('h2').after(el('div', { class: 'toolbar' }, rangeSel));
  usage.node.append(chartBox, chartLegend);

  const history = panel('history', 'Run history');
  const statusSel = el('select', { name: 'status', 'aria-label': 'status' },
    el('option', { value: '' }, 'any status'), STATUSES.map((s) => el('option', { value: s }, s.replace(/_/g, ' '))));
  const issueIn = el('input', { type: 'search', name: 'issue', placeholder: 'issue, e.g. ABC-12', 'aria-label': 'issue', autocomplete: 'off', spellcheck: 'false' });
  const newer = el('button', { type: 'button' }, '‹ Newer');
  const older = el('button', { type: 'button' }, 'Older ›');
  const pageNo = el('span', { class: 'muted' });
  const historyBody = el('div', { class: 'history-body' });
  history.node.append(
    el('form', { class: 'toolbar filters', on: { submit: (e) => { e.preventDefault(); resetHistory(); } } },
      statusSel, issueIn),
    historyBody,
    el('div', { class: 'pager' }, newer, pageNo, older));

  const totals = el('footer', { class: 'totals muted' });
  main.replaceChildren(cards, running.node, pulls.node,
    el('div', { class: 'queues' }, awaiting.node, retrying.node, held.node),
    cluster.node, usage.node, history.node, totals);

  // Live events, per issue.
  const feeds = new Map();
  const sessionCards = new Map();
  function feedFor(id) {
    let f = feeds.get(id);
    if (!f) {
      f = new Feed(FEED_ROWS);
      feeds.set(id, f);
      if (feeds.size > FEEDS_KEPT) feeds.delete(feeds.keys().next().value);
    }
    return f;
  }

  ctx.stream('/api/v1/events', (a) => {
    if (a.issue_id) {
      const row = describe(a);
      if (row && feedFor(a.issue_id).add(row)) sessionCards.get(a.issue_id)?.added(row);
      if (a.kind === 'agent_event' && a.event) {
        const c = sessionCards.get(a.issue_id);
        if (c && a.event.type !== 'token_usage') c.lastEvent(a.event.type, parseTime(a.event.time), a.event.message);
      }
    }
    if (STATE_KINDS.has(a.kind)) ctx.refreshState();
    if (a.kind === 'run_finished') {
      historyPoll.kick(400);
      chartPoll.kick(400);
    }
  });

  let runIDs = '';
  ctx.onState((s) => {
    const c = s.counts || {};
    setText(cardEls.running, fmtInt(c.running ?? (s.running || []).length));
    setText(cardEls.retrying, fmtInt(c.retrying ?? (s.retrying || []).length));
    setText(cardEls.awaiting, fmtInt(c.awaiting_input ?? (s.awaiting_input || []).length));
    setText(cardEls.held, fmtInt(c.held ?? (s.held || []).length));
    setText(cardEls.heldSub, (s.awaiting_input || []).length ? `${fmtInt((s.awaiting_input || []).length)} awaiting input` : '');
    setText(cardEls.slots, fmtInt(c.slots_free));
    cardEls.awaiting.parentElement.classList.toggle('attention', (c.awaiting_input || 0) > 0);
    const t = s.totals || {};
    setText(cardEls.tokens, fmtTokens(t.total_tokens || 0));
    setText(cardEls.tokensSub, `in ${fmtTokens(t.input_tokens || 0)} · out ${fmtTokens(t.output_tokens || 0)}`);
    setText(cardEls.cost, fmtCost(t.cost_usd || 0));
    setText(cardEls.costSub, `${fmtInt(t.tool_calls || 0)} tool calls`);
    setText(cardEls.runningSub, (c.max_agents ? `of ${c.max_agents} · ` : '') + `${fmtDuration(t.seconds_running || 0)} agent time`);

    renderRunning(s.running || []);
    renderAwaiting(s);
    renderRetrying(s.retrying || []);
    // An issue that waits for an answer is shown once, under Awaiting input.
    const asked = new Set((s.awaiting_input || []).map((q) => q.issue_id));
    renderHeld((s.held || []).filter((h) => !asked.has(h.issue_id)), asked.size);
    pulls.update(s.reactions);
    cluster.update(s.cluster);
    renderTotals(s);

    // A run that left the running set has ended: its row in history changed.
    const ids = (s.running || []).map((r) => r.run_id).sort().join(',');
    if (ids !== runIDs) {
      if (runIDs !== '') {
        historyPoll.kick(300);
        chartPoll.kick(300);
      }
      runIDs = ids;
    }
  });

  function renderRunning(list) {
    list = [...list].sort((a, b) => String(a.started_at).localeCompare(String(b.started_at)));
    setText(running.count, list.length ? `(${list.length})` : '');
    setText(runningEmpty, 'No agent is running.');
    runningEmpty.hidden = list.length > 0;
    const seen = new Set();
    for (const r of list) {
      seen.add(r.issue_id);
      let c = sessionCards.get(r.issue_id);
      if (!c) {
        c = new SessionCard(r, feedFor(r.issue_id));
        sessionCards.set(r.issue_id, c);
      } else c.update(r);
      runningList.append(c.node); // keeps (or puts) the cards in start order
    }
    for (const [id, c] of sessionCards) {
      if (!seen.has(id)) {
        c.node.remove();
        sessionCards.delete(id);
      }
    }
  }

  // Awaiting input: the holds whose agent asked a question, and every pending workflow
  // checkpoint (a running issue's too: it can be answered before the turn ends). Drawn
  // again only when something changed, so a half-typed name or a hovered button stays.
  let awaitingSig = '';
  let lastState = null;
  const answers = new Answers(() => lastState && renderAwaiting(lastState), () => ctx.refreshState());
  function renderAwaiting(s) {
    lastState = s;
    const list = s.awaiting_input || [];
    const running = new Set((s.running || []).map((r) => r.issue_id));
    const asked = new Set(list.filter((q) => q.checkpoint).map((q) => answers.key(q.checkpoint)));
    const others = (s.checkpoints || []).filter((c) => !asked.has(answers.key(c)));
    const sig = JSON.stringify([list, others, [...running]]) + answers.version;
    if (sig === awaitingSig) return;
    awaitingSig = sig;
    const n = list.length + others.filter((c) => !c.answer).length;
    setText(awaiting.count, n ? `(${n})` : '');
    if (!list.length && !others.length) return awaitingBody.replaceChildren(el('p', { class: 'empty' }, 'No issue is waiting for an answer.'));
    awaitingBody.replaceChildren(
      ...list.map((q) => (q.checkpoint ? checkpointCard(q.checkpoint, answers, { since: q.since }) : heldQuestion(q))),
      ...others.map((c) => checkpointCard(c, answers, {
        note: running.has(c.issue_id) ? 'Its agent is still working: answer now and it continues with this answer after its turn.' : '',
      })));
    tickNow(awaitingBody);
  }

  // heldQuestion is a hold whose agent stopped itself with a question: it is answered on
  // the tracker, not here.
  function heldQuestion(q) {
    return el('article', { class: 'question' },
      el('header', {}, issueLink(q.issue_identifier), badge(q.reason || 'input'),
        el('span', { class: 'muted' }, 'waiting ', el('span', { dataset: { since: q.since || '' } }, '—'))),
      el('p', { class: 'question-text' }, q.question || '(the agent asked no explicit question)'),
      q.state ? el('div', { class: 'muted small' }, `tracker state: ${q.state}`) : null,
      el('p', { class: 'muted small' }, 'Answer on the tracker: a comment or a change of the issue lifts the hold.'));
  }

  function renderRetrying(list) {
    list = [...list].sort((a, b) => String(a.due_at).localeCompare(String(b.due_at)));
    setText(retrying.count, list.length ? `(${list.length})` : '');
    if (!list.length) return retryingBody.replaceChildren(el('p', { class: 'empty' }, 'Nothing is waiting to retry.'));
    retryingBody.replaceChildren(table(['Issue', 'Attempt', 'Due', 'Error'], list.map((r) => [
      issueLink(r.issue_identifier),
      el('span', { class: 'nowrap' }, `#${r.attempt ?? '?'} `, badge(r.kind || 'retry', 'what scheduled the retry')),
      el('span', { class: 'countdown', dataset: { due: r.due_at || '' }, title: r.due_at || '' }, '—'),
      el('span', { class: 'err clamp', title: r.error || '' }, clip(r.error || '—', 400)),
    ])));
    tickNow(retryingBody);
  }

  function renderHeld(list, asked) {
    setText(held.count, list.length ? `(${list.length})` : '');
    if (!list.length) {
      return heldBody.replaceChildren(el('p', { class: 'empty' },
        asked ? 'No other issue is held; those waiting for an answer are under Awaiting input.' : 'No issue is held.'));
    }
    heldBody.replaceChildren(table(['Issue', 'Reason', 'Message', 'Since'], list.map((h) => [
      issueLink(h.issue_identifier),
      badge(h.reason || 'held', h.state ? `tracker state when held: ${h.state}` : null),
      el('span', { class: 'clamp', title: h.message || '' }, clip(h.message || '—', 400)),
      timeEl(parseTime(h.since), agoText(parseTime(h.since), serverClock.now())),
    ])));
  }

  function renderTotals(s) {
    const t = s.totals || {};
    const wf = s.workflow || {};
    totals.replaceChildren(
      el('span', {}, `Agent time ${fmtDuration(t.seconds_running || 0)}`),
      el('span', {}, `input ${fmtInt(t.input_tokens || 0)} · output ${fmtInt(t.output_tokens || 0)} · cache read ${fmtInt(t.cache_read_tokens || 0)} tokens`),
      el('span', {}, `${fmtInt(t.tool_calls || 0)} tool calls · ${fmtInt(t.api_requests || 0)} API requests`),
      wf.path ? el('span', { class: 'path', title: wf.path }, wf.path) : null,
      s.started_at ? el('span', {}, 'started ', timeEl(parseTime(s.started_at))) : null);
  }

  // History: filters and pages. cursors[i] is the `before` of page i.
  let cursors = [''];
  let pageIdx = 0;
  let nextBefore = '';
  function resetHistory() {
    cursors = [''];
    pageIdx = 0;
    historyPoll.kick(0);
  }
  statusSel.addEventListener('change', resetHistory);
  let typing = 0;
  issueIn.addEventListener('input', () => {
    clearTimeout(typing);
    typing = setTimeout(resetHistory, 350);
  });
  newer.addEventListener('click', () => {
    if (pageIdx > 0) {
      pageIdx--;
      historyPoll.kick(0);
    }
  });
  older.addEventListener('click', () => {
    if (nextBefore) {
      cursors[pageIdx + 1] = nextBefore;
      pageIdx++;
      historyPoll.kick(0);
    }
  });

  async function loadHistory() {
    const q = new URLSearchParams({ limit: String(HISTORY_PAGE) });
    if (statusSel.value) q.set('status', statusSel.value);
    if (issueIn.value.trim()) q.set('issue', issueIn.value.trim());
    if (cursors[pageIdx]) q.set('before', cursors[pageIdx]);
    try {
      const res = await getJSON('/api/v1/runs?' + q);
      const runs = res.runs || [];
      nextBefore = res.next_before ? String(res.next_before) : '';
      historyBody.replaceChildren(runs.length ? runsTable(runs) : el('p', { class: 'empty' },
        statusSel.value || issueIn.value.trim() ? 'No run matches these filters.' : 'No run has finished yet.'));
      newer.disabled = pageIdx === 0;
      older.disabled = !nextBefore;
      setText(pageNo, pageIdx || nextBefore ? `page ${pageIdx + 1}` : '');
    } catch (err) {
      if (err.name === 'AbortError') return 0;
      historyBody.replaceChildren(el('p', { class: 'empty err' }, `Run history is unavailable: ${err.message}`));
      return 10000;
    }
    // Only the first page changes by itself; older pages stay put.
    return pageIdx === 0 ? 10000 : 60000;
  }
  const historyPoll = new Poller(loadHistory, 10000);

  // Usage chart.
  let chartRuns = [];
  async function loadChart() {
    const runs = [];
    let before = '';
    try {
      while (runs.length < CHART_RUNS) {
        const q = new URLSearchParams({ limit: '100' });
        if (before) q.set('before', before);
        const res = await getJSON('/api/v1/runs?' + q);
        runs.push(...(res.runs || []));
        if (!res.next_before || !(res.runs || []).length) break;
        before = String(res.next_before);
      }
    } catch (err) {
      chartBox.replaceChildren(el('p', { class: 'empty err' }, `Usage is unavailable: ${err.message}`));
      return 60000;
    }
    chartRuns = runs;
    drawChart();
    return 60000;
  }
  const chartPoll = new Poller(loadChart, 60000);
  const RANGES = { all: 0, '1h': 3600e3, '24h': 86400e3, '7d': 7 * 86400e3 };
  let drawnWidth = 0;
  function drawChart() {
    const range = RANGES[rangeSel.value] || 0;
    const data = bucketize(chartRuns, range ? serverClock.now() - range : 0);
    drawnWidth = chartBox.clientWidth;
    if (!data) {
      chartBox.replaceChildren(el('p', { class: 'empty' }, 'The chart appears once runs have finished.'));
      chartLegend.replaceChildren();
      return;
    }
    chartBox.replaceChildren(usageChart(data, drawnWidth || 600));
    chartLegend.replaceChildren(legend(data));
  }
  rangeSel.addEventListener('change', drawChart);
  new ResizeObserver(() => {
    if (chartRuns.length && Math.abs(chartBox.clientWidth - drawnWidth) > 8) drawChart();
  }).observe(chartBox);

  historyPoll.start();
  chartPoll.start();
}

// tickNow fills the clocks and countdowns under node at once, not at the next tick.
function tickNow(node) {
  const now = serverClock.now();
  for (const n of node.querySelectorAll('[data-since]')) tickSince(n, now);
  for (const n of node.querySelectorAll('[data-due]')) tickDue(n, now);
}
