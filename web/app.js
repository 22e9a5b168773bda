// The gpupool console: one page, no build step, no third-party code. It talks only to the
// daemon's public API (/v1/...) as the user who signed in: with an API token, which lives in
// sessionStorage (gone when the tab closes), or through the company's identity provider, after
// which the daemon holds the tokens and the browser an HttpOnly session cookie this script
// never sees; its writes then carry the session's CSRF token (kept in memory only). Every
// string from the API reaches the page as a text node, never as HTML.

const POLL_MS = 2000;
const TOKEN_KEY = 'gpupool.token';

const S = {
  token: sessionStorage.getItem(TOKEN_KEY) || '',
  csrf: '',          // a single sign-on session's CSRF token (GET /v1/auth/session); '' with a token
  me: null,          // {name, role, tenant}
  view: null,        // the view on screen: {name, refresh, every, busy}
  timer: null,
  session: 0,        // bumped at every sign-in and sign-out: answers to an older session are dropped
  lastRefresh: 0,
};

// ---------------------------------------------------------------------------------------------
// DOM helpers

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else if (k === 'text') el.textContent = v;
    else if (k === 'style') el.style.cssText = v;  // through the CSSOM: the CSP forbids style attributes
    else if (k in el && typeof v !== 'string') el[k] = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

const $ = (sel, root = document) => root.querySelector(sel);

// Replaces the children of `box`, keeping keyboard focus on the element with the same
// data-key, so a live refresh never throws the user's focus back to the top of the page.
function replace(box, ...children) {
  const active = document.activeElement;
  const key = active && box.contains(active) ? active.dataset.key : undefined;
  box.replaceChildren();
  append(box, children);
  if (key !== undefined) {
    const again = box.querySelector(`[data-key="${CSS.escape(key)}"]`);
    // The control is gone (a cancelled job has no Cancel button): focus the view's heading
    // rather than letting it fall to the top of the page.
    if (again) again.focus();
    else $('#view-title')?.focus();
  }
}

function say(text) {
  const s = $('#status');
  s.textContent = '';
  setTimeout(() => { s.textContent = text; }, 30);
}

function showError(text) {
  const a = $('#alert');
  if (!text) { a.hidden = true; a.textContent = ''; return; }
  a.hidden = false;
  a.textContent = text;
}

// ---------------------------------------------------------------------------------------------
// Time: the API speaks UTC (RFC 3339 and epoch ms); the page speaks the viewer's time zone.

const TZ = Intl.DateTimeFormat().resolvedOptions().timeZone;
const fmtDateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
const fmtTime = new Intl.DateTimeFormat(undefined, { timeStyle: 'medium' });
const fmtDay = new Intl.DateTimeFormat(undefined, { weekday: 'short', month: 'short', day: 'numeric' });
const fmtHour = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit' });

function when(t) {
  if (t === undefined || t === null) return '';
  const d = typeof t === 'number' ? new Date(t) : new Date(t);
  return h('time', { datetime: d.toISOString(), title: d.toISOString() }, fmtDateTime.format(d));
}

// "2026-12-01T10:00" as the <input type=datetime-local> wants it, in local time.
function localInput(d) {
  const p = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`;
}

function duration(s) {
  if (s >= 86400 * 365) return 'no estimate';
  if (s >= 3600) return `${(s / 3600).toFixed(s % 3600 ? 1 : 0)} h`;
  if (s >= 60) return `${Math.round(s / 60)} min`;
  return `${s} s`;
}

const num = (x, digits = 2) => Number(x).toLocaleString(undefined, { maximumFractionDigits: digits });

// ---------------------------------------------------------------------------------------------
// API

class ApiError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

function newKey() {
  if (window.crypto && crypto.randomUUID) return crypto.randomUUID();
  return `${Date.now()}-${Math.random().toString(16).slice(2)}`;
}

async function api(method, path, body, headers) {
  const session = S.session;
  const stale = () => new ApiError(-1, 'stale');  // the session ended while this was out
  if (!S.token && !S.csrf) throw stale();
  // A token goes as the bearer; a session's cookie goes by itself (same origin), and its writes
  // prove they come from this page with the CSRF token.
  const credential = S.token ? { Authorization: `Bearer ${S.token}` } : method === 'GET' ? {} : { 'X-CSRF-Token': S.csrf };
  let r;
  try {
    r = await fetch(path, {
      method,
      headers: { ...credential, ...(body ? { 'Content-Type': 'application/json' } : {}), ...headers },
      body: body ? JSON.stringify(body) : undefined,
      cache: 'no-store',
    });
  } catch (e) {
    if (session !== S.session) throw stale();
    if (method !== 'GET') void toLeader();  // a write a follower redirected to another origin
    throw new ApiError(0, 'Cannot reach the gpupool daemon. Retrying.');
  }
  const text = await r.text();
  if (session !== S.session) throw stale();
  if (r.status === 503) void toLeader();  // this replica may have stopped leading
  if (!r.ok) {
    let msg = `${r.status} ${r.statusText}`;
    try { msg = JSON.parse(text).error.message || msg; } catch (e) { /* not JSON */ }
    throw new ApiError(r.status, msg);
  }
  if ((r.headers.get('Content-Type') || '').startsWith('application/json')) return JSON.parse(text);
  return text;
}

const get = (path) => api('GET', path);
const qs = (params) => new URLSearchParams(Object.entries(params).filter(([, v]) => v !== undefined && v !== '')).toString();

// ---------------------------------------------------------------------------------------------
// Long lists in pages (GET /v1/jobs, GET /v1/audit), newest first: polling re-reads the first
// page only, and "Load more" reads the page after the oldest item loaded and keeps it.

// Items per page: 50, or ?page_size=N (1..1000) in the console's address (the browser test
// uses a small one to reach a second page quickly).
const PAGE_SIZE = (() => {
  const n = Number(new URLSearchParams(location.search).get('page_size'));
  return Number.isInteger(n) && n >= 1 && n <= 1000 ? n : 50;
})();

function pagedList(path) {
  let items = new Map();  // id -> item, for every page loaded
  let floor = Infinity;   // the oldest id loaded
  let more = null;        // the cursor of the page after it; null: nothing older
  let gen = 0;            // bumped by reset: a page asked for before is dropped
  let asked = 0;          // first pages asked for: an older one's late answer is dropped
  const ask = (params, cursor) => get(`${path}?${qs({ ...params, limit: PAGE_SIZE, cursor })}`);
  const lowest = (page) => (page.items.length ? Number(page.items[page.items.length - 1].id) : Infinity);
  return {
    list: () => [...items.values()].sort((a, b) => Number(b.id) - Number(a.id)),
    hasMore: () => more !== null,
    reset() { items = new Map(); floor = Infinity; more = null; ++gen; },
    // The first page, fresh: it replaces what was loaded in its range (an item no longer there
    // has left the filter); older items stay as they were loaded. Items that slid off the first
    // page since the last poll stay too, so the list never has a hole. null: dropped (stale).
    async refresh(params) {
      const g = gen, mine = ++asked;
      const page = await ask(params);
      if (g !== gen || mine !== asked) return null;
      const low = lowest(page);
      if (page.next_cursor === null) items = new Map();
      const fresh = new Set(page.items.map((i) => i.id));
      for (const id of [...items.keys()]) if (Number(id) >= low && !fresh.has(id)) items.delete(id);
      for (const i of page.items) items.set(i.id, i);
      if (page.next_cursor === null || low <= floor) { floor = low; more = page.next_cursor; }
      return page;
    },
    // The next older page; its items, or null when the list was reset or moved meanwhile.
    async loadMore(params) {
      const g = gen, cursor = more;
      if (cursor === null) return [];
      const page = await ask(params, cursor);
      if (g !== gen || cursor !== more) return null;
      for (const i of page.items) items.set(i.id, i);
      floor = Math.min(floor, lowest(page));
      more = page.next_cursor;
      return page.items;
    },
    // One item read again (after the user acted on it); dropped if it no longer belongs.
    put(item, belongs) {
      if (!items.has(item.id)) return;
      if (belongs) items.set(item.id, item);
      else items.delete(item.id);
    },
  };
}

// The "Load more" button under a paged list. `what` ends its accessible name ("Load more
// jobs"). While a page is out it says so and ignores clicks, but keeps the focus (a disabled
// button would drop it).
function loadMoreButton(what, busy, onclick) {
  return h('div', { class: 'buttons' },
    h('button', { type: 'button', class: 'more', 'data-key': `more-${what}`, 'aria-disabled': busy ? 'true' : undefined, onclick },
      busy ? 'Loading…' : 'Load more', h('span', { class: 'visually-hidden' }, ` ${what}`)));
}

// ---------------------------------------------------------------------------------------------
// Shared pieces

const isAdmin = () => S.me && S.me.role === 'cluster-admin';
const writes = () => S.me && S.me.role !== 'viewer';

// A colour per tenant, distinct for the first ten in name order (assigned at sign-in from the
// tenants the caller may see), hashed beyond. Text labels always go with it: colour is never
// the only cue.
const PALETTE = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#17becf', '#8c564b', '#e377c2', '#7f7f00', '#393b79'];
const COLOURS = new Map();
function tenantColour(name) {
  if (!name) return '#6b7280';
  if (COLOURS.has(name)) return COLOURS.get(name);
  let x = 0;
  for (const c of name) x = (x * 31 + c.codePointAt(0)) >>> 0;
  return PALETTE[x % PALETTE.length];
}
function assignColours(names) {
  COLOURS.clear();
  [...names].sort().forEach((n, i) => { if (i < PALETTE.length) COLOURS.set(n, PALETTE[i]); });
}

function badge(text, kind) {
  return h('span', { class: `badge b-${kind || text}` }, text);
}

function table(caption, head, rows, empty) {
  if (!rows.length) return h('p', { class: 'empty' }, empty);
  return h('table', {},
    h('caption', {}, caption),
    h('thead', {}, h('tr', {}, head.map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', {}, rows.map((r) => h('tr', { 'data-row': r.key || undefined }, r.cells.map((c) => h('td', {}, c))))));
}

function field(label, input, hint) {
  const id = input.id || `f-${Math.random().toString(36).slice(2)}`;
  input.id = id;
  return h('div', { class: 'field' }, h('label', { for: id }, label), input, hint ? h('small', {}, hint) : null);
}

function select(name, options, value) {
  return h('select', { name }, options.map((o) => {
    const [v, label] = Array.isArray(o) ? o : [o, o];
    return h('option', { value: v, selected: v === value }, label);
  }));
}

// A horizontal bar: `parts` are [value, colour, label]; the bar's scale is `max`.
function bar(parts, max, label) {
  const total = Math.max(max, parts.reduce((a, [v]) => a + v, 0), 1e-9);
  return h('div', { class: 'bar', role: 'img', 'aria-label': label },
    parts.filter(([v]) => v > 0).map(([v, colour, what]) =>
      h('span', { style: `width:${(100 * v / total).toFixed(2)}%;background:${colour}`, title: what })));
}

async function flavorsAndTenants() {
  const tenants = (await get('/v1/tenants')).items;
  const flavors = new Set();
  for (const t of tenants) for (const f of Object.keys(t.quotas || {})) flavors.add(f);
  if (isAdmin()) {
    for (const n of (await get('/v1/nodes')).items) flavors.add(n.flavor);
  }
  return { tenants, flavors: [...flavors].sort() };
}

// ---------------------------------------------------------------------------------------------
// Sign in

function renderSignIn(message) {
  stopPolling();
  $('#nav').replaceChildren();
  $('#who').replaceChildren();
  const input = h('input', { type: 'password', name: 'token', autocomplete: 'off', required: true, spellcheck: 'false' });
  const err = h('p', { class: 'form-error', role: 'alert' }, message || '');
  const form = h('form', { class: 'signin', 'aria-labelledby': 'signin-title' },
    h('h1', { id: 'signin-title', tabindex: '-1' }, 'Sign in to gpupool'),
    h('p', {}, 'Paste the access token your administrator gave you (gpupool tokens start with gp_).'),
    field('Access token', input),
    err,
    h('button', { type: 'submit', class: 'primary' }, 'Sign in'));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    S.token = input.value.trim();
    try {
      await signIn();
    } catch (e) {
      S.token = '';
      err.textContent = e.status === 401 ? 'That token was not accepted. Check it and try again.' : e.message;
      input.focus();
    }
  });
  replace($('#main'), form);
  input.focus();
  void offerSingleSignOn(form);
}

// The issuers the daemon signs browsers in with (GET /v1/auth), as links above the token form.
async function offerSingleSignOn(form) {
  let doc;
  try {
    doc = await (await fetch('/v1/auth', { cache: 'no-store' })).json();
  } catch (e) {
    return;
  }
  if (!doc.console_login) return;
  const links = (doc.oidc || []).filter((i) => i.client_id).map((i) => h('a', {
    class: 'button primary sso',
    href: `/v1/auth/login?${qs({ issuer: i.issuer, return: '/' })}`,
  }, `Sign in with ${new URL(i.issuer).host}`));
  if (!links.length || !form.isConnected) return;
  form.querySelector('h1').after(h('div', { class: 'sso-list' }, ...links),
    h('p', {}, 'Or, for automation and break-glass access:'));
}

async function signIn() {
  S.session += 1;
  const [summary, tenants] = await Promise.all([get('/v1/summary'), get('/v1/tenants')]);
  S.me = summary.me;
  assignColours(tenants.items.map((t) => t.name));
  if (S.token) sessionStorage.setItem(TOKEN_KEY, S.token);
  renderChrome();
  const wanted = location.hash.replace(/^#\//, '');
  if (!views().some(([n]) => n === wanted)) location.hash = `#/${views()[0][0]}`;
  else route();
}

function signOut(message) {
  S.session += 1;
  // A single sign-on session ends at the daemon too (its cookie is cleared by the answer).
  if (S.csrf) void fetch('/v1/auth/logout', { method: 'POST', headers: { 'X-CSRF-Token': S.csrf } }).catch(() => {});
  S.csrf = '';
  S.token = '';
  S.me = null;
  document.title = 'gpupool';
  $('#updated').textContent = '';
  sessionStorage.removeItem(TOKEN_KEY);
  showError('');
  history.replaceState(null, '', location.pathname);
  renderSignIn(message);
}

function renderChrome() {
  const who = S.me.tenant ? `${S.me.name} · ${S.me.role} of ${S.me.tenant}` : `${S.me.name} · ${S.me.role}`;
  replace($('#who'), h('span', { id: 'whoami' }, who), ' ',
    h('button', { type: 'button', class: 'link', onclick: () => signOut('Signed out.') }, 'Sign out'));
  const nav = h('ul', {}, views().map(([name, title]) =>
    h('li', {}, h('a', { href: `#/${name}`, 'data-view': name }, title))));
  replace($('#nav'), nav);
}

// ---------------------------------------------------------------------------------------------
// Views. Each builds its frame once and returns {refresh, every}: refresh() redraws the live
// parts from the API, and runs again every `every` ms while the view is on screen.

const TENANT_VIEWS = [['overview', 'Overview'], ['jobs', 'Jobs'], ['calendar', 'Calendar'], ['costs', 'Costs']];
const ADMIN_VIEWS = [['cluster', 'Cluster'], ['tenants', 'Tenants'], ['jobs', 'Jobs'], ['calendar', 'Reservations'],
  ['costs', 'Costs'], ['audit', 'Audit log']];
// Tenant admins may read their tenant's audit log too.
const views = () => (isAdmin() ? ADMIN_VIEWS
  : S.me && S.me.role === 'tenant-admin' ? [...TENANT_VIEWS, ['audit', 'Audit log']] : TENANT_VIEWS);

function heading(text) {
  return h('h1', { tabindex: '-1', id: 'view-title' }, text);
}

// Overview: my guarantee, my usage, what I borrow, and the health of the nodes I run on.
function viewOverview(main) {
  const quotas = h('div', { id: 'quotas' });
  const nodes = h('div', { id: 'my-nodes' });
  const counts = h('p', { id: 'counts' });
  main.append(heading(`Tenant ${S.me.tenant}`), counts,
    h('section', { 'aria-labelledby': 'q-title' }, h('h2', { id: 'q-title' }, 'Guarantee and usage'), quotas),
    h('section', { 'aria-labelledby': 'n-title' }, h('h2', { id: 'n-title' }, 'Nodes running my jobs'), nodes));
  return {
    every: POLL_MS,
    async refresh() {
      const [t, ns] = await Promise.all([get(`/v1/tenants/${encodeURIComponent(S.me.tenant)}`), get('/v1/nodes')]);
      replace(counts, `${t.active_jobs} running or starting, ${t.pending_jobs} pending. Weight ${t.weight}.`);
      replace(quotas, quotaTable(t));
      replace(nodes, table('Nodes running my jobs',
        ['Node', 'GPU model', 'Condition', 'Healthy GPUs'],
        ns.items.map((n) => ({ key: n.name, cells: [n.name, n.flavor, badge(n.condition), `${n.healthy_gpus} of ${n.gpus}`] })),
        'None of your jobs is running on a node right now.'));
    },
  };
}

function quotaTable(t) {
  const flavors = [...new Set([...Object.keys(t.quotas || {}), ...Object.keys(t.usage || {})])].sort();
  return table(`Quotas of ${t.name} (GPU-equivalents)`,
    ['GPU model', 'Guaranteed', 'In use', 'Borrowed', 'Borrow limit', ''],
    flavors.map((f) => {
      const q = (t.quotas || {})[f] || {};
      const u = (t.usage || {})[f] || { allocated: 0, borrowed: 0 };
      const g = q.guaranteed || 0;
      const own = u.allocated - u.borrowed;
      return {
        key: f,
        cells: [f, num(g), num(u.allocated), num(u.borrowed), q.borrow_limit === undefined ? 'none' : num(q.borrow_limit),
          bar([[own, tenantColour(t.name), 'within the guarantee'], [u.borrowed, '#f59e0b', 'borrowed'],
            [Math.max(0, g - own), '#e5e7eb', 'guaranteed, unused']], g,
          `${num(u.allocated)} in use of ${num(g)} guaranteed, ${num(u.borrowed)} borrowed`)],
      };
    }), 'No quota on any GPU model.');
}

// Tenants (operators): every tenant's usage against its guarantee.
function viewTenants(main) {
  const box = h('div', { id: 'tenant-usage' });
  main.append(heading('Tenants'), h('p', {}, 'Usage against guarantee, per GPU model. Amber is borrowed capacity.'), box);
  return {
    every: POLL_MS,
    async refresh() {
      const ts = (await get('/v1/tenants')).items;
      replace(box, ts.length ? ts.map((t) => h('section', { class: 'tenant', 'aria-label': t.name },
        h('h2', {}, h('span', { class: 'swatch', style: `background:${tenantColour(t.name)}` }), t.name),
        h('p', {}, `${t.active_jobs} active, ${t.pending_jobs} pending, weight ${t.weight}`),
        quotaTable(t))) : h('p', { class: 'empty' }, 'No tenants yet.'));
    },
  };
}

// Jobs: submit, list, cancel, and a job's details with its pending reason and logs.
function viewJobs(main) {
  const list = h('div', { id: 'job-list' });
  // Not a live region: it is redrawn by polling, and a screen reader would read it all again.
  // State changes of the open job are announced through say() instead.
  const detail = h('section', { id: 'job-detail', 'aria-label': 'Job details' });
  const stateFilter = select('state', [['', 'all states'], 'pending', 'admitted', 'running', 'succeeded', 'failed', 'cancelled'], '');
  stateFilter.id = 'state-filter';
  let open = null;       // id of the job shown in detail
  let shown = '';        // what the detail shows now (skip redraws that change nothing)
  let listed = '';       // likewise for the list
  const pages = pagedList('/v1/jobs');
  let loading = false;   // a "Load more" page is out
  let formReady = false;
  const form = h('form', { id: 'submit-form', class: 'card', 'aria-labelledby': 'submit-title' });
  main.append(heading(isAdmin() ? 'All jobs' : 'My jobs'));
  if (writes()) main.append(form);
  main.append(h('div', { class: 'toolbar' }, field('Show', stateFilter)), list, detail);
  stateFilter.addEventListener('change', () => { listed = ''; pages.reset(); tick(S.view); });

  const openJob = (id) => {
    open = id;
    shown = '';
    showDetail().then(() => $('#job-detail h2')?.focus()).catch(failed);
  };
  const close = () => { open = null; shown = ''; detail.replaceChildren(); $('#view-title')?.focus(); };

  async function showDetail() {
    const id = open;
    if (!id) { detail.replaceChildren(); return; }
    let j, logs;
    try {
      [j, logs] = await Promise.all([get(`/v1/jobs/${id}`), get(`/v1/jobs/${id}/logs`)]);
    } catch (e) {
      if (e.status === 404 && open === id) close();
      if (e.status === 404) return;
      throw e;
    }
    if (open !== id) return;  // closed, or another job opened, while this was out
    const text = JSON.stringify([j, logs]);
    if (text === shown) return;
    const before = shown ? JSON.parse(shown)[0].state : null;
    shown = text;
    if (before && before !== j.state) say(`Job ${j.id} is ${j.state}.`);
    const rows = [
      ['State', badge(j.state)],
      ['Tenant', j.tenant],
      ['Priority class', j.priority_class],
      ['Resources', resources(j)],
      ['Submitted', when(j.submitted_at_ms)],
      ['Started', j.started_at_ms ? when(j.started_at_ms) : '—'],
      ['Admitted as', j.admitted_as || '—'],
      ['Command', h('code', {}, j.command.map((w) => (/[\s"']/.test(w) || w === '' ? JSON.stringify(w) : w)).join(' '))],
      ['Placement', j.placement.length ? j.placement.map((p) => `${p.node}: GPU ${p.gpus.map(gpuGrant).join(', ')}`).join('; ') : '—'],
    ];
    if (j.reservation) rows.push(['Reservation', j.reservation]);
    if (j.reason) rows.push(['Why it waits', h('span', { class: 'reason' }, `${j.reason.code}: ${j.reason.message}`)]);
    replace(detail,
      h('h2', { tabindex: '-1', 'data-key': 'detail-title' }, `Job ${j.id} `, h('span', { class: 'muted' }, j.name)),
      h('dl', { class: 'facts' }, rows.map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)])),
      h('h3', {}, 'Events'),
      (j.events || []).length
        ? h('table', { class: 'events' },
          h('caption', {}, `What happened to job ${j.id}, oldest first`),
          h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'When'), h('th', { scope: 'col' }, 'Event'),
            h('th', { scope: 'col' }, 'What'))),
          h('tbody', {}, j.events.map((e) => h('tr', {},
            h('td', {}, when(Date.parse(e.at))), h('td', { class: 'event-type' }, e.type), h('td', {}, e.message)))))
        : h('p', { class: 'empty' }, 'No events.'),
      h('h3', {}, 'Logs'),
      logs.items.length
        ? logs.items.map((l) => h('div', { class: 'log' },
          h('p', { class: 'muted' }, `Replica ${l.replica}`),
          h('pre', { class: 'stdout', tabindex: '0', 'data-key': `out-${l.replica}`, 'aria-label': `stdout of replica ${l.replica}` }, l.stdout || '(no output)'),
          l.stderr ? h('pre', { class: 'stderr', tabindex: '0', 'data-key': `err-${l.replica}`, 'aria-label': `stderr of replica ${l.replica}` }, l.stderr) : null))
        : h('p', { class: 'empty' }, 'No logs yet: logs come from the node agent once the job runs.'),
      h('button', { type: 'button', 'data-key': 'close-detail', onclick: close }, 'Close'));
  }

  async function refresh() {
    if (writes() && !formReady) {
      try {
        await buildSubmitForm(form, openJob);
        formReady = true;
      } catch (e) {
        if (e.status === -1) throw e;
        replace(form, h('p', { class: 'form-error' }, `The submit form could not load (${e.message}); retrying.`));
      }
    }
    const page = await pages.refresh({ state: stateFilter.value });
    if (page === null) return;  // a later refresh or a reset superseded it
    drawList();
    await showDetail();
  }

  function drawList() {
    const jobs = pages.list();
    const text = JSON.stringify([jobs, pages.hasMore(), loading]);
    if (text !== listed) {
      listed = text;
      const head = ['Id', 'Name', ...(isAdmin() ? ['Tenant'] : []), 'State', 'Resources', 'Submitted', 'Waiting because', ''];
      const caption = `${jobs.length === 1 ? '1 job' : `${jobs.length} jobs`}, newest first${pages.hasMore() ? '; older ones under Load more' : ''}`;
      replace(list, table(caption, head, jobs.map((j) => ({
        key: j.id,
        cells: [j.id, j.name, ...(isAdmin() ? [j.tenant] : []), badge(j.state), resources(j), when(j.submitted_at_ms),
          j.reason ? h('span', { class: 'reason' }, j.reason.message) : '',
          h('span', { class: 'actions' },
            h('button', { type: 'button', 'data-key': `show-${j.id}`, onclick: () => openJob(j.id) },
              'Details', h('span', { class: 'visually-hidden' }, ` of job ${j.id}`)),
            writes() && !TERMINAL.has(j.state)
              ? h('button', { type: 'button', class: 'danger', 'data-key': `cancel-${j.id}`, onclick: () => cancelJob(j) },
                'Cancel', h('span', { class: 'visually-hidden' }, ` job ${j.id}`))
              : null)],
      })), stateFilter.value ? `No ${stateFilter.value} jobs.` : 'No jobs yet. Submit one above.'),
      pages.hasMore() ? loadMoreButton('jobs', loading, loadMore) : null);
    }
  }

  // The next older page; the focus moves to its first job, and the count is announced.
  async function loadMore() {
    if (loading) return;
    loading = true;
    drawList();
    let got = null;
    try {
      got = await pages.loadMore({ state: stateFilter.value });
    } catch (e) {
      failed(e);
    } finally {
      loading = false;
    }
    if (S.view === null || !list.isConnected) return;
    drawList();
    if (got === null) return;
    say(got.length ? `Loaded ${got.length} older ${got.length === 1 ? 'job' : 'jobs'}.` : 'No older jobs.');
    if (got.length) list.querySelector(`[data-key="show-${CSS.escape(got[0].id)}"]`)?.focus();
  }

  async function cancelJob(j) {
    if (!confirm(`Cancel job ${j.id} (${j.name})?`)) return;
    try {
      await api('DELETE', `/v1/jobs/${j.id}`);
      say(`Job ${j.id} cancelled.`);
    } catch (e) {
      if (e.status !== -1) showError(`Could not cancel job ${j.id}: ${e.message}`);
      return;
    }
    // It may sit in an older page, which polling does not re-read.
    try {
      const now = await get(`/v1/jobs/${j.id}`);
      pages.put(now, !stateFilter.value || now.state === stateFilter.value);
      if (list.isConnected) drawList();
    } catch (e) { /* the next poll shows what it can */ }
    tick(S.view);
  }
  return { every: POLL_MS, refresh };
}

const TERMINAL = new Set(['succeeded', 'failed', 'cancelled']);

function resources(j) {
  const r = j.resources;
  const one = r.gpus !== undefined ? `${r.gpus} × ${r.flavor}` : r.mig_profile ? `${r.flavor} ${r.mig_profile}` : `${r.gpu_fraction} of ${r.flavor} (${r.memory_gb} GB)`;
  return j.replicas > 1 ? `${j.replicas} replicas of ${one}` : one;
}

function gpuGrant(g) {
  if (g.mig_start !== undefined) return `${g.gpu} (MIG slice at ${g.mig_start})`;
  if (g.milli) return `${g.gpu} (${g.milli / 10}%)`;
  return String(g.gpu);
}

async function buildSubmitForm(form, onSubmitted) {
  const [{ tenants, flavors }, classes, reservations] = await Promise.all([
    flavorsAndTenants(), get('/v1/priority-classes'), get('/v1/reservations')]);
  const tenant = select('tenant', tenants.map((t) => t.name), S.me.tenant || (tenants[0] || {}).name);
  const name = h('input', { name: 'name', required: true, maxlength: '128', value: 'my-job' });
  const flavor = select('flavor', flavors, flavors[0]);
  const kind = select('kind', [['gpus', 'whole GPUs'], ['mig_profile', 'MIG slice'], ['gpu_fraction', 'fraction of a GPU']], 'gpus');
  const amount = h('input', { name: 'amount', required: true, value: '1', 'aria-describedby': 'amount-hint' });
  const memory = h('input', { name: 'memory_gb', type: 'number', min: '1', value: '10' });
  const replicas = h('input', { name: 'replicas', type: 'number', min: '1', max: '1024', value: '1' });
  const klass = select('priority_class', classes.items.map((c) => c.name), (classes.items.find((c) => c.name === 'batch') || classes.items[0] || {}).name);
  const minutes = h('input', { name: 'duration', type: 'number', min: '1', value: '60', required: true });
  const command = h('input', { name: 'command', required: true, value: 'python train.py', class: 'wide' });
  const mine = reservations.items.filter((r) => !r.maintenance && new Date(r.end) > new Date());
  const reservation = select('reservation', [['', 'none'], ...mine.map((r) => [r.id, `${r.id}: ${r.gpus} × ${r.flavor}, ${fmtDateTime.format(new Date(r.start))}`])], '');
  const hint = h('small', { id: 'amount-hint' }, 'a count of GPUs');
  const memoryField = field('GPU memory (GB)', memory);
  const err = h('p', { class: 'form-error', role: 'alert' });
  const syncKind = () => {
    hint.textContent = { gpus: 'a count of GPUs, 1 to 16', mig_profile: 'a profile such as 1g.10gb or 3g.40gb', gpu_fraction: 'a share of one GPU, such as 0.25' }[kind.value];
    memoryField.hidden = kind.value !== 'gpu_fraction';
  };
  kind.addEventListener('change', syncKind);
  const amountField = h('div', { class: 'field' }, h('label', { for: 'amount' }, 'Amount'), amount, hint);
  amount.id = 'amount';
  form.replaceChildren(
    h('h2', { id: 'submit-title' }, 'Submit a job'),
    h('div', { class: 'grid' },
      isAdmin() ? field('Tenant', tenant) : null,
      field('Name', name), field('GPU model', flavor), field('Kind', kind), amountField, memoryField,
      field('Replicas (a gang)', replicas), field('Priority class', klass), field('Expected minutes', minutes),
      field('Reservation', reservation)),
    field('Command', command, 'words separated by spaces; quote a word with spaces in "double" or \'single\' quotes'),
    err,
    h('button', { type: 'submit', class: 'primary' }, 'Submit'));
  syncKind();
  // The Idempotency-Key: a retry after a lost answer, or a second click within 10 s of a
  // success, sends the same key, so the daemon answers with the same job. A change to the form,
  // or a new submit after that, is a new job.
  let key = newKey();
  let acceptedAt = 0;
  form.oninput = () => { key = newKey(); acceptedAt = 0; };
  form.onchange = form.oninput;
  const submit = form.querySelector('button[type=submit]');
  form.onsubmit = async (ev) => {
    ev.preventDefault();
    if (submit.disabled) return;
    err.textContent = '';
    const argv = words(command.value);
    if (!argv || !argv.length) {
      err.textContent = argv ? 'Not submitted: the command is empty.' : 'Not submitted: the command has a quote that is not closed.';
      command.focus();
      return;
    }
    const res = { flavor: flavor.value };
    if (kind.value === 'gpus') res.gpus = Number(amount.value);
    else if (kind.value === 'mig_profile') res.mig_profile = amount.value.trim();
    else { res.gpu_fraction = Number(amount.value); res.memory_gb = Number(memory.value); }
    const body = {
      tenant: isAdmin() ? tenant.value : S.me.tenant,
      name: name.value.trim(),
      priority_class: klass.value,
      replicas: Number(replicas.value),
      resources: res,
      duration_estimate_s: Math.round(Number(minutes.value) * 60),
      command: argv,
    };
    if (reservation.value) body.reservation = reservation.value;
    if (acceptedAt && Date.now() - acceptedAt > 10000) key = newKey();
    submit.disabled = true;
    try {
      const j = await api('POST', '/v1/jobs', body, { 'Idempotency-Key': key });
      acceptedAt = Date.now();
      say(`Job ${j.id} submitted.`);
      onSubmitted(j.id);
    } catch (e) {
      if (e.status !== -1) err.textContent = `Not submitted: ${e.message}`;
    } finally {
      submit.disabled = false;
    }
  };
}

// Splits a command line into words: spaces separate, quotes group, nothing else is special
// (the agent runs the command without a shell). Null when a quote is not closed.
function words(line) {
  const out = [];
  let cur = null;
  let quote = null;
  for (const ch of line) {
    if (quote) {
      if (ch === quote) quote = null;
      else cur += ch;
    } else if (ch === '"' || ch === "'") {
      quote = ch;
      cur = cur ?? '';
    } else if (/\s/.test(ch)) {
      if (cur !== null) out.push(cur);
      cur = null;
    } else {
      cur = (cur ?? '') + ch;
    }
  }
  if (quote) return null;
  if (cur !== null) out.push(cur);
  return out;
}

// Calendar: what is free per GPU model over the next days, what is reserved, and booking.
function viewCalendar(main) {
  const flavorSel = h('select', { name: 'cal-flavor', id: 'cal-flavor' });
  const days = h('select', { name: 'cal-days', id: 'cal-days' }, [3, 7, 14].map((d) => h('option', { value: d, selected: d === 7 }, `${d} days`)));
  const grid = h('div', { id: 'calendar', class: 'calendar-box' });
  const list = h('div', { id: 'reservation-list' });
  const form = h('form', { id: 'reserve-form', class: 'card', 'aria-labelledby': 'reserve-title' });
  main.append(heading(isAdmin() ? 'Reservations' : 'Availability and reservations'),
    h('div', { class: 'toolbar' }, field('Show GPU model', flavorSel), field('Show', days)),
    h('section', { 'aria-labelledby': 'cal-title' }, h('h2', { id: 'cal-title' }, 'Free GPUs (after guarantees, reservations and maintenance)'), grid));
  if (writes()) main.append(form);
  main.append(h('section', { 'aria-labelledby': 'res-title' }, h('h2', { id: 'res-title' }, isAdmin() ? 'All reservations' : 'My reservations'), list));

  // The GPU models and the form load once; a failure is retried at the next refresh.
  let ready = null;
  const prepare = async () => {
    const { tenants, flavors } = await flavorsAndTenants();
    flavorSel.replaceChildren(...flavors.map((f) => h('option', { value: f }, f)));
    if (writes()) buildReserveForm(form, tenants, flavors, () => tick(S.view));
  };
  flavorSel.addEventListener('change', () => tick(S.view));
  days.addEventListener('change', () => tick(S.view));

  async function refresh() {
    if (!ready) ready = prepare().catch((e) => { ready = null; throw e; });
    await ready;
    const flavor = flavorSel.value;
    // Whole local days, asked hour by hour: on a day with a daylight-saving change the hours
    // still fall in the right local 6-hour slots.
    const today = new Date();
    const start = new Date(today.getFullYear(), today.getMonth(), today.getDate());
    const end = new Date(today.getFullYear(), today.getMonth(), today.getDate() + Number(days.value));
    const [cal, rs] = await Promise.all([
      flavor ? get(`/v1/calendar?${qs({ flavor, start: start.toISOString(), end: end.toISOString(), step_s: 3600 })}`) : { items: [] },
      get('/v1/reservations')]);
    replace(grid, calendarGrid(cal.items, flavor));
    const now = Date.now();
    const rows = rs.items.filter((r) => new Date(r.end) > new Date(now - 86400e3))
      .sort((a, b) => new Date(a.start) - new Date(b.start));
    replace(list, table('Reservations', ['Id', 'Tenant', 'GPU model', 'GPUs', 'Start', 'End', ''],
      rows.map((r) => ({
        key: r.id,
        cells: [r.id, r.maintenance ? badge('maintenance') : r.tenant, r.flavor, num(r.gpus), when(r.start), when(r.end),
          writes() && (isAdmin() || !r.maintenance) && new Date(r.end) > new Date(now)
            ? h('button', { type: 'button', class: 'danger', 'data-key': `cancel-r-${r.id}`, onclick: () => cancelReservation(r) },
              'Cancel', h('span', { class: 'visually-hidden' }, ` reservation ${r.id}`))
            : ''],
      })), 'No reservations. Book capacity with the form above.'));
  }

  async function cancelReservation(r) {
    if (!confirm(`Cancel reservation ${r.id}?`)) return;
    try {
      await api('DELETE', `/v1/reservations/${r.id}`);
      say(`Reservation ${r.id} cancelled.`);
    } catch (e) {
      if (e.status !== -1) showError(`Could not cancel reservation ${r.id}: ${e.message}`);
      return;
    }
    tick(S.view);
  }
  return { every: 10000, refresh };
}

// Days down, four local 6-hour slots across (00, 06, 12, 18). Each cell folds the hours of its
// slot: the GPUs free through the whole slot (the least of its hours) and the most reserved.
function calendarGrid(items, flavor) {
  if (!items.length) return h('p', { class: 'empty' }, flavor ? 'Nothing to show for this range.' : 'No GPU model to show.');
  const days = new Map();  // local midnight (ms) -> [slot 0..3] -> folded hours
  for (const b of items) {
    const s = new Date(b.start);
    const day = new Date(s.getFullYear(), s.getMonth(), s.getDate()).getTime();
    const slot = Math.floor(s.getHours() / 6);
    if (!days.has(day)) days.set(day, [null, null, null, null]);
    const cells = days.get(day);
    const c = cells[slot];
    cells[slot] = c ? {
      free: Math.min(c.free, b.free), capacity: Math.max(c.capacity, b.capacity), guaranteed: Math.max(c.guaranteed, b.guaranteed),
      reserved: Math.max(c.reserved, b.reserved), maintenance: Math.max(c.maintenance, b.maintenance), hours: c.hours + 1,
    } : { ...b, hours: 1 };
  }
  return h('table', { class: 'calendar' },
    h('caption', {}, `Free ${flavor} GPUs per 6 hours, in ${TZ}`),
    h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Day'),
      [0, 1, 2, 3].map((i) => h('th', { scope: 'col' }, fmtHour.format(new Date(2000, 0, 1, i * 6)))))),
    h('tbody', {}, [...days.entries()].map(([day, cells]) => h('tr', {},
      h('th', { scope: 'row' }, fmtDay.format(new Date(day))),
      cells.map((b, slot) => {
        const d = new Date(day);
        const from = new Date(d.getFullYear(), d.getMonth(), d.getDate(), slot * 6);
        if (!b) return h('td', { class: 'slot none', 'data-start': from.toISOString() }, '–');
        const share = b.capacity > 0 ? Math.max(0, b.free) / b.capacity : 0;
        const label = `${fmtDateTime.format(from)}, ${b.hours} h: ${num(b.free)} free of ${num(b.capacity)} throughout; ` +
          `guaranteed ${num(b.guaranteed)}, reserved up to ${num(b.reserved)}, maintenance up to ${num(b.maintenance)}`;
        return h('td', { class: 'slot', title: label, 'aria-label': label, 'data-start': from.toISOString(),
          style: `background:rgba(22,163,74,${(0.08 + 0.6 * share).toFixed(2)})` },
        h('strong', {}, num(b.free, 1)), b.reserved > 0 ? h('span', { class: 'res' }, ` R${num(b.reserved, 1)}`) : null);
      })))));
}

function buildReserveForm(form, tenants, flavors, onDone) {
  const tenant = select('tenant', tenants.map((t) => t.name), S.me.tenant || (tenants[0] || {}).name);
  const flavor = select('flavor', flavors, flavors[0]);
  const gpus = h('input', { name: 'gpus', type: 'number', min: '1', value: '1', required: true });
  const soon = new Date(Math.ceil(Date.now() / 3600e3) * 3600e3 + 3600e3);
  const start = h('input', { name: 'start', type: 'datetime-local', required: true, value: localInput(soon) });
  const hours = h('input', { name: 'hours', type: 'number', min: '0.25', step: '0.25', value: '2', required: true });
  const maintenance = h('input', { name: 'maintenance', type: 'checkbox' });
  const out = h('p', { id: 'reserve-result', 'aria-live': 'polite' });
  const err = h('p', { class: 'form-error', role: 'alert' });
  const window_ = () => {
    const s = new Date(start.value);
    if (Number.isNaN(s.getTime())) throw new Error('Pick a start time.');
    return { s, e: new Date(s.getTime() + Number(hours.value) * 3600e3) };
  };
  const check = async () => {
    err.textContent = '';
    try {
      const { s, e } = window_();
      const a = await get(`/v1/availability?${qs({ flavor: flavor.value, start: s.toISOString(), end: e.toISOString() })}`);
      out.textContent = `${a.reservable_gpus} ${flavor.value} GPUs can be reserved from ${fmtDateTime.format(s)} to ${fmtDateTime.format(e)}.`;
    } catch (e) { err.textContent = e.message; }
  };
  const earliest = async () => {
    err.textContent = '';
    try {
      const a = await get(`/v1/availability?${qs({ flavor: flavor.value, gpus: gpus.value, duration_s: Math.round(Number(hours.value) * 3600) })}`);
      if (!a.earliest_start) { out.textContent = `${gpus.value} GPUs for that long never become free in the horizon.`; return; }
      const s = new Date(a.earliest_start);
      start.value = localInput(new Date(Math.ceil(s.getTime() / 60e3) * 60e3));
      out.textContent = `Earliest start: ${fmtDateTime.format(s)} (filled in above).`;
    } catch (e) { err.textContent = e.message; }
  };
  form.replaceChildren(
    h('h2', { id: 'reserve-title' }, 'Reserve capacity'),
    h('div', { class: 'grid' },
      isAdmin() ? field('Tenant', tenant) : null, field('GPU model', flavor), field('GPUs', gpus),
      field(`Start (${TZ})`, start), field('Hours', hours),
      isAdmin() ? h('div', { class: 'field check' }, maintenance, h('label', { for: 'maint' }, 'Maintenance window')) : null),
    h('div', { class: 'buttons' },
      h('button', { type: 'button', onclick: check }, 'Check availability'),
      h('button', { type: 'button', onclick: earliest }, 'Find earliest start'),
      h('button', { type: 'submit', class: 'primary' }, 'Reserve')),
    out, err);
  maintenance.id = 'maint';
  const submit = form.querySelector('button[type=submit]');
  form.onsubmit = async (ev) => {
    ev.preventDefault();
    if (submit.disabled) return;  // one booking per click, however fast the clicks
    err.textContent = '';
    submit.disabled = true;
    try {
      const { s, e } = window_();
      const body = { flavor: flavor.value, gpus: Number(gpus.value), start: s.toISOString(), end: e.toISOString() };
      if (maintenance.checked) body.maintenance = true;
      else body.tenant = isAdmin() ? tenant.value : S.me.tenant;
      const r = await api('POST', '/v1/reservations', body);
      out.textContent = `Reserved: reservation ${r.id}, ${num(r.gpus)} ${r.flavor} GPUs from ${fmtDateTime.format(new Date(r.start))} to ${fmtDateTime.format(new Date(r.end))}.`;
      say(out.textContent);
      onDone();
    } catch (e) {
      if (e.status !== -1) err.textContent = `Not reserved: ${e.message}`;
    } finally {
      submit.disabled = false;
    }
  };
}

// Costs: spend per period, stacked by kind, from the usage ledger.
const KIND_COLOURS = {
  guaranteed: '#2563eb', borrowed: '#f59e0b', dedicated: '#7c3aed', reserved: '#059669', reserved_idle: '#a7f3d0',
  on_demand: '#dc2626', infrastructure_failure: '#9ca3af',
};

function viewCosts(main) {
  const period = select('period', [['day', 'last 7 days, per day'], ['week', 'last 8 weeks, per week'], ['month', 'last 6 months, per month']], 'day');
  period.id = 'cost-period';
  const chart = h('div', { id: 'cost-chart' });
  const detail = h('div', { id: 'cost-table' });
  const csv = h('button', { type: 'button', onclick: () => download() }, 'Download CSV');
  main.append(heading(isAdmin() ? 'Costs of every tenant' : 'My costs'),
    h('div', { class: 'toolbar' }, field('Period', period), csv), chart, detail);
  period.addEventListener('change', () => tick(S.view));

  // Period boundaries at local midnights, built from calendar dates (never by adding 24 h, which
  // is wrong on days with a daylight-saving change).
  function buckets() {
    const now = new Date();
    const [y, m, d] = [now.getFullYear(), now.getMonth(), now.getDate()];
    const out = [];
    if (period.value === 'day') {
      for (let i = 6; i >= 0; --i) out.push([new Date(y, m, d - i), new Date(y, m, d - i + 1)]);
    } else if (period.value === 'week') {
      const monday = d - ((now.getDay() + 6) % 7);
      for (let i = 7; i >= 0; --i) out.push([new Date(y, m, monday - 7 * i), new Date(y, m, monday - 7 * i + 7)]);
    } else {
      for (let i = 5; i >= 0; --i) {
        out.push([new Date(now.getFullYear(), now.getMonth() - i, 1), new Date(now.getFullYear(), now.getMonth() - i + 1, 1)]);
      }
    }
    return out;
  }
  const label = ([s]) => (period.value === 'month'
    ? s.toLocaleDateString(undefined, { month: 'short', year: 'numeric' })
    : fmtDay.format(s));

  async function refresh() {
    const bs = buckets();
    const reports = await Promise.all(bs.map(([s, e]) =>
      get(`/v1/usage?${qs({ from: s.toISOString(), to: e.toISOString(), group_by: 'flavor,kind' })}`)));
    replace(chart, costChart(bs.map(label), reports));
    const whole = await get(`/v1/usage?${qs({ from: bs[0][0].toISOString(), to: bs[bs.length - 1][1].toISOString(), group_by: 'flavor,kind' })}`);
    // A flavor without a price: the priced part, and the report's warnings (accounting.md).
    const cost = whole.total.cost === 'unpriced'
      ? `${whole.total.priced_cost} priced (${(whole.warnings || []).join('; ')})` : whole.total.cost;
    replace(detail, table(`Whole period: ${cost} in total, ${num(whole.total.gpu_hours, 3)} GPU-hours`,
      ['Tenant', 'GPU model', 'Kind', 'GPU-hours', 'Cost'],
      whole.items.map((r) => ({ key: `${r.tenant}/${r.flavor}/${r.kind}`, cells: [r.tenant, r.flavor, r.kind, num(r.gpu_hours, 3), r.cost] })),
      'No usage in this period.'));
  }

  async function download() {
    const bs = buckets();
    try {
      const text = await api('GET', `/v1/usage?${qs({ from: bs[0][0].toISOString(), to: bs[bs.length - 1][1].toISOString(), group_by: 'flavor,kind', format: 'csv' })}`);
      const a = h('a', { href: URL.createObjectURL(new Blob([text], { type: 'text/csv' })), download: 'gpupool-usage.csv' });
      document.body.append(a);
      a.click();
      a.remove();
    } catch (e) { showError(`Could not download: ${e.message}`); }
  }
  return { every: 30000, refresh };
}

// Money for a chart label: whole units when large, two significant digits when tiny.
function money(x) {
  if (x >= 100) return x.toFixed(0);
  if (x >= 1 || x === 0) return x.toFixed(2);
  return x.toPrecision(2);
}

// A stacked bar chart in SVG: one bar per period, one colour per kind, with the total on top.
function costChart(labels, reports) {
  const NS = 'http://www.w3.org/2000/svg';
  const s = (tag, attrs, ...kids) => {
    const el = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
    for (const k of kids) el.append(k instanceof Node ? k : document.createTextNode(String(k)));
    return el;
  };
  // Unpriced usage has no cost to draw: the bars show what is priced.
  const totals = reports.map((r) => Number(r.total.priced_cost));
  const max = Math.max(...totals, 0);
  const scale = max > 0 ? max : 1;
  const W = 640, H = 220, left = 56, bottom = 40, top = 20;
  const bw = (W - left) / labels.length;
  const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', class: 'chart',
    'aria-label': `Cost per period: ${labels.map((l, i) => `${l} ${money(totals[i])}`).join(', ')}` });
  svg.append(s('line', { x1: left, y1: H - bottom, x2: W, y2: H - bottom, stroke: '#9ca3af' }));
  svg.append(s('text', { x: left - 6, y: top + 4, 'text-anchor': 'end', class: 'axis' }, money(max)));
  svg.append(s('text', { x: left - 6, y: H - bottom, 'text-anchor': 'end', class: 'axis' }, '0'));
  const kinds = new Set();
  reports.forEach((r, i) => {
    let y = H - bottom;
    const byKind = {};
    for (const row of r.items) byKind[row.kind] = (byKind[row.kind] || 0) + Number(row.priced_cost);
    for (const [kind, cost] of Object.entries(byKind)) {
      kinds.add(kind);
      const hgt = ((H - bottom - top) * cost) / scale;
      y -= hgt;
      svg.append(s('rect', { x: left + i * bw + 6, y, width: bw - 12, height: Math.max(hgt, 0), fill: KIND_COLOURS[kind] || '#6b7280' },
        s('title', {}, `${labels[i]}: ${kind} ${money(cost)}`)));
    }
    svg.append(s('text', { x: left + i * bw + bw / 2, y: H - bottom + 16, 'text-anchor': 'middle', class: 'axis' }, labels[i]));
    svg.append(s('text', { x: left + i * bw + bw / 2, y: Math.max(y - 4, 12), 'text-anchor': 'middle', class: 'value' }, money(totals[i])));
  });
  const legend = h('ul', { class: 'legend' }, [...kinds].map((k) =>
    h('li', {}, h('span', { class: 'swatch', style: `background:${KIND_COLOURS[k] || '#6b7280'}` }), k)));
  return [svg, kinds.size ? legend : h('p', { class: 'empty' }, 'No usage in this period.')];
}

// Cluster map (operators): nodes × GPUs × MIG slices, coloured by tenant, with node actions.
function viewCluster(main) {
  const summary = h('p', { id: 'cluster-summary' });
  const legend = h('ul', { class: 'legend', id: 'cluster-legend' });
  const map = h('div', { id: 'cluster-map', class: 'map' });
  main.append(heading('Cluster'), summary, legend, map);
  return {
    every: POLL_MS,
    async refresh() {
      const nodes = (await get('/v1/nodes?detail=devices')).items.filter((n) => n.condition !== 'retired');
      const byCondition = {};
      const tenants = new Set();
      for (const n of nodes) {
        byCondition[n.condition] = (byCondition[n.condition] || 0) + 1;
        for (const d of n.devices) for (const o of occupants(d)) if (o.tenant) tenants.add(o.tenant);
      }
      replace(summary, `${nodes.length} nodes: ${Object.entries(byCondition).map(([c, k]) => `${k} ${c}`).join(', ')}.`);
      replace(legend, [...[...tenants].sort().map((t) => h('li', {}, h('span', { class: 'swatch', style: `background:${tenantColour(t)}` }), t)),
        h('li', {}, h('span', { class: 'swatch free' }), 'free'), h('li', {}, h('span', { class: 'swatch sick' }), 'unhealthy')]);
      replace(map, nodes.length ? nodes.map(nodeRow) : h('p', { class: 'empty' }, 'No nodes have joined yet.'));
    },
  };
}

function occupants(d) {
  if (d.mode === 'whole') return d.occupant ? [d.occupant] : [];
  if (d.mode === 'mig') return d.slices.map((s) => s.occupant).filter(Boolean);
  return d.clients;
}

function who(o) {
  if (!o) return 'free';
  return o.tenant ? `${o.tenant} job ${o.job}` : 'another tenant';
}

function gpuCell(n, d) {
  const base = `${n.name} GPU ${d.index}${d.healthy ? '' : ` (unhealthy${d.health_reason ? `: ${d.health_reason}` : ''})`}`;
  if (d.mode === 'whole') {
    const label = `${base}: ${who(d.occupant)}`;
    return h('div', { class: `gpu${d.healthy ? '' : ' sick'}`, role: 'img', 'aria-label': label, title: label },
      h('span', { class: 'fill', style: d.occupant ? `background:${tenantColour(d.occupant.tenant)}` : '' }),
      h('span', { class: 'idx' }, d.index));
  }
  if (d.mode === 'mig') {
    const label = `${base}, MIG: ${d.slices.map((s) => `${s.profile} ${who(s.occupant)}`).join(', ') || 'no instances'}` +
      (d.mig_error ? `; the agent refused the new layout: ${d.mig_error}` : '');
    return h('div', { class: `gpu mig${d.healthy ? '' : ' sick'}${d.mig_error ? ' refused' : ''}`, role: 'img', 'aria-label': label, title: label },
      d.slices.map((s) => h('span', {
        class: `slice${s.occupant ? '' : ' free'}`,
        style: `grid-column:${s.start + 1} / span ${s.memory_slices};${s.occupant ? `background:${tenantColour(s.occupant.tenant)}` : ''}`,
        title: `${s.profile}: ${who(s.occupant)}`,
      })),
      h('span', { class: 'idx' }, d.index));
  }
  const used = d.clients.reduce((a, c) => a + c.milli, 0);
  const label = `${base}, shared: ${d.clients.map((c) => `${c.milli / 10}% ${who(c)}`).join(', ') || 'no clients'}; ${100 - used / 10}% free`;
  return h('div', { class: `gpu shared${d.healthy ? '' : ' sick'}`, role: 'img', 'aria-label': label, title: label },
    d.clients.map((c) => h('span', { class: 'share', style: `width:${c.milli / 10}%;background:${tenantColour(c.tenant)}` })),
    h('span', { class: 'idx' }, d.index));
}

function nodeRow(n) {
  const act = (action, text, cls) => h('button', {
    type: 'button', class: cls, 'data-key': `${action}-${n.name}`,
    onclick: () => nodeAction(n, action),
  }, text, h('span', { class: 'visually-hidden' }, ` ${n.name}`));
  return h('section', { class: 'node', 'aria-label': `node ${n.name}`, 'data-node': n.name },
    h('div', { class: 'node-head' },
      h('h2', {}, n.name), badge(n.condition),
      h('span', { class: 'muted' }, `${n.flavor} · ${n.block || 'no block'} · ${n.healthy_gpus}/${n.gpus} healthy`),
      h('span', { class: 'actions' },
        n.condition === 'ready' ? [act('cordon', 'Cordon'), act('drain', 'Drain', 'danger')]
          : n.condition === 'cordoned' ? [act('uncordon', 'Uncordon'), act('drain', 'Drain', 'danger')]
            : act('uncordon', 'Return to service'))),
    n.condition_reason ? h('p', { class: 'reason', 'data-key': `why-${n.name}` }, `Why ${n.condition}: ${n.condition_reason}`) : null,
    h('div', { class: 'gpus' }, n.devices.map((d) => gpuCell(n, d))));
}

async function nodeAction(n, action) {
  if (action === 'drain' && !confirm(`Drain ${n.name}? Its jobs are requeued.`)) return;
  try {
    const r = await api('POST', `/v1/nodes/${encodeURIComponent(n.name)}/${action}`);
    say(`${n.name} is now ${r.condition}${r.requeued_jobs ? `; ${r.requeued_jobs} jobs requeued` : ''}.`);
  } catch (e) {
    if (e.status !== -1) showError(`Could not ${action} ${n.name}: ${e.message}`);
    return;
  }
  if (S.view && S.view.name === 'cluster') tick(S.view);  // redraw now, if still on the map
}

// Audit log: who did what, newest first.
function viewAudit(main) {
  const box = h('div', { id: 'audit' });
  main.append(heading('Audit log'), box);
  const pages = pagedList('/v1/audit');
  let loading = false;
  let drawn = '';
  const draw = () => {
    const items = pages.list();
    const text = JSON.stringify([items, pages.hasMore(), loading]);
    if (text === drawn) return;
    drawn = text;
    replace(box, table(`${items.length} ${items.length === 1 ? 'entry' : 'entries'}, newest first${pages.hasMore() ? '; older ones under Load more' : ''}`,
      ['When', 'Who', 'Tenant', 'Action', 'Object', 'From'],
      items.map((a) => ({ key: a.id, cells: [when(a.at_ms), a.principal, a.tenant || '', a.action, a.object, a.remote] })),
      'Nothing has happened yet.'),
    pages.hasMore() ? loadMoreButton('audit entries', loading, loadMore) : null);
  };
  // The next older page; the focus moves to its first row, and the count is announced.
  async function loadMore() {
    if (loading) return;
    loading = true;
    draw();
    let got = null;
    try {
      got = await pages.loadMore({});
    } catch (e) {
      failed(e);
    } finally {
      loading = false;
    }
    if (!box.isConnected) return;
    draw();
    if (got === null) return;
    say(got.length ? `Loaded ${got.length} older ${got.length === 1 ? 'entry' : 'entries'}.` : 'No older entries.');
    const row = got.length ? box.querySelector(`tr[data-row="${CSS.escape(got[0].id)}"]`) : null;
    if (row) { row.tabIndex = -1; row.focus(); }
  }
  return {
    every: 5000,
    async refresh() {
      if (await pages.refresh({}) !== null) draw();
    },
  };
}

const VIEW_FNS = {
  overview: viewOverview, tenants: viewTenants, jobs: viewJobs, calendar: viewCalendar, costs: viewCosts,
  cluster: viewCluster, audit: viewAudit,
};

// ---------------------------------------------------------------------------------------------
// Routing and live updates

// A request outside the polling loop failed: a refused token signs out, anything else shows.
function failed(e) {
  if (e.status === -1) return;  // an answer for a session that has ended
  if (e.status === 401) signOut('Your token is no longer accepted. Sign in again.');
  else showError(e.message);
}

function stopPolling() {
  clearTimeout(S.timer);
  S.timer = null;
  S.view = null;
}

// One refresh of `view`, then the next one is armed. A view has one chain of ticks: `busy`
// keeps a second one (from the tab becoming visible again) from starting beside it.
async function tick(view) {
  if (S.view !== view || view.busy) return;
  clearTimeout(S.timer);
  if (!document.hidden) {
    view.busy = true;
    try {
      await view.refresh();
      if (S.view !== view) return;
      showError('');
      $('#updated').textContent = `· updated ${fmtTime.format(new Date())}`;
      document.body.dataset.loaded = view.name;
    } catch (e) {
      if (S.view !== view) return;  // the user moved on (or signed out): not this view's error
      failed(e);
      if (e.status === 401) return;
    } finally {
      view.busy = false;
    }
  }
  if (S.view === view) S.timer = setTimeout(() => tick(view), view.every);
}

function route() {
  if (!S.me) return;
  const name = location.hash.replace(/^#\//, '');
  const known = views().find(([n]) => n === name);
  if (!known) {
    delete document.body.dataset.loaded;
    location.hash = `#/${views()[0][0]}`;
    return;
  }
  stopPolling();
  showError('');
  for (const a of document.querySelectorAll('#nav a')) {
    if (a.dataset.view === name) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  document.title = `${known[1]} · gpupool`;
  delete document.body.dataset.loaded;
  const main = $('#main');
  main.replaceChildren();
  const view = VIEW_FNS[name](main);
  view.name = name;
  S.view = view;
  $('#view-title')?.focus();
  tick(view);
}

window.addEventListener('hashchange', route);
document.addEventListener('visibilitychange', () => {
  if (!document.hidden && S.view) tick(S.view);  // at once, unless a refresh is already out
});

// A daemon with replicas (docs/design/daemon.md, "Replicas"): the console runs on the leader.
// A follower's /healthz names it, and the page moves there (the address bar says so); a token
// is kept per origin, so one signs in again on the leader. While no replica leads, it waits.
// Called at start and whenever the daemon cannot be reached or says it does not lead (a
// failover: the follower's 307 to another origin is refused by the page's policy).
async function toLeader() {
  let h;
  try {
    const r = await fetch('/healthz', { cache: 'no-store' });
    h = await r.json();
  } catch (e) {
    return 'here';
  }
  if (h.role !== 'follower') return 'here';
  if (!h.leader) {
    showError('No gpupool replica leads yet. Retrying.');
    return 'waiting';
  }
  const target = new URL(location.pathname + location.search + location.hash, h.leader);
  if (target.origin === location.origin) return 'here';
  showError(`This replica follows; opening the leader at ${h.leader}.`);
  location.replace(target.href);
  return 'moving';
}

document.addEventListener('DOMContentLoaded', async () => {
  $('#tz').textContent = `Times are shown in ${TZ}.`;
  $('#skip').addEventListener('click', (ev) => { ev.preventDefault(); $('#main').focus(); });
  for (let where; (where = await toLeader()) !== 'here';) {
    if (where === 'moving') return;
    await new Promise((done) => setTimeout(done, 1000));
  }
  showError('');
  // Back from the identity provider with a refusal: say why (the daemon put it in the fragment).
  const failed = location.hash.match(/^#login-error=(.*)$/);
  const loginError = failed ? `Single sign-on failed: ${decodeURIComponent(failed[1])}` : '';
  if (failed) history.replaceState(null, '', location.pathname);
  if (!S.token) {
    try {
      const r = await fetch('/v1/auth/session', { cache: 'no-store' });
      if (r.ok) S.csrf = (await r.json()).csrf_token;
    } catch (e) { /* no daemon: the sign-in page says so on submit */ }
  }
  if (!S.token && !S.csrf) { renderSignIn(loginError); return; }
  try {
    await signIn();
  } catch (e) {
    if (e.status === 401) signOut('Your token is no longer accepted. Sign in again.');
    else { renderSignIn(); showError(e.message); }
  }
});
