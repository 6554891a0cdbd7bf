// Run history rows, on the overview and on an issue's page.

import { el, issueLink, badge, table, fmtTokens, fmtInt, fmtCost, fmtDuration, parseTime, timeEl, clip } from './dom.js';

// runsTable is the run history table (also on an issue's page).
export function runsTable(runs, { showIssue = true } = {}) {
  const cols = ['Started', 'Status', 'Attempt', 'Duration', 'Turns', 'Tokens', 'Cost', 'Model', 'Error'];
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
    if (showIssue) cells.unshift(issueLink(r.issue_identifier));
    return cells;
  }), 'runs');
}
