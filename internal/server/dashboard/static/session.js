// A running session's card: what the agent is doing, what it has cost, and its live
// events. Cards are updated in place, so an open feed keeps its place while the
// numbers change around it.

import { el, setText, issueLink, badge, fmtTokens, fmtInt, fmtCost, parseTime, fmtClock, tickSince } from './dom.js';
import { serverClock } from './api.js';
import { FeedView } from './feed.js';

// Reaction runs (docs/reactions.md): the card's badge and its tooltip.
const REACTIONS = {
  ci: ['CI fix', 'resumed to fix the failed CI of its pull request'],
  review: ['review fix', 'resumed to answer the change requests on its pull request'],
};

export class SessionCard {
  // r: a running entry of /api/v1/state (or the running object of an issue's detail);
  // feed: the Feed this session's live events go to. On the issue's own page (head
  // false, showFeed false) the page shows the identifier and title, and one feed for
  // the issue whether it runs or not.
  constructor(r, feed, { head = true, showFeed = true } = {}) {
    this.f = {};
    const f = this.f;
    const field = (key, label, cls = '') => el('div', { class: 'kv ' + cls },
      el('dt', {}, label), f[key] = el('dd', { dataset: { field: key } }));
    this.feedView = new FeedView(feed, 'Waiting for the agent’s next event…');
    f.feedCount = el('span', { class: 'count' });
    f.stopping = el('span', { class: 'badge s-stopping', hidden: true, title: 'the daemon is stopping this session' }, 'stopping');
    f.reaction = el('span', { class: 'badge s-reaction', hidden: true, dataset: { role: 'reaction-badge' } });
    f.selfReview = el('span', { class: 'badge s-self_review', hidden: true, dataset: { role: 'self-review' },
      title: 'the agent is reviewing its own change before the hand-off' });
    f.turnBar = el('span', { class: 'bar-fill' });
    this.node = el('article', { class: 'session', dataset: { issue: r.issue_identifier || '' } },
      el('header', { class: 'session-head' },
        head ? issueLink(r.issue_identifier) : el('strong', {}, 'Running'),
        f.title = el('span', { class: 'session-title', hidden: !head }),
        el('span', { class: 'session-badges' }, f.state = badge(''), f.reaction, f.selfReview, f.stopping)),
      el('div', { class: 'turnbar', title: 'turns used of agent.max_turns' }, f.turnBar),
      el('dl', { class: 'kvs' },
        el('div', { class: 'kv' }, el('dt', {}, 'Turn'),
          el('dd', {}, f.turn = el('span', {}), f.attempt = el('span', { class: 'muted' }))),
        field('elapsed', 'Elapsed'),
        field('tokens', 'Tokens'),
        field('cost', 'Cost'),
        field('tools', 'Tool calls'),
        field('model', 'Model'),
        field('where', 'Process'),
        field('last', 'Last event', 'wide'),
        field('message', 'Last message', 'wide')),
      showFeed ? el('details', { class: 'feed-details', open: true },
        el('summary', {}, 'Live events ', f.feedCount),
        this.feedView.node) : null);
    this.update(r);
  }

  update(r) {
    const f = this.f;
    setText(f.title, r.title || '');
    f.title.title = r.title || '';
    const st = r.state || 'running';
    if (f.state.textContent !== st) f.state.replaceWith(f.state = badge(st, 'tracker state'));
    // stopping is the reason the daemon is stopping the session ("" while it works).
    f.stopping.hidden = !r.stopping;
    f.stopping.title = typeof r.stopping === 'string' && r.stopping ? `the daemon is stopping this session: ${r.stopping.replace(/_/g, ' ')}` : 'the daemon is stopping this session';
    // reaction: the run answers its pull request's failed CI or review ("" otherwise);
    // self_review_iteration: the self-review iteration under way (0 when none).
    const rx = REACTIONS[r.reaction] || (r.reaction ? [`${r.reaction} fix`, ''] : null);
    f.reaction.hidden = !rx;
    setText(f.reaction, rx ? rx[0] : '');
    f.reaction.title = rx ? rx[1] || 'a reaction run on the issue\'s pull request' : '';
    f.reaction.dataset.reaction = r.reaction || '';
    const iter = Number.isFinite(r.self_review_iteration) ? r.self_review_iteration : 0;
    f.selfReview.hidden = iter <= 0;
    setText(f.selfReview, iter > 0 ? `self-review ${iter}` : '');
    const max = r.max_turns || 0;
    setText(f.turn, max ? `${r.turn || 0} / ${max}` : String(r.turn || 0));
    setText(f.attempt, r.attempt ? ` · attempt ${r.attempt}` : '');
    f.turnBar.style.width = max ? `${Math.min(100, ((r.turn || 0) / max) * 100)}%` : '0';
    f.elapsed.dataset.since = r.started_at || '';
    tickSince(f.elapsed, serverClock.now());
    const t = r.tokens || {};
    setText(f.tokens, fmtTokens(t.total_tokens || 0));
    f.tokens.title = `input ${fmtInt(t.input_tokens || 0)} · output ${fmtInt(t.output_tokens || 0)} · cache read ${fmtInt(t.cache_read_tokens || 0)}`;
    setText(f.cost, fmtCost(r.cost_usd || 0));
    setText(f.tools, `${fmtInt(r.tool_calls || 0)}` + (r.api_requests ? ` · ${fmtInt(r.api_requests)} API req.` : ''));
    setText(f.model, r.model || '—');
    const where = [r.pid ? `pid ${r.pid}` : '', r.host ? `on ${r.host}` : ''].filter(Boolean).join(' ') || '—';
    setText(f.where, where);
    f.where.title = [r.workspace_path, r.session_id ? `session ${r.session_id}` : ''].filter(Boolean).join('\n');
    this.lastEvent(r.last_event, parseTime(r.last_event_at), r.last_message);
    setText(f.feedCount, `(${this.feedView.list.childElementCount})`);
  }

  // lastEvent shows the session's latest agent event, and its message when it has
  // one (otherwise the last message stays: like the API's last_message).
  lastEvent(type, at, message) {
    setText(this.f.last, [type || '—', at ? `at ${fmtClock(at)}` : ''].filter(Boolean).join(' '));
    if (message) {
      setText(this.f.message, message);
      this.f.message.title = message;
    } else if (!this.f.message.textContent) setText(this.f.message, '—');
  }

  // added shows a row the stream just delivered.
  added(row) {
    this.feedView.prepend(row);
    setText(this.f.feedCount, `(${this.feedView.list.childElementCount})`);
  }
}

