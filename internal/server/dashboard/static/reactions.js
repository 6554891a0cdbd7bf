// The overview's Pull requests panel: the handed-off issues whose pull requests Sortie
// watches (docs/reactions.md), their CI and reviews, the reactions offered to their
// agents and how many ran, and those escalated to a human. Hidden while none is
// watched. Check names, URLs and errors come from GitHub and from agents: like
// everything else, they reach the page as text, and a PR link only when it is http(s).

import { el, setText, issueLink, badge, table, clip, tickDue } from './dom.js';
import { serverClock } from './api.js';

// Reaction kinds as the page names them.
const KINDS = { ci: 'CI', review: 'review' };
const kindName = (k) => KINDS[k] || String(k || '?');

// CI states: the pill's words and its colour class (app.css .pill.ok, .pill.error).
const CI = {
  passing: ['passing', 'ok', 'every check of the head commit passed'],
  pending: ['pending', '', 'checks of the head commit are still running'],
  failing: ['failing', 'error', 'a check of the head commit failed'],
  unknown: ['unknown', '', 'not checked yet'],
};

const REVIEW = {
  none: 'no changes requested',
  changes_requested: 'changes requested',
  waiting: 'changes requested, settling',
  unknown: 'not checked yet',
};

export class ReactionsPanel {
  // p: the panel ({node, count}) the watched issues are drawn in.
  constructor(p) {
    this.p = p;
    this.node = p.node;
    this.node.dataset.role = 'reactions';
    this.body = el('div', {});
    p.node.append(this.body);
    this.node.hidden = true;
    this.sig = '';
  }

  // update draws list, the state's reactions. The table is drawn again only when
  // something in it changed, so a hovered link stays.
  update(list) {
    list = Array.isArray(list) ? list : [];
    this.node.hidden = list.length === 0;
    setText(this.p.count, list.length ? `(${list.length})` : '');
    const sig = JSON.stringify(list);
    if (sig === this.sig) return this.tick();
    this.sig = sig;
    if (!list.length) return this.body.replaceChildren();
    list = [...list].sort((a, b) => String(a.handed_off_at).localeCompare(String(b.handed_off_at)));
    const t = table(['Issue', 'Pull request', 'CI', 'Review', 'Reactions', 'Status'], list.map((r) => [
      issueLink(r.issue_identifier),
      prLink(r),
      ciCell(r),
      reviewCell(r),
      reactionsCell(r),
      statusCell(r),
    ]), 'reactions');
    list.forEach((r, i) => {
      const tr = t.tBodies[0].rows[i];
      tr.dataset.role = 'reaction';
      tr.dataset.issue = r.issue_identifier || '';
      tr.classList.toggle('escalated', !!r.escalated);
    });
    this.body.replaceChildren(t);
    this.tick();
  }

  tick() {
    const now = serverClock.now();
    for (const n of this.body.querySelectorAll('[data-due]')) tickDue(n, now);
  }
}

// safeURL is u when it is an http(s) URL, otherwise '' (no link is made).
export function safeURL(u) {
  try {
    const url = new URL(String(u || ''));
    return url.protocol === 'https:' || url.protocol === 'http:' ? url.href : '';
  } catch {
    return '';
  }
}

function prLink(r) {
  const branch = r.branch ? el('div', { class: 'muted small branch', title: r.branch }, clip(r.branch, 60)) : null;
  if (!r.pr_number) return el('span', {}, el('span', { class: 'muted', dataset: { role: 'pr' } }, 'no pull request yet'), branch);
  const href = safeURL(r.pr_url);
  const text = `#${r.pr_number}`;
  const link = href
    ? el('a', { href, target: '_blank', rel: 'noopener noreferrer', dataset: { role: 'pr' }, title: r.head_sha ? `head ${r.head_sha}` : null }, text)
    : el('span', { dataset: { role: 'pr' } }, text);
  return el('span', {}, link, branch);
}

function ciCell(r) {
  const [word, tone, title] = CI[r.ci] || CI.unknown;
  const pill = el('span', { class: `pill ci ci-${r.ci in CI ? r.ci : 'unknown'} ${tone}`.trim(), title, dataset: { role: 'ci', ci: r.ci || 'unknown' } }, word);
  const checks = r.failing_checks || [];
  return el('span', { class: 'ci-cell' }, pill, checks.length
    ? el('ul', { class: 'checks', dataset: { role: 'failing-checks' } },
      checks.map((c) => el('li', { title: String(c) }, clip(c, 80))))
    : null);
}

function reviewCell(r) {
  const state = r.review || 'unknown';
  const n = r.review_comments || 0;
  return el('span', { dataset: { role: 'review', review: state } },
    REVIEW[state] || String(state).replace(/_/g, ' '),
    n ? el('span', { class: 'muted' }, ` · ${n} ${n === 1 ? 'comment' : 'comments'}`) : null);
}

// reactionsCell: the reactions offered and not yet run, and the runs of each kind so far.
function reactionsCell(r) {
  const pending = r.pending || [];
  const attempts = Object.entries(r.attempts || {}).filter(([, n]) => n > 0);
  if (!pending.length && !attempts.length) return el('span', { class: 'muted' }, '—');
  return el('span', { class: 'reactions-cell' },
    pending.length ? el('span', { class: 'nowrap', dataset: { role: 'pending' } }, pending.map((k, i) => [i ? ' ' : '',
      el('span', { class: 'badge s-offered', title: 'offered to the agent, not yet dispatched' }, `${kindName(k)} fix offered`)])) : null,
    pending.length && attempts.length ? ' ' : null,
    attempts.length ? el('span', { class: 'muted nowrap', dataset: { role: 'attempts' }, title: 'reaction runs so far, by kind' },
      attempts.map(([k, n]) => `${kindName(k)} fix ×${n}`).join(' · ')) : null);
}

function statusCell(r) {
  const parts = [];
  if (r.escalated) parts.push(badge('escalated', 'a reaction ran out of retries: Sortie labelled or commented the issue for a human and sends its agent no more'));
  if (r.running) parts.push(badge('running', 'a reaction run is under way'));
  if (!r.escalated && !r.running && r.next_check_at) {
    parts.push(el('span', { class: 'muted small nowrap' }, 'next check ',
      el('span', { class: 'countdown', dataset: { due: r.next_check_at } }, '—')));
  }
  if (r.last_error) {
    parts.push(el('div', { class: 'err small clamp', title: r.last_error, dataset: { role: 'last-error' } }, clip(r.last_error, 200)));
  }
  return parts.length ? el('span', { class: 'reaction-status' }, parts) : el('span', { class: 'muted' }, '—');
}
