// An issue's page (/issues/{identifier}): where the issue stands (running, retrying,
// held, awaiting input), its live and recent events, its workspace and its runs.

import { el, setText, badge, table, parseTime, timeEl, agoText, clip, tickSince, tickDue } from './dom.js';
import { getJSON, serverClock, Poller, APIError } from './api.js';
import { Feed, FeedView, describe, describeRecent } from './feed.js';
import { SessionCard } from './session.js';
import { runsTable } from './runs.js';
import { Answers, checkpointCard, workflowPanel } from './checkpoint.js';

const FEED_ROWS = 200;
const STATE_KINDS = new Set(['dispatch', 'turn', 'run_finished', 'handoff', 'retry', 'hold', 'checkpoint', 'reconcile', 'dropped']);

export function startIssue(main, ctx, identifier) {
  const head = el('div', { class: 'issue-head' },
    el('a', { class: 'back', href: '/' }, '← all issues'),
    el('h1', {}, el('span', { class: 'issue' }, identifier), ' '));
  const h1 = head.querySelector('h1');
  const statusBadge = el('span', {});
  const titleEl = el('span', { class: 'issue-title' });
  h1.append(statusBadge, titleEl);

  const now = el('section', { class: 'panel', id: 'now' }, el('h2', {}, 'Now'));
  // The questions are drawn apart from the rest, and only when they change, so a
  // half-typed name or a hovered button survives the refreshes.
  const questions = el('div', { class: 'questions' });
  const nowBody = el('div', {});
  now.append(questions, nowBody);
  const workflowBody = el('div', {});
  const workflow = el('section', { class: 'panel', id: 'workflow', hidden: true }, el('h2', {}, 'Workflow'), workflowBody);
  const feed = new Feed(FEED_ROWS);
  const feedView = new FeedView(feed, 'No events yet. New ones appear here as they happen.');
  const eventsFrom = el('span', { class: 'count' });
  const events = el('section', { class: 'panel', id: 'events' }, el('h2', {}, 'Events ', eventsFrom), feedView.node);
  const runsBody = el('div', {});
  const runs = el('section', { class: 'panel', id: 'runs' }, el('h2', {}, 'Runs'), runsBody);
  main.replaceChildren(head, now, workflow, events, runs);

  let issueID = '';
  let detail = null;
  let awaiting = null; // the issue's hold with a question (blocked, needs_human_review)
  let checkpoints = []; // the issue's pending workflow checkpoints
  let running = false;
  let questionsSig = '';
  let workflowSig = '';
  const answers = new Answers(() => renderQuestions(true), () => {
    ctx.refreshState();
    detailPoll.kick();
  });
  let card = null;
  let loadedRecent = false;

  const mine = (a) => a.issue_identifier === identifier || (issueID && a.issue_id === issueID);
  ctx.stream('/api/v1/events?issue=' + encodeURIComponent(identifier), (a) => {
    if (a.kind !== 'dropped' && !mine(a)) return;
    const row = describe(a);
    if (row && feed.add(row)) feedView.prepend(row);
    if (STATE_KINDS.has(a.kind)) {
      detailPoll.kick();
      ctx.refreshState();
    }
  });

  ctx.onState((s) => {
    awaiting = (s.awaiting_input || []).find((q) => q.issue_identifier === identifier && !q.checkpoint) || null;
    checkpoints = (s.checkpoints || []).filter((c) => c.issue_identifier === identifier);
    running = (s.running || []).some((r) => r.issue_identifier === identifier);
    renderQuestions(false);
    if (detail) renderNow();
  });

  function renderQuestions(force) {
    const sig = JSON.stringify([awaiting, checkpoints, running]) + answers.version;
    if (!force && sig === questionsSig) return;
    questionsSig = sig;
    const parts = checkpoints.map((c) => checkpointCard(c, answers, {
      showIssue: false,
      note: running ? 'Its agent is still working: answer now and it continues with this answer after its turn.' : '',
    }));
    if (awaiting) {
      parts.push(el('article', { class: 'question' },
        el('header', {}, el('strong', {}, 'Waiting for an answer'), badge(awaiting.reason || 'input'),
          el('span', { class: 'muted' }, 'since ', timeEl(parseTime(awaiting.since)))),
        el('p', { class: 'question-text' }, awaiting.question || '(the agent asked no explicit question)'),
        el('p', { class: 'muted small' }, 'Answer on the tracker: a comment or a change of the issue lifts the hold.')));
    }
    questions.replaceChildren(...parts);
    tickAll(questions);
  }

  async function loadDetail() {
    try {
      detail = await getJSON('/api/v1/' + encodeURIComponent(identifier));
    } catch (err) {
      if (err instanceof APIError && err.status === 404) {
        detail = null;
        setText(titleEl, '');
        statusBadge.replaceChildren(badge('unknown'));
        nowBody.replaceChildren(el('p', { class: 'empty' },
          `Sortie has no record of ${identifier}: it is not running, retrying, held or in the run history. ` +
          'This page fills in if it is dispatched.'));
        runsBody.replaceChildren();
        return 5000;
      }
      return ctx.handleError(err);
    }
    issueID = detail.issue_id || issueID;
    document.body.dataset.issueStatus = detail.status || '';
    statusBadge.replaceChildren(badge(detail.status || 'unknown'));
    const title = detail.running?.title || '';
    setText(titleEl, title ? ` ${title}` : '');
    if (!loadedRecent) {
      loadedRecent = true;
      if (detail.recent_events_run_id) setText(eventsFrom, `(stored ones of run ${detail.recent_events_run_id}, then live)`);
      // recent_events is oldest first; the feed shows the newest on top.
      for (const e of detail.recent_events || []) {
        const row = describeRecent(e);
        feed.add(row);
        feedView.prepend(row);
      }
    }
    renderNow();
    const sig = JSON.stringify(detail.workflow || null);
    if (sig !== workflowSig) {
      workflowSig = sig;
      const parts = workflowPanel(detail.workflow);
      workflow.hidden = !parts;
      workflowBody.replaceChildren(...(parts || []));
    }
    const list = detail.runs || [];
    runsBody.replaceChildren(list.length ? runsTable(list, { showIssue: false, showReview: true }) : el('p', { class: 'empty' }, 'No runs yet.'));
    tickAll(runsBody);
    return 0;
  }
  const detailPoll = new Poller(loadDetail, 2000);

  function renderNow() {
    const d = detail;
    const parts = [];
    if (d.running) {
      if (!card) card = new SessionCard(d.running, feed, { head: false, showFeed: false });
      else card.update(d.running);
      parts.push(card.node);
    } else card = null;
    if (d.retry) {
      const r = d.retry;
      parts.push(el('div', { class: 'sub' }, el('h3', {}, 'Retry'), table(['Attempt', 'Kind', 'Due', 'Error'], [[
        String(r.attempt ?? ''), badge(r.kind || 'retry'),
        el('span', { class: 'countdown', dataset: { due: r.due_at || '' } }, '—'),
        el('span', { class: 'err' }, r.error || '—')]])));
    }
    if (d.hold) {
      const h = d.hold;
      const since = parseTime(h.since);
      parts.push(el('div', { class: 'sub' }, el('h3', {}, 'Held for a human'), table(['Reason', 'Message', 'Tracker state', 'Since'], [[
        badge(h.reason || 'held'), el('span', { class: 'err' }, clip(h.message || '—', 400)), h.state || '—',
        timeEl(since, agoText(since, serverClock.now()))]])));
    }
    if (!d.running && !awaiting && !checkpoints.length && !d.retry && !d.hold) {
      const last = (d.runs || [])[0];
      parts.push(el('p', { class: 'empty' }, d.status === 'idle' || !d.status
        ? 'Nothing is running for this issue' : `Status: ${String(d.status).replace(/_/g, ' ')}`,
      last ? ['; its last run ', badge(last.status), ' ended ', timeEl(parseTime(last.ended_at)), '.'] : '.'));
      if (d.last_error) parts.push(el('div', { class: 'sub' }, el('h3', {}, 'Last error'), el('p', { class: 'err pre' }, d.last_error)));
    }
    const ws = d.workspace?.path;
    parts.push(el('dl', { class: 'kvs workspace' }, el('div', { class: 'kv wide' }, el('dt', {}, 'Workspace'),
      el('dd', {}, ws ? el('code', { title: ws }, ws) : el('span', { class: 'muted' }, 'none')))));
    nowBody.replaceChildren(...parts);
    tickAll(nowBody);
  }

  detailPoll.start();
}

function tickAll(node) {
  const now = serverClock.now();
  for (const n of node.querySelectorAll('[data-since]')) tickSince(n, now);
  for (const n of node.querySelectorAll('[data-due]')) tickDue(n, now);
}
