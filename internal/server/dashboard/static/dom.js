// DOM building and formatting. Every value from the API reaches the page through
// text nodes or attributes set here, never through HTML parsing.

const SVG_NS = 'http://www.w3.org/2000/svg';

// el builds an HTML element. attrs: class, title, href, dataset ({k: v}), on ({event: fn}),
// any other attribute by name; null, undefined and false attributes are left out.
// Children: nodes, or strings and numbers (text), or arrays of those; null is skipped.
export function el(tag, attrs, ...children) {
  return build(document.createElement(tag), attrs, children);
}

// svg builds an SVG element, like el.
export function svg(tag, attrs, ...children) {
  return build(document.createElementNS(SVG_NS, tag), attrs, children);
}

function build(node, attrs, children) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'dataset') Object.assign(node.dataset, v);
    else if (k === 'on') for (const [ev, fn] of Object.entries(v)) node.addEventListener(ev, fn);
    else if (k === 'class' && !(node instanceof SVGElement)) node.className = v;
    else node.setAttribute(k, v === true ? '' : String(v));
  }
  append(node, children);
  return node;
}

function append(node, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(node, c);
    else if (c instanceof Node) node.appendChild(c);
    else node.appendChild(document.createTextNode(String(c)));
  }
}

// setText sets node's text when it changed (so selection and screen readers are not
// disturbed by identical updates).
export function setText(node, value) {
  const s = value === null || value === undefined ? '' : String(value);
  if (node.textContent !== s) node.textContent = s;
}

// issueLink links to an issue's page.
export function issueLink(identifier) {
  return el('a', { class: 'issue', href: '/issues/' + encodeURIComponent(identifier || '') }, identifier || '?');
}

// badge is a status word in a coloured pill; the status picks the colour.
export function badge(status, title) {
  return el('span', { class: 'badge s-' + String(status || 'unknown').replace(/[^a-z_]/gi, ''), title }, String(status || '—').replace(/_/g, ' '));
}

const intFmt = new Intl.NumberFormat('en-US');

export function fmtInt(n) {
  return Number.isFinite(n) ? intFmt.format(Math.round(n)) : '—';
}

// fmtTokens is a compact count: 950, 12.3k, 4.1M.
export function fmtTokens(n) {
  if (!Number.isFinite(n)) return '—';
  const a = Math.abs(n);
  if (a < 1000) return String(Math.round(n));
  if (a < 1e6) return (n / 1e3).toFixed(a < 1e4 ? 1 : 0) + 'k';
  if (a < 1e9) return (n / 1e6).toFixed(a < 1e7 ? 2 : 1) + 'M';
  return (n / 1e9).toFixed(2) + 'B';
}

export function fmtCost(usd) {
  if (!Number.isFinite(usd)) return '—';
  if (usd === 0) return '$0';
  if (Math.abs(usd) < 0.01) return '$' + usd.toFixed(4);
  if (Math.abs(usd) < 100) return '$' + usd.toFixed(2);
  return '$' + intFmt.format(Math.round(usd));
}

// fmtDuration renders seconds as 42s, 3m 07s, 2h 05m, 3d 4h.
export function fmtDuration(sec) {
  if (!Number.isFinite(sec)) return '—';
  sec = Math.max(0, Math.floor(sec));
  const d = Math.floor(sec / 86400), h = Math.floor(sec % 86400 / 3600);
  const m = Math.floor(sec % 3600 / 60), s = sec % 60;
  if (d) return `${d}d ${h}h`;
  if (h) return `${h}h ${String(m).padStart(2, '0')}m`;
  if (m) return `${m}m ${String(s).padStart(2, '0')}s`;
  return `${s}s`;
}

// fmtMillis renders a short duration given in milliseconds: 40 ms, 1.2 s, then as fmtDuration.
export function fmtMillis(ms) {
  if (!Number.isFinite(ms)) return '';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(1)} s`;
  return fmtDuration(ms / 1000);
}

export function parseTime(s) {
  if (!s) return null;
  const t = Date.parse(s);
  // Go's zero time (0001-01-01) means "never".
  return Number.isFinite(t) && t > 0 ? new Date(t) : null;
}

const timeFmt = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit', hour12: false });
const dateTimeFmt = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', hour12: false });

// fmtClock is a local time of day, 14:03:27.
export function fmtClock(d) {
  return d ? timeFmt.format(d) : '—';
}

// fmtWhen is a local date and time, Nov 3, 14:03; today's dates show only the time.
export function fmtWhen(d) {
  if (!d) return '—';
  const now = new Date();
  if (d.toDateString() === now.toDateString()) return fmtClock(d);
  return dateTimeFmt.format(d);
}

// time element with the full ISO time as its tooltip and machine-readable value.
export function timeEl(d, text) {
  if (!d) return el('span', { class: 'muted' }, '—');
  return el('time', { datetime: d.toISOString(), title: d.toLocaleString() }, text ?? fmtWhen(d));
}

// clip shortens s to n characters for a table cell; the title keeps the whole text.
export function clip(s, n) {
  s = String(s ?? '');
  return s.length > n ? s.slice(0, n - 1) + '…' : s;
}

// table builds a table from column labels and rows of cells (anything el accepts).
// Each cell carries its column's label, which the narrow layout shows beside it.
export function table(columns, rows, cls = '') {
  return el('table', { class: 'grid-table ' + cls },
    el('thead', {}, el('tr', {}, columns.map((c) => el('th', { scope: 'col' }, c)))),
    el('tbody', {}, rows.map((cells) => el('tr', {},
      cells.map((c, i) => el('td', { dataset: { label: columns[i] } }, c))))));
}

// ago is "5s ago", "3m 10s ago" from a Date, by the daemon's clock.
export function agoText(d, now) {
  if (!d) return '—';
  const s = Math.max(0, (now - d.getTime()) / 1000);
  return s < 1 ? 'just now' : `${fmtDuration(s)} ago`;
}

// tickSince shows the time since the node's data-since (an RFC 3339 time) at now (ms).
export function tickSince(node, now) {
  const since = parseTime(node.dataset.since);
  setText(node, since ? fmtDuration((now - since.getTime()) / 1000) : '—');
}

// tickDue shows how long until the node's data-due: "in 3m 10s", "now", "overdue 4s".
export function tickDue(node, now) {
  const due = parseTime(node.dataset.due);
  if (!due) return setText(node, '—');
  const s = (due.getTime() - now) / 1000;
  setText(node, s >= 1 ? `in ${fmtDuration(s)}` : s > -5 ? 'now' : `overdue ${fmtDuration(-s)}`);
  node.classList.toggle('overdue', s <= -5);
}
