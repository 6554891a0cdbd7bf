// Workflow checkpoints on the page: a pending checkpoint's question with one button per
// option, the answer's POST, and what was decided (docs/workflows.md, "Checkpoints and
// humans").

import { el, issueLink, badge, parseTime, timeEl, table, clip } from './dom.js';
import { postJSON, AuthError, APIError } from './api.js';

const NAME_KEY = 'sortie.answered_by';
const MAX_NAME = 100; // the daemon's bound on answered_by

function storedName() {
  try {
    return (localStorage.getItem(NAME_KEY) || '').slice(0, MAX_NAME);
  } catch {
    return '';
  }
}

// nameInput is the "answer as" field. Its value is kept in this browser and sent as
// answered_by; empty, the daemon records "dashboard".
export function nameInput() {
  const input = el('input', {
    type: 'text', name: 'answered_by', placeholder: 'answer as (your name)', maxlength: MAX_NAME,
    autocomplete: 'name', spellcheck: 'false', 'aria-label': 'answer as',
    title: 'recorded as who answered; left empty, answers are recorded as "dashboard"',
  });
  input.value = storedName();
  input.addEventListener('input', () => {
    try {
      localStorage.setItem(NAME_KEY, input.value.trim());
    } catch {
      // private mode: the name lasts for this page only
    }
  });
  return input;
}

// Answers sends answers and remembers each one's outcome, so that a card redrawn by the
// next refresh still says what happened. onChange(): redraw; onAnswered(): refresh.
export class Answers {
  constructor(onChange, onAnswered) {
    this.onChange = onChange;
    this.onAnswered = onAnswered;
    this.outcomes = new Map();
    this.version = 0;
  }

  key(cp) {
    return `${cp.issue_identifier}\u0000${cp.checkpoint_id}\u0000${cp.issued_at}`;
  }

  set(cp, tone, text) {
    this.outcomes.set(this.key(cp), { tone, text });
    if (this.outcomes.size > 100) this.outcomes.delete(this.outcomes.keys().next().value);
    this.version++;
    this.onChange();
  }

  async answer(cp, option, by) {
    const label = option.label || option.id;
    this.set(cp, 'busy', `Sending “${label}”…`);
    const body = { option_id: option.id };
    if (by) body.answered_by = by.slice(0, MAX_NAME);
    try {
      const got = await postJSON(cp.answer_url, body);
      this.set(cp, 'ok', `Answered “${label}” as ${got.answered_by || by || 'dashboard'}. The agent resumes with this answer.`);
    } catch (err) {
      this.set(cp, 'error', answerError(err));
    }
    this.onAnswered();
  }
}

function answerError(err) {
  if (err instanceof AuthError) return 'Not sent: this browser is not logged in. Reload the page to log in.';
  if (err instanceof APIError) {
    switch (err.code) {
      case 'checkpoint_answered':
        return `Someone answered first: ${err.message}`;
      case 'checkpoint_not_found':
        return `This checkpoint is no longer pending (the agent may have moved on): ${err.message}`;
      case 'invalid_option':
        return `Refused: ${err.message}`;
      case 'checkpoints_unavailable':
        return `This daemon cannot take answers: ${err.message}`;
      default:
        return `Not sent: ${err.message}`;
    }
  }
  return `Not sent: ${err.message || err}`;
}

// checkpointCard shows a pending checkpoint cp (an entry of the state's checkpoints):
// its name, message and an answer button per option, or the answer once given.
// showIssue links the issue; since (an RFC 3339 time) shows how long it has waited;
// note is a line for a checkpoint whose agent is still running.
export function checkpointCard(cp, answers, { showIssue = true, since = '', note = '' } = {}) {
  const outcome = answers.outcomes.get(answers.key(cp));
  const options = cp.options || [];
  const label = (id) => options.find((o) => o.id === id)?.label || id;
  const answered = !!cp.answer;
  const busy = outcome?.tone === 'busy';
  let name = null;
  return el('article', { class: 'question checkpoint', dataset: { issue: cp.issue_identifier, checkpoint: cp.checkpoint_id } },
    el('header', {},
      showIssue ? issueLink(cp.issue_identifier) : null,
      el('strong', { class: 'checkpoint-name' }, cp.name || cp.checkpoint_id),
      badge(answered ? 'answered' : cp.blocking ? 'awaiting_input' : 'checkpoint',
        answered ? 'the agent continues with this answer' : cp.blocking ? 'the agent waits for an answer' : 'answered by default unless someone answers'),
      el('span', { class: 'muted small', title: `workflow ${cp.workflow}, activity ${cp.activity}, checkpoint ${cp.checkpoint_id}` },
        `${cp.workflow} · ${cp.activity}`),
      since ? el('span', { class: 'muted small' }, 'waiting ', el('span', { dataset: { since } }, '—')) : null),
    el('p', { class: 'question-text' }, cp.message || '(the checkpoint has no message)'),
    note && !answered ? el('p', { class: 'muted small' }, note) : null,
    answered
      ? el('p', { class: 'answered' }, `Answered “${label(cp.answer)}” by ${cp.answered_by || '?'} via ${cp.answer_source || '?'} `,
        timeEl(parseTime(cp.answered_at)), '. The agent resumes with this answer.')
      : el('div', { class: 'answers', role: 'group', 'aria-label': 'answer' },
        options.map((o) => el('button', {
          type: 'button', class: o.id === cp.default_option ? 'option default' : 'option',
          title: o.description || null, disabled: busy, dataset: { option: o.id },
          on: { click: () => answers.answer(cp, o, name ? name.value.trim() : storedName()) },
        }, o.label || o.id)),
        name = nameInput()),
    !answered && cp.auto_advance_at
      ? el('p', { class: 'muted small' }, `Sortie chooses “${label(cp.default_option)}” `,
        el('span', { class: 'countdown', dataset: { due: cp.auto_advance_at } }, '—'), ' unless someone answers.')
      : null,
    outcome && !(answered && outcome.tone !== 'ok')
      ? el('p', { class: `answer-status ${outcome.tone}`, role: outcome.tone === 'error' ? 'alert' : 'status' }, outcome.text)
      : null);
}

// workflowPanel shows what structured workflows did for an issue (the workflow block
// of /api/v1/{identifier}): each run's activity path and the checkpoint decisions.
export function workflowPanel(wf) {
  const runs = wf?.runs || [];
  const decisions = wf?.checkpoints || [];
  const refused = wf?.refused_answers || [];
  if (!runs.length && !decisions.length && !refused.length) return null;
  const parts = [];
  if (runs.length) {
    parts.push(el('h3', {}, 'Activity path'), el('ol', { class: 'paths' }, runs.map((r) => el('li', { dataset: { run: r.run_id } },
      el('span', { class: 'muted small' }, `run ${r.run_id} · ${r.workflow} `),
      el('span', { class: 'path-steps' }, r.truncated ? el('span', { class: 'muted', title: 'older activities are left out' }, '… → ') : null,
        r.activities.map((a, i) => [i ? el('span', { class: 'muted' }, ' → ') : null, el('code', {}, a)]))))));
  }
  if (decisions.length) {
    parts.push(el('h3', {}, 'Checkpoint decisions'), table(['Issued', 'Activity', 'Checkpoint', 'Answer', 'By', 'Resolution'],
      [...decisions].reverse().map((d) => [
        timeEl(parseTime(d.issued_at)),
        el('code', {}, d.activity),
        el('span', { title: d.checkpoint_id }, clip(d.name || d.checkpoint_id, 80)),
        d.answer ? el('span', {}, el('strong', {}, d.answer), ' ', timeEl(parseTime(d.answered_at))) : el('span', { class: 'muted' }, 'not answered'),
        d.answered_by ? `${d.answered_by} (${String(d.source || '').replace(/_/g, ' ')})` : '—',
        d.resolution ? badge(d.resolution) : badge('pending', 'the agent has not resolved it yet'),
      ]), 'decisions'));
  }
  if (refused.length) {
    parts.push(el('h3', {}, 'Refused tracker answers'), table(['When', 'Author', 'Option', 'Why'],
      [...refused].reverse().map((a) => [
        timeEl(parseTime(a.at)),
        a.author || '—',
        el('code', {}, a.option),
        el('span', { class: 'muted' }, clip(a.reason, 200)),
      ]), 'refused'));
  }
  return parts;
}
