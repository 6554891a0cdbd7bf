// Run history rows, on the overview and on an issue's page.

import { el, issueLink, badge, table, fmtTokens, fmtInt, fmtCost, fmtDuration, parseTime, timeEl, clip } from './dom.js';

// runsTable is the run history table (also on an issue's page). showReview adds a
// Self-review column when a run has a self_review: its final verdict and iterations.
export function runsTable(runs, { showIssue = true, showReview = false } = {}) {
  const cols = ['Started', 'Status', 'Attempt', 'Duration', 'Turns', 'Tokens', 'Cost', 'Model', 'Error'];
  const review = showReview && runs.some((r) => r.self_review && typeof r.self_review === 'object');
  if (review) cols.splice(cols.length - 1, 0, 'Self-review');
  if (showIssue) cols.unshift('Issue');
  return table(cols, runs.map((r) => {
    const started = parseTime(r.started_at);
    const t = r.tokens || {};
    const dur = r.status === 'running' && started
      ? el('span', { dataset: { since: r.started_at } }, '—')
      : fmtDuration(r.duration_seconds);
    const cells = [
      timeEl(started),
      badge(r.status),
      String(r.attempt ?? ''),
      dur,
      String(r.turns ?? ''),
      // A running run's figures are its progress so far (the daemon records it every
      // second); they are shown muted until the run ends.
      el('span', { class: r.status === 'running' ? 'muted' : null,
        title: `${r.status === 'running' ? 'so far: ' : ''}input ${fmtInt(t.input_tokens || 0)} · output ${fmtInt(t.output_tokens || 0)} · cache read ${fmtInt(t.cache_read_tokens || 0)}` },
        fmtTokens(t.total_tokens || 0)),
      r.status === 'running' ? el('span', { class: 'muted', title: 'so far' }, fmtCost(r.cost_usd || 0)) : fmtCost(r.cost_usd || 0),
      r.model || '—',
      r.error ? el('span', { class: 'err', title: r.error }, clip(r.error, 140)) : null,
    ];
    if (review) cells.splice(cells.length - 1, 0, reviewCell(r.self_review));
    if (showIssue) cells.unshift(issueLink(r.issue_identifier));
    return cells;
  }), 'runs');
}

// reviewCell is a run's self-review: its final verdict (pass, iterate, none) and how
// many iterations it took; the tooltip says how it ended.
function reviewCell(m) {
  if (!m || typeof m !== 'object') return null;
  const n = Number.isFinite(m.total_iterations) ? m.total_iterations : (Array.isArray(m.iterations) ? m.iterations.length : 0);
  const verdict = typeof m.final_verdict === 'string' && m.final_verdict ? m.final_verdict : 'none';
  const how = [m.enabled === false ? 'self-review off' : '', m.cap_reached ? 'stopped at self_review.max_iterations' : '',
    m.stopped ? 'the agent signalled a stop' : '', typeof m.error === 'string' && m.error ? `ended early: ${m.error}` : '']
    .filter(Boolean).join(' · ');
  return el('span', { class: 'nowrap', dataset: { role: 'review-verdict', verdict } },
    badge(verdict, how || `final verdict ${verdict}`),
    el('span', { class: 'muted' }, ` ${n} ${n === 1 ? 'iteration' : 'iterations'}`),
    m.cap_reached ? el('span', { class: 'muted small' }, ' (cap)') : null);
}
