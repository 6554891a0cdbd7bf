// The daemon's JSON API and event stream, from the same origin. The session cookie
// that /login?token=… sets travels with every request by itself.

// AuthError: the server wants a token (401).
export class AuthError extends Error {}

// APIError: any other non-2xx answer, with the JSON envelope's code when there is one.
export class APIError extends Error {
  constructor(status, code, message) {
    super(message || `HTTP ${status}`);
    this.status = status;
    this.code = code || '';
  }
}

// getJSON fetches path and decodes the JSON body.
export async function getJSON(path, signal) {
  let res;
  try {
    res = await fetch(path, { headers: { Accept: 'application/json' }, cache: 'no-store', signal });
  } catch (err) {
    if (err.name === 'AbortError') throw err;
    throw new APIError(0, 'unreachable', 'the daemon is not answering');
  }
  if (res.status === 401) throw new AuthError('a token is required');
  let body = null;
  try {
    body = await res.json();
  } catch {
    // a proxy's HTML error page, or an empty body
  }
  if (!res.ok) {
    const e = body && body.error ? body.error : {};
    throw new APIError(res.status, e.code, e.message || `HTTP ${res.status} from ${path}`);
  }
  if (body === null) throw new APIError(res.status, 'bad_response', `${path} did not answer JSON`);
  return body;
}

// postJSON sends body as JSON to path and decodes the JSON answer, like getJSON. The
// X-Sortie-Client header tells the daemon the request comes from the dashboard (it
// records checkpoint answers with source "dashboard").
export async function postJSON(path, body) {
  let res;
  try {
    res = await fetch(path, {
      method: 'POST', cache: 'no-store', body: JSON.stringify(body),
      headers: { Accept: 'application/json', 'Content-Type': 'application/json', 'X-Sortie-Client': 'dashboard' },
    });
  } catch {
    throw new APIError(0, 'unreachable', 'the daemon is not answering');
  }
  if (res.status === 401) throw new AuthError('a token is required');
  let data = null;
  try {
    data = await res.json();
  } catch {
    // a proxy's HTML error page, or an empty body
  }
  if (!res.ok) {
    const e = data && data.error ? data.error : {};
    throw new APIError(res.status, e.code, e.message || `HTTP ${res.status} from ${path}`);
  }
  return data || {};
}

// serverClock follows the offset between this browser's clock and the daemon's, so
// countdowns agree with the daemon even when the two clocks do not.
export const serverClock = {
  skew: 0,
  observe(generatedAt) {
    const t = Date.parse(generatedAt);
    if (Number.isFinite(t)) this.skew = t - Date.now();
  },
  now() {
    return Date.now() + this.skew;
  },
};

// The activity kinds the daemon streams (the SSE event names). "dropped" says the
// stream skipped some activities because this page fell behind.
export const KINDS = ['dispatch', 'agent_event', 'turn', 'run_finished', 'handoff', 'retry',
  'hold', 'checkpoint', 'poll', 'reconcile', 'reload_error', 'dropped'];

// normalize gives an activity one shape whichever way the daemon spelled it: the agent
// event's fields in snake_case (Go field names are accepted too), and the duration as
// duration_ms (from nanoseconds when only "duration" is given).
export function normalize(a) {
  if (a.duration_ms === undefined && Number.isFinite(a.duration)) a.duration_ms = a.duration / 1e6;
  const e = a.event;
  if (e && typeof e === 'object') {
    const pick = (snake, go) => (e[snake] !== undefined ? e[snake] : e[go]);
    a.event = {
      type: pick('type', 'Type') || '', time: pick('time', 'Time'), message: pick('message', 'Message') || '',
      model: pick('model', 'Model') || '', tool_name: pick('tool_name', 'ToolName') || '',
      tool_duration_ms: pick('tool_duration_ms', 'ToolDurationMS') || 0, tool_error: !!pick('tool_error', 'ToolError'),
    };
  }
  return a;
}

// EventStream follows /api/v1/events, decodes each activity and hands it to onActivity.
// onStatus receives 'connecting', 'open' or 'down'. The browser reconnects a dropped
// stream by itself; when it gives up (the server answered an error, e.g. 401, or
// restarted), EventStream opens a new one after a growing pause, up to 15 s.
export class EventStream {
  constructor(url, onActivity, onStatus) {
    this.url = url;
    this.onActivity = onActivity;
    this.onStatus = onStatus;
    this.delay = 1000;
    this.timer = 0;
    this.connect();
  }

  connect() {
    this.timer = 0;
    this.onStatus('connecting');
    const es = new EventSource(this.url);
    this.es = es;
    const handle = (e) => {
      let a;
      try {
        a = JSON.parse(e.data);
      } catch {
        return;
      }
      if (a && typeof a === 'object') {
        if (!a.kind) a.kind = e.type;
        this.onActivity(normalize(a));
      }
    };
    for (const k of KINDS) es.addEventListener(k, handle);
    es.addEventListener('message', handle);
    es.onopen = () => {
      this.delay = 1000;
      this.onStatus('open');
    };
    es.onerror = () => {
      if (es.readyState === EventSource.CLOSED) {
        es.close();
        this.onStatus('down');
        this.timer = setTimeout(() => this.connect(), this.delay);
        this.delay = Math.min(this.delay * 2, 15000);
      } else {
        this.onStatus('connecting');
      }
    };
  }

  close() {
    clearTimeout(this.timer);
    if (this.es) this.es.close();
  }
}

const HIDDEN_EVERY = 15000; // ms between refreshes while the page is in a background tab

// Poller runs fn every `every` ms, one call at a time; kick() runs it soon (coalescing
// bursts of kicks into one call).
export class Poller {
  constructor(fn, every) {
    this.fn = fn;
    this.every = every;
    this.timer = 0;
    this.running = false;
    this.again = false;
  }

  start() {
    this.schedule(0);
    document.addEventListener('visibilitychange', () => {
      if (!document.hidden) this.kick();
    });
  }

  schedule(ms) {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.run(), ms);
  }

  kick(delay = 200) {
    if (this.running) this.again = true;
    else this.schedule(delay);
  }

  async run() {
    this.running = true;
    let next = document.hidden ? HIDDEN_EVERY : this.every;
    try {
      const slower = await this.fn();
      if (slower) next = Math.max(next, slower);
    } finally {
      this.running = false;
      if (this.again) {
        this.again = false;
        next = 200;
      }
      this.schedule(next);
    }
  }
}
