// Tokens and cost over time, drawn as SVG from finished runs: stacked bars of input
// and output tokens per time bucket, and the running total of cost as a line.

import { svg, el, fmtTokens, fmtCost, fmtInt, parseTime } from './dom.js';

const SEC = 1000, MIN = 60 * SEC, HOUR = 60 * MIN, DAY = 24 * HOUR;
const BUCKETS = [SEC, 2 * SEC, 5 * SEC, 10 * SEC, 15 * SEC, 30 * SEC, MIN, 2 * MIN, 5 * MIN,
  10 * MIN, 15 * MIN, 30 * MIN, HOUR, 2 * HOUR, 3 * HOUR, 6 * HOUR, 12 * HOUR, DAY, 2 * DAY, 7 * DAY, 30 * DAY];
const MAX_BARS = 24;
const MIN_BARS = 12; // a short history still reads as a timeline, not one wide block

// bucketize groups runs (API run objects) by when they ended. since (ms) drops older
// runs; 0 keeps all. Returns null when no run has ended.
export function bucketize(runs, since = 0) {
  const pts = [];
  for (const r of runs) {
    const end = parseTime(r.ended_at);
    if (!end || end.getTime() < since) continue;
    const t = r.tokens || {};
    pts.push({ t: end.getTime(), input: t.input_tokens || 0, output: t.output_tokens || 0,
      total: t.total_tokens || 0, cache: t.cache_read_tokens || 0, cost: r.cost_usd || 0 });
  }
  if (!pts.length) return null;
  pts.sort((a, b) => a.t - b.t);
  const t0 = pts[0].t, t1 = pts[pts.length - 1].t;
  const size = BUCKETS.find((b) => (t1 - t0) / b < MAX_BARS) || BUCKETS[BUCKETS.length - 1];
  const last = Math.floor(t1 / size) * size;
  const n = Math.max(MIN_BARS, Math.floor((last - Math.floor(t0 / size) * size) / size) + 1);
  const start = last - (n - 1) * size;
  const buckets = Array.from({ length: n }, (_, i) => ({
    start: start + i * size, input: 0, output: 0, total: 0, cache: 0, cost: 0, runs: 0, cumCost: 0,
  }));
  for (const p of pts) {
    const b = buckets[Math.floor((p.t - start) / size)];
    b.input += p.input; b.output += p.output; b.total += p.total; b.cache += p.cache;
    b.cost += p.cost; b.runs++;
  }
  let cum = 0;
  for (const b of buckets) b.cumCost = (cum += b.cost);
  return { size, buckets, totalCost: cum };
}

// niceScale picks an axis maximum for values up to v: `ticks` equal steps of 1, 2,
// 2.5 or 5 times a power of ten.
function niceScale(v, ticks) {
  if (!(v > 0)) return { max: ticks, step: 1 };
  const raw = v / ticks;
  const p = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * p).find((s) => s >= raw);
  return { max: step * ticks, step };
}

function label(ms, size) {
  const d = new Date(ms);
  const two = (x) => String(x).padStart(2, '0');
  if (size >= DAY) return d.toLocaleDateString(undefined, { month: 'short', day: 'numeric' });
  if (size < MIN) return `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
  return `${two(d.getHours())}:${two(d.getMinutes())}`;
}

function spanText(b, size) {
  const a = new Date(b.start), z = new Date(b.start + size);
  const opts = size >= DAY ? { month: 'short', day: 'numeric' }
    : { hour: '2-digit', minute: '2-digit', second: size < MIN ? '2-digit' : undefined, hour12: false };
  return `${a.toLocaleString(undefined, opts)} – ${z.toLocaleString(undefined, opts)}`;
}

// usageChart draws data (from bucketize) width pixels wide.
export function usageChart(data, width) {
  const H = 210, top = 14, bottom = 26, left = 46;
  const hasCost = data.totalCost > 0;
  const right = hasCost ? 52 : 12;
  const W = Math.max(240, Math.round(width));
  const iw = W - left - right, ih = H - top - bottom;
  const bs = data.buckets;
  const TICKS = 4;
  const maxTok = niceScale(Math.max(...bs.map((b) => b.input + b.output), 1), TICKS).max;
  const maxCost = niceScale(hasCost ? data.totalCost : 1, TICKS).max;
  const x = (i) => left + (i / bs.length) * iw;
  const yTok = (v) => top + ih - (v / maxTok) * ih;
  const yCost = (v) => top + ih - (v / maxCost) * ih;

  const root = svg('svg', { class: 'chart', viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: 'img',
    'aria-label': 'Tokens per interval and cumulative cost' });
  const grid = svg('g', { class: 'grid' });
  for (let i = 0; i <= TICKS; i++) {
    const v = (maxTok * i) / TICKS, y = yTok(v);
    grid.append(svg('line', { x1: left, x2: W - right, y1: y, y2: y }));
    grid.append(svg('text', { x: left - 6, y: y + 4, 'text-anchor': 'end', class: 'axis' }, fmtTokens(v)));
    if (hasCost) {
      grid.append(svg('text', { x: W - right + 6, y: y + 4, class: 'axis cost' }, fmtCost((maxCost * i) / TICKS)));
    }
  }
  root.append(grid);

  const bw = iw / bs.length;
  const gap = Math.min(4, bw * 0.2);
  const bars = svg('g', { class: 'bars' });
  bs.forEach((b, i) => {
    const g = svg('g', {},
      svg('title', {}, `${spanText(b, data.size)}\n${fmtInt(b.runs)} run(s) ended\n` +
        `input ${fmtInt(b.input)} · output ${fmtInt(b.output)} · cache read ${fmtInt(b.cache)}\n` +
        `total ${fmtInt(b.total)} tokens · ${fmtCost(b.cost)}`));
    const yIn = yTok(b.input), yOut = yTok(b.input + b.output);
    if (b.input > 0) g.append(svg('rect', { class: 'in', x: x(i) + gap / 2, y: yIn, width: Math.max(1, bw - gap), height: top + ih - yIn }));
    if (b.output > 0) g.append(svg('rect', { class: 'out', x: x(i) + gap / 2, y: yOut, width: Math.max(1, bw - gap), height: yIn - yOut }));
    // A full-height transparent target, so thin bars still show their tooltip.
    g.append(svg('rect', { class: 'hit', x: x(i), y: top, width: bw, height: ih }));
    bars.append(g);
  });
  root.append(bars);

  if (hasCost) {
    let d = `M ${x(0)} ${yCost(0)}`;
    bs.forEach((b, i) => { d += ` L ${x(i + 1)} ${yCost(b.cumCost)}`; });
    root.append(svg('path', { class: 'cost-line', d }));
  }

  const axis = svg('g', { class: 'xaxis' });
  axis.append(svg('line', { x1: left, x2: W - right, y1: top + ih, y2: top + ih }));
  const every = Math.max(1, Math.ceil(bs.length / Math.max(2, Math.floor(iw / 70))));
  for (let i = 0; i < bs.length; i += every) {
    axis.append(svg('text', { x: x(i) + bw / 2, y: H - 8, 'text-anchor': 'middle', class: 'axis' }, label(bs[i].start, data.size)));
  }
  root.append(axis);
  return root;
}

// legend explains the chart's marks and totals.
export function legend(data) {
  let tin = 0, tout = 0, runs = 0;
  for (const b of data.buckets) { tin += b.input; tout += b.output; runs += b.runs; }
  return el('div', { class: 'legend' },
    el('span', {}, el('i', { class: 'sw in' }), `input ${fmtTokens(tin)}`),
    el('span', {}, el('i', { class: 'sw out' }), `output ${fmtTokens(tout)}`),
    data.totalCost > 0
      ? el('span', {}, el('i', { class: 'sw cost' }), `cost ${fmtCost(data.totalCost)} (cumulative)`)
      : el('span', { class: 'muted' }, 'no cost reported'),
    el('span', { class: 'muted' }, `${fmtInt(runs)} runs`));
}
