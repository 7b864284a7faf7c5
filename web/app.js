// provisiond web page: the node inventory, one node's facts, boot timeline,
// runs and health checks, and the profiles with their plans. Talks only to
// the provisiond that served it (same origin, /api/v1); nothing is fetched
// from anywhere else, so it works offline. Every API read needs a token: the
// page asks for one before it shows anything, keeps it in sessionStorage for
// this tab only and sends it with every request; the actions (power cycle,
// profile apply) are enabled only for an admin token. No framework: the node table is built as
// one HTML string per page of rows, so 10,000 nodes stay responsive. The charts are drawn by
// charts.js (inline SVG); the state chart is read once after the table and then follows the
// live updates.
'use strict';

const STATES = ['discovered', 'enrolled', 'booting', 'booted', 'configuring', 'ready', 'failed',
  'maintenance', 'retired'];
const PAGE = 500;                                  // rows rendered at once
const LIST_PAGE = 2000;                            // nodes per GET /nodes page
const ACCEL_VENDORS = { '10de': 'NVIDIA', '1002': 'AMD', '1022': 'AMD', '8086': 'Intel' };

const $ = (id) => document.getElementById(id);
const esc = (s) => String(s ?? '').replace(/[&<>"']/g,
  (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);

const TOKEN_KEY = 'provisiond-token';
const token = () => sessionStorage.getItem(TOKEN_KEY) || '';
const caller = { name: '', role: '' };  // whom the token names, from /status

class ApiError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

async function api(path, opts = {}) {
  const headers = { Accept: 'application/json' };
  if (token()) headers.Authorization = 'Bearer ' + token();
  if (opts.body !== undefined) headers['Content-Type'] = 'application/json';
  const r = await fetch('/api/v1' + path, {
    method: opts.method || 'GET', headers, cache: 'no-store',
    body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
  });
  const body = await r.json().catch(() => ({}));
  const error = new ApiError(r.status, body.error || `${path}: HTTP ${r.status}`);
  // The token was refused (wrong, or removed from the tokens file): back to
  // the sign-in form, whatever asked.
  if (r.status === 401) signOut(error.message);
  if (!r.ok) throw error;
  return body;
}

function showError(e) {
  const el = $('error');
  el.hidden = !e;
  el.textContent = e ? String(e.message || e) : '';
}

// Same rule as provisiond's hardware check (hardware_check.cc).
function accelerators(facts) {
  const pci = facts && Array.isArray(facts.pci) ? facts.pci : [];
  return pci.filter((d) => d && ACCEL_VENDORS[d.vendor_id] &&
    (/^(03|12)/.test(d.class || '') || d.class === '1180'));
}

function ago(ms) {
  if (!ms) return '';
  const s = Math.max(0, Math.round((Date.now() - ms) / 1000));
  if (s < 60) return s + ' s ago';
  if (s < 3600) return Math.round(s / 60) + ' min ago';
  if (s < 86400) return Math.round(s / 3600) + ' h ago';
  return new Date(ms).toISOString().slice(0, 16).replace('T', ' ');
}

const stateBadge = (s) => `<span class="state state-${esc(s)}">${esc(s)}</span>`;
const nodeName = (n) => n.hostname || n.mac;

// ---- the inventory model ------------------------------------------------------------------

const model = {
  nodes: new Map(),   // id -> node, with derived fields _key (search text), _accel, _html
  status: null,
  sort: { key: 'hostname', dir: 1 },
  page: 0,
  view: [],           // filtered, sorted nodes
  flash: new Set(),   // ids to highlight on the next render
};

function prepare(n) {
  const acc = accelerators(n.facts);
  n._accel = acc.map((d) => `${d.vendor_id}:${d.device_id} ${d.device || ''}`.trim()).join(', ');
  n._key = [n.hostname, n.mac, n.ip, n.profile, n.image, n._accel].join(' ').toLowerCase();
  n._html = null;
  return n;
}

function rowHtml(n) {
  if (n._html) return n._html;
  const name = nodeName(n);
  const reason = n.reason ? `<span class="reason">${esc(n.reason)}</span>` : '';
  n._html = `<td><a href="#node/${encodeURIComponent(name)}">${esc(n.hostname || '(' + n.mac + ')')}</a></td>` +
    `<td class="mono">${esc(n.mac)}</td><td class="mono">${esc(n.ip)}</td>` +
    `<td>${stateBadge(n.state)}${reason}</td><td>${esc(n.profile)}</td><td>${esc(n.image)}</td>` +
    `<td class="accel">${esc(n._accel)}</td>` +
    `<td title="${n.last_seen ? new Date(n.last_seen).toISOString() : ''}">${esc(ago(n.last_seen))}</td>` +
    `<td>${esc(n.stage)}</td>`;
  return n._html;
}

function compare(key) {
  if (key === 'last_seen') return (a, b) => (a.last_seen || 0) - (b.last_seen || 0);
  if (key === 'state') return (a, b) => STATES.indexOf(a.state) - STATES.indexOf(b.state);
  if (key === 'ip') {
    const num = (ip) => (ip || '').split('.').reduce((v, p) => v * 256 + (+p || 0), 0);
    return (a, b) => num(a.ip) - num(b.ip);
  }
  const field = key === 'accel' ? '_accel' : key;
  const coll = new Intl.Collator(undefined, { numeric: true });
  return (a, b) => coll.compare(a[field] || (key === 'hostname' ? a.mac : '') || '',
    b[field] || (key === 'hostname' ? b.mac : '') || '');
}

function computeView() {
  const text = $('filter').value.trim().toLowerCase();
  const state = $('state-filter').value;
  const out = [];
  for (const n of model.nodes.values()) {
    if (state && n.state !== state) continue;
    if (text && !n._key.includes(text)) continue;
    out.push(n);
  }
  const cmp = compare(model.sort.key);
  const dir = model.sort.dir;
  out.sort((a, b) => dir * cmp(a, b) || a.id - b.id);
  model.view = out;
}

function renderTable() {
  const pages = Math.max(1, Math.ceil(model.view.length / PAGE));
  model.page = Math.min(model.page, pages - 1);
  const start = model.page * PAGE;
  const rows = model.view.slice(start, start + PAGE);
  let html = '';
  for (const n of rows) {
    const cls = `state-${n.state}` + (model.flash.has(n.id) ? ' flash' : '');
    html += `<tr class="${cls}" data-node="${esc(nodeName(n))}">${rowHtml(n)}</tr>`;
  }
  model.flash.clear();
  document.querySelector('#nodes tbody').innerHTML = html ||
    '<tr><td colspan="9" class="muted">no nodes match</td></tr>';
  $('shown').textContent = model.view.length === 0 ? '0 nodes' :
    `${start + 1}–${start + rows.length} of ${model.view.length}` +
    (model.view.length !== model.nodes.size ? ` (${model.nodes.size} in all)` : '');
  $('prev').disabled = model.page === 0;
  $('next').disabled = model.page >= pages - 1;
  for (const th of document.querySelectorAll('#nodes th')) {
    th.classList.toggle('sorted-asc', th.dataset.key === model.sort.key && model.sort.dir > 0);
    th.classList.toggle('sorted-desc', th.dataset.key === model.sort.key && model.sort.dir < 0);
  }
}

function refreshTable() { computeView(); renderTable(); }

function renderCounts() {
  const st = model.status;
  if (!st) return;
  let html = `<button class="count total" data-state=""><b>${st.nodes}</b>nodes</button>`;
  for (const s of STATES)
    html += `<button class="count state-${s}" data-state="${s}" data-count="${st.states[s] || 0}">` +
      `<b>${st.states[s] || 0}</b>${s}</button>`;
  $('counts').innerHTML = html;
}

async function loadStatus() {
  model.status = await api('/status');
  renderCounts();
}

// The list comes in pages (GET /nodes?limit=&after=): the first load shows
// each page as it arrives; a reload swaps the whole list in at the end.
async function loadNodes() {
  const fresh = new Map();
  const progressive = !model.loaded;
  if (progressive) model.nodes = fresh;
  let after = '';
  do {
    const body = await api(`/nodes?limit=${LIST_PAGE}` + (after ? `&after=${encodeURIComponent(after)}` : ''));
    for (const n of body.nodes) fresh.set(n.id, prepare(n));
    after = body.next || '';
    if (progressive) {
      model.loaded = true;
      refreshTable();
    }
  } while (after);
  model.nodes = fresh;
  model.loaded = true;
  refreshTable();
}

// ---- live updates ---------------------------------------------------------------------

const live = { cursor: 0, running: false };

function setLive(ok, text) {
  const el = $('live');
  el.className = 'live ' + (ok ? 'on' : 'off');
  el.textContent = text;
}

async function applyEvents(events) {
  const names = new Set(events.filter((e) => e.node).map((e) => e.node));
  const tasks = [loadStatus()];
  // A few nodes: fetch just those; many (a profile apply): the whole list once.
  if (names.size > 20) {
    tasks.push(loadNodes());
  } else {
    for (const name of names)
      tasks.push(api('/nodes/' + encodeURIComponent(name)).then((n) => {
        model.nodes.set(n.id, prepare(n));
        model.flash.add(n.id);
      }, () => {
        // Renamed or deleted: drop whatever row carried that name.
        for (const [id, n] of model.nodes) if (n.hostname === name || n.mac === name) model.nodes.delete(id);
      }));
  }
  await Promise.all(tasks);
  if (model.loaded) refreshTable();
  liveStateChart();
  const route = currentRoute();
  if (route.view === 'node' && names.has(route.node)) renderNode(route.node, false);
  if (route.view === 'profiles' && events.some((e) => e.kind.startsWith('profile') || e.kind === 'released'))
    renderProfiles();
}

async function pollEvents() {
  if (live.running) return;
  live.running = true;
  while (token()) {
    try {
      const body = await api(`/events?after=${live.cursor}&wait=25&limit=1000`);
      setLive(true, 'live');
      if (body.events.length) await applyEvents(body.events);
      live.cursor = Math.max(live.cursor, body.next || 0);
    } catch (e) {
      if (!token()) break;
      setLive(false, 'disconnected, retrying');
      await new Promise((r) => setTimeout(r, 3000));
    }
  }
  live.running = false;
}

// ---- the overview's state chart (GET /api/v1/history/states, web/charts.js) --------------
// Read once, after the table is shown (so the first render is not held up), then moved on
// by the live updates with /status's counts, and once a minute for the time axis.

const HISTORY_POINTS = 180;  // over 6 hours, a point every 2 minutes
const stateHistory = { data: null, error: null, loading: false, asked: 0 };

// `again`: the window changed; an answer for the window asked before is dropped.
async function loadStateHistory(again = false) {
  if (!again && (stateHistory.loading || stateHistory.data)) return;
  const asked = ++stateHistory.asked;
  stateHistory.loading = true;
  let data = null, error = null;
  try {
    data = await api(`/history/states?hours=${$('history-hours').value}&points=${HISTORY_POINTS}`);
  } catch (e) {
    error = e;
  }
  if (asked !== stateHistory.asked) return;  // a later window, or signed out since
  Object.assign(stateHistory, { data, error, loading: false });
  liveStateChart();
}

// Today's counts (from the latest /status) as the chart's last point, when they are not
// older than the history read.
function liveStateChart() {
  const h = stateHistory.data;
  if (h && model.status && (model.status.last_event || 0) >= h.last_event) {
    Charts.advance(h, model.status.states);
    h.last_event = model.status.last_event || 0;
  }
  renderStateChart();
}

function renderStateChart() {
  const el = $('state-chart');
  if ($('view-overview').hidden || !token()) return;
  if (stateHistory.error) {
    el.innerHTML = `<p class="muted">nodes by state over time: ${esc(stateHistory.error.message)}</p>`;
  } else if (stateHistory.data) {
    el.className = '';
    el.innerHTML = Charts.states(stateHistory.data, $('state-history').clientWidth);
  } else {
    el.textContent = 'nodes by state over time: loading…';
  }
}

// ---- pages ----------------------------------------------------------------------------

function currentRoute() {
  const h = decodeURIComponent(location.hash.replace(/^#\/?/, ''));
  if (h.startsWith('node/')) return { view: 'node', node: h.slice(5) };
  if (h === 'profiles') return { view: 'profiles' };
  return { view: 'overview' };
}

function show(view) {
  for (const v of ['signin', 'overview', 'node', 'profiles']) $('view-' + v).hidden = v !== view;
  for (const a of document.querySelectorAll('nav a'))
    a.classList.toggle('active', a.dataset.nav === (view === 'node' ? 'overview' : view));
}

function factsHtml(n) {
  const f = n.facts || {};
  const rows = [];
  const add = (k, v) => { if (v !== undefined && v !== '' && v !== null) rows.push(`<dt>${esc(k)}</dt><dd>${v}</dd>`); };
  add('state', stateBadge(n.state) + (n.reason ? ` <span class="reason">${esc(n.reason)}</span>` : ''));
  add('MAC', `<span class="mono">${esc(n.mac)}</span>`);
  add('IP', `<span class="mono">${esc(n.ip)}</span>`);
  add('profile', esc(n.profile));
  add('image', n.installed ? 'none: it boots its own OS (adopted)' : esc(n.image));
  add('boot stage', esc(n.stage));
  add('last seen', esc(ago(n.last_seen)));
  if (f.cpu) add('CPU', esc(`${f.cpu.model || ''}${f.cpu.cores ? ` (${f.cpu.cores} cores)` : ''}`));
  if (f.memory_bytes) add('memory', esc((f.memory_bytes / 2 ** 30).toFixed(1) + ' GiB'));
  add('OS', f.os ? esc(f.os) : undefined);
  add('kernel', f.kernel ? esc(f.kernel) : undefined);
  const acc = accelerators(f);
  add('accelerators', acc.length ? acc.map((d) =>
    `<span class="mono">${esc(d.vendor_id + ':' + d.device_id)}</span> ${esc(ACCEL_VENDORS[d.vendor_id])} ${esc(d.device)}` +
    (d.driver ? ` <span class="muted">(${esc(d.driver)})</span>` : '')).join('<br>') : '<span class="muted">none</span>');
  if (f.storage && typeof f.storage === 'object') {
    add('storage', esc(f.storage.state || '') + (Array.isArray(f.storage.volumes) ? '<br>' +
      f.storage.volumes.map((v) => esc(`${v.name}: ${v.state}${v.mount ? ' at ' + v.mount : ''}` +
        `${v.uuid ? ' (UUID ' + v.uuid + ')' : ''}${v.reason ? ' — ' + v.reason : ''}`)).join('<br>') : ''));
  }
  let disks = '';
  if (Array.isArray(f.disks) && f.disks.length) {
    disks = '<h3>Disks</h3><table class="disks"><thead><tr><th>disk</th><th>by-id</th><th>transport</th>' +
      '<th>size</th><th>model</th><th>holds</th></tr></thead><tbody>' +
      f.disks.map((d) => `<tr><td class="mono">${esc(d.name)}</td>` +
        `<td class="mono">${esc((d.by_id || '').replace('/dev/disk/by-id/', ''))}</td><td>${esc(d.transport)}</td>` +
        `<td>${esc(d.size_bytes ? (d.size_bytes / 1e9).toFixed(d.size_bytes < 1e10 ? 1 : 0) + ' GB' : '')}</td>` +
        `<td>${esc(d.model)}</td><td>${esc(d.content)}${d.system ? ' (the system)' : ''}</td></tr>`).join('') +
      '</tbody></table>';
  }
  if (Array.isArray(f.nics)) add('NICs', f.nics.map((d) => esc(`${d.name} ${d.mac || ''}`)).join('<br>'));
  let pci = '';
  if (Array.isArray(f.pci) && f.pci.length) {
    pci = '<h3>PCI devices</h3><table class="pci"><thead><tr><th>slot</th><th>id</th><th>class</th><th>device</th><th>driver</th></tr></thead><tbody>' +
      f.pci.map((d) => `<tr><td class="mono">${esc(d.slot)}</td><td class="mono">${esc(d.vendor_id + ':' + d.device_id)}</td>` +
        `<td class="mono">${esc(d.class)}</td><td>${esc(d.vendor)} ${esc(d.device)}</td><td>${esc(d.driver)}</td></tr>`).join('') +
      '</tbody></table>';
  }
  return `<dl class="facts">${rows.join('')}</dl>${disks}${pci}` +
    `<details><summary>all facts (JSON)</summary><pre>${esc(JSON.stringify(f, null, 2))}</pre></details>`;
}

const clock = (ms) => (ms ? new Date(ms).toISOString().replace('T', ' ').slice(0, 19) : '');

function timelineHtml(why, state) {
  const steps = why.steps || [];
  const stopped = why.next_stage && !['booted', 'configuring', 'ready'].includes(state);
  let html = `<p class="summary" id="why-summary">${esc(why.summary)}</p><ol class="timeline">`;
  steps.forEach((s, i) => {
    const last = i === steps.length - 1;
    const cls = last && stopped ? (state === 'failed' || (why.errors || []).length ? 'failed' : 'stopped') : 'done';
    html += `<li class="${cls}" data-stage="${esc(s.stage)}"><span class="at">+${(s.after_ms / 1000).toFixed(1)} s</span>` +
      `<span class="stage">${esc(s.stage)}</span> <span class="clock mono" title="UTC">${esc(clock(s.time))}</span> ` +
      `<span class="muted">${esc(s.detail)}</span></li>`;
  });
  if (!steps.length) html += '<li class="pending">no boot seen yet</li>';
  if (stopped && why.next_stage)
    html += `<li class="pending"><span class="at"></span><span class="stage">${esc(why.next_stage)}</span> not reached</li>`;
  html += '</ol>';
  if ((why.errors || []).length)
    html += '<h3>errors</h3><ul>' + why.errors.map((e) => `<li class="error">${esc(e)}</li>`).join('') + '</ul>';
  if (why.image) html += `<p><span class="muted">image:</span> ${esc(why.image)}</p>`;
  if (why.kernel_cmdline) html += `<p><span class="muted">kernel command line:</span> <span class="mono">${esc(why.kernel_cmdline)}</span></p>`;
  return html;
}

function eventsHtml(events) {
  if (!events.length) return '<p class="muted">no events</p>';
  return '<table class="events"><thead><tr><th>time (UTC)</th><th>kind</th><th>detail</th><th>who</th></tr></thead><tbody>' +
    events.slice().reverse().map((e) => `<tr data-kind="${esc(e.kind)}"><td class="mono">${esc(clock(e.time))}</td>` +
      `<td>${esc(e.kind)}</td><td>${esc(e.detail)}</td><td>${esc(e.who)}</td></tr>`).join('') +
    '</tbody></table>';
}

// ---- runs and health checks (GET /api/v1/runs?node=, /api/v1/runs/<id>) -------------------
// Runs are listed when provisiond answers the route; a 404 (no such route or
// no run) or an empty list reads "no runs yet". A run is one node's run of a
// kind (configure, playbook, command) with its task results; the profile's
// health checks are tasks of playbook "health" named after the check.

const pick = (o, ...keys) => { for (const k of keys) if (o && o[k] !== undefined && o[k] !== null) return o[k]; return undefined; };
const runList = (body) => (Array.isArray(body) ? body : body.runs || []);
const runId = (r) => pick(r, 'id', 'run', 'run_id');
const runStatus = (r) => pick(r, 'status', 'result') || '';
const runStart = (r) => pick(r, 'started_ms', 'started');
const runEnd = (r) => pick(r, 'finished_ms', 'finished');
const statusClass = (s) => 'status-' + String(s).replace(/[^a-z]/g, '');

// The tasks of one node in a run: a flat task list (each with its node) or
// one entry per node holding its tasks.
function nodeTasks(run, node) {
  if (Array.isArray(run.tasks)) return run.tasks.filter((t) => !t.node || t.node === node.hostname || t.node === node.mac);
  if (Array.isArray(run.nodes)) {
    const mine = run.nodes.find((x) => x && (x.node === node.hostname || x.node === node.mac));
    return mine && Array.isArray(mine.tasks) ? mine.tasks : [];
  }
  return [];
}

function durationText(ms) {
  if (ms === undefined || ms === null || ms === '') return '';
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`;
}

function tasksHtml(tasks) {
  if (!tasks.length) return '<p class="muted">no task results recorded</p>';
  // A row names each playbook as its tasks begin, with the runner when it
  // was ansible-playbook ("site.yml (ansible-playbook)").
  let playbook = null;
  return '<table class="tasks"><thead><tr><th>task</th><th>module</th><th>status</th><th>exit</th><th>time</th><th>output</th></tr></thead><tbody>' +
    tasks.map((t) => {
      let head = '';
      if (t.playbook && t.playbook !== playbook) {
        playbook = t.playbook;
        head = '<tr class="playbook-row"><td colspan="6">' + (playbook === 'health' ? 'health checks'
          : `playbook <b class="mono">${esc(playbook)}</b>`) + '</td></tr>';
      }
      const status = pick(t, 'status', 'result') || '';
      const out = [pick(t, 'msg'), pick(t, 'stdout', 'stdout_tail'), pick(t, 'stderr', 'stderr_tail')]
        .filter((x) => x).join('\n');
      const where = pick(t, 'location', 'where');
      const name = pick(t, 'task', 'name') || '';
      const exit = pick(t, 'exit_code', 'rc');
      return head + `<tr class="${statusClass(status)}" data-task="${esc(name)}"><td>${esc(name)}` +
        (t.item ? ` <span class="mono">(${esc(t.item)})</span>` : '') +
        (where ? ` <span class="muted mono">${esc(where)}</span>` : '') + '</td>' +
        `<td class="mono">${esc(t.module)}</td><td><span class="result ${statusClass(status)}">${esc(status)}</span>` +
        `${t.changed && status !== 'changed' ? ' <span class="muted">changed</span>' : ''}</td>` +
        `<td class="mono">${exit === undefined || exit === -1 ? '' : esc(exit)}</td>` +
        `<td class="mono">${esc(durationText(pick(t, 'duration_ms')))}</td>` +
        `<td>${out ? `<details><summary>log</summary><pre class="log">${esc(out)}</pre></details>` : ''}</td></tr>`;
    }).join('') + '</tbody></table>';
}

async function runsFor(node) {
  let list;
  try {
    list = runList(await api('/runs?node=' + encodeURIComponent(nodeName(node))));
  } catch (e) {
    if (e.status === 404) return { runs: [], details: new Map() };
    throw e;
  }
  list = list.slice().sort((a, b) => (runStart(b) || 0) - (runStart(a) || 0) || (runId(b) || 0) - (runId(a) || 0));
  // The tasks of the newest few runs; older ones load on demand.
  const details = new Map();
  await Promise.all(list.slice(0, 3).map((r) => api('/runs/' + encodeURIComponent(runId(r)))
    .then((d) => details.set(String(runId(r)), d), () => {})));
  return { runs: list, details };
}

function runsHtml(node, runs) {
  if (!runs.runs.length) return '<p class="muted" id="no-runs">no runs yet</p>';
  return runs.runs.map((r, i) => {
    const id = String(runId(r));
    const d = runs.details.get(id);
    const status = runStatus(d || r);
    const what = [r.kind, pick(r, 'what', 'playbook')].filter((x) => x).join(' ');
    const counts = ['ok', 'changed', 'failed', 'skipped'].filter((k) => typeof r[k] === 'number')
      .map((k) => `${k} ${r[k]}`).join(', ');
    return `<details class="run" data-run="${esc(id)}"${i === 0 ? ' open' : ''}><summary>` +
      `run <b>${esc(id)}</b> <span class="result ${statusClass(status)}">${esc(status)}</span> ` +
      `${esc(what)} <span class="muted">${esc(clock(runStart(r)))}` +
      `${runEnd(r) ? ' → ' + esc(clock(runEnd(r))) : ''}${counts ? ' · ' + esc(counts) : ''}` +
      `${r.who ? ' · by ' + esc(r.who) : ''}</span>` +
      `${r.message ? ` <span class="run-message">${esc(r.message)}</span>` : ''}</summary>` +
      `<div class="run-tasks">${d ? tasksHtml(nodeTasks(d, node)) : '<p class="muted">loading…</p>'}</div></details>`;
  }).join('');
}

// The profile's health checks, each with its latest result from the runs
// (a task with the check's name), newest run first.
function healthHtml(node, profile, runs) {
  const checks = (profile && profile.health_checks) || [];
  if (!node.profile) return '<p class="muted">no profile assigned, so no health checks</p>';
  if (!profile) return '<p class="muted">profile ' + esc(node.profile) + ' could not be read</p>';
  if (!checks.length) return `<p class="muted">profile ${esc(node.profile)} has no health checks</p>`;
  // The node's kept health (its latest configure run or node check), else the runs shown.
  const kept = node.health && Array.isArray(node.health.checks) ? node.health : null;
  const latest = (name) => {
    const k = kept && kept.checks.find((x) => x.name === name);
    if (k) return k;
    for (const r of runs.runs) {
      const d = runs.details.get(String(runId(r)));
      const t = d && nodeTasks(d, node).find((x) => pick(x, 'task', 'name') === name &&
        (!x.playbook || x.playbook === 'health'));
      if (t) return t;
    }
    return null;
  };
  const head = kept ? `<p id="health-kept">checked ${esc(ago(kept.time))} (run ${esc(kept.run)}): ` +
    `<span class="result ${statusClass(kept.status)}">${esc(kept.status)}</span></p>` : '';
  return head + '<table class="health"><thead><tr><th>check</th><th>command</th><th>timeout</th><th>result</th></tr></thead><tbody>' +
    checks.map((c) => {
      const t = latest(c.name);
      const status = t ? pick(t, 'status', 'result') : '';
      return `<tr data-check="${esc(c.name)}"><td>${esc(c.name)}</td><td class="mono">${esc(c.command)}</td>` +
        `<td>${esc(c.timeout)} s</td><td>${t ? `<span class="result ${statusClass(status)}" title="${esc(t.detail || '')}">${esc(status)}</span>` : '<span class="muted">not run yet</span>'}</td></tr>`;
    }).join('') + '</tbody></table>';
}

// ---- the node's network console (GET /api/v1/nodes/{node}/console) ----------------------
// What the node printed as it booted (netconsole, the initrd's steps, the journal) and the
// stages provisiond served. Its box lives across the node page's live re-renders (each
// render moves it into place), so lines already shown are never fetched again; while the
// latest boot is shown it follows new lines with a long poll, as `node console --follow`
// does. An older boot (kept ones in the select) is shown as it was, without following.

const CONSOLE_SHOWN = 2000;  // lines kept in the page, the newest
let consoleView = null;      // { node, box, boot (0: the latest, followed), next, shownBoot }

function consoleLineHtml(l) {
  return `<span class="cl" data-id="${esc(l.id)}" data-source="${esc(l.source)}"><span class="muted">${esc(clock(l.time))}</span> ` +
    `<span class="src src-${esc(l.source)}">${esc(l.source)}</span> ${esc(l.text)}</span>\n`;
}

function consoleAppend(v, lines) {
  const pre = v.box.querySelector('pre.console');
  const atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
  let html = '';
  for (const l of lines) {
    if (l.boot !== v.shownBoot) {
      html += `<span class="boot-mark" data-boot="${esc(l.boot)}">── boot ${esc(l.boot)} ──</span>\n`;
      v.shownBoot = l.boot;
    }
    html += consoleLineHtml(l);
  }
  if (!html) return;
  pre.insertAdjacentHTML('beforeend', html);
  const all = pre.querySelectorAll('span.cl');
  for (let i = 0; i < all.length - CONSOLE_SHOWN; i++) all[i].remove();
  if (atEnd) pre.scrollTop = pre.scrollHeight;
}

function consoleStatus(v, text, cls = 'muted') {
  const el = v.box.querySelector('.console-state');
  el.className = 'console-state ' + cls;
  el.textContent = text;
}

function consoleBoots(v, boots) {
  const sel = v.box.querySelector('select.console-boot');
  const want = ['0', ...boots.slice().reverse().map(String)];
  if ([...sel.options].map((o) => o.value).join() === want.join()) return;
  sel.innerHTML = want.map((b) => `<option value="${b}">${b === '0' ? 'latest boot, live' : 'boot ' + esc(b)}</option>`).join('');
  sel.value = String(v.boot);
}

// The console box of `name`'s page: the one shown already, or a new one that starts reading.
function consoleBox(name) {
  if (consoleView && consoleView.node === name && token()) {
    if (!consoleView.running) readConsole(consoleView);  // its page was left, and is back
    return consoleView.box;
  }
  const box = document.createElement('div');
  box.id = 'node-console';
  box.innerHTML = '<p><label>boot <select class="console-boot"><option value="0">latest boot, live</option></select></label> ' +
    '<span class="console-state muted">loading…</span></p><pre class="console"></pre>';
  const v = consoleView = { node: name, box, boot: 0, next: 0, shownBoot: 0 };
  box.querySelector('select.console-boot').addEventListener('change', (e) => {
    Object.assign(v, { boot: Number(e.target.value), next: 0, shownBoot: 0, asked: (v.asked || 0) + 1 });
    box.querySelector('pre.console').innerHTML = '';
    readConsole(v);
  });
  readConsole(v);
  return box;
}

// Reads the shown boot; for the latest one, then waits for more while this box is shown.
async function readConsole(v) {
  const asked = v.asked || 0;
  const q = encodeURIComponent(v.node);
  const current = () => consoleView === v && (v.asked || 0) === asked && token() &&
    currentRoute().node === v.node;
  v.running = true;
  try {
    await followConsole(v, q, current);
  } finally {
    if ((v.asked || 0) === asked) v.running = false;
  }
}

async function followConsole(v, q, current) {
  let wait = 0;
  while (current()) {
    let body;
    try {
      body = await api(`/nodes/${q}/console?boot=${v.boot}&after=${v.next}&wait=${wait}`);
    } catch (e) {
      if (!current()) return;
      consoleStatus(v, e.message, 'error');
      await new Promise((r) => setTimeout(r, 3000));
      continue;
    }
    if (!current()) return;
    if (!body.enabled) return consoleStatus(v, 'the network console is off (console.listen)');
    consoleAppend(v, body.lines);
    v.next = body.next;
    consoleBoots(v, body.boots || []);
    const count = v.box.querySelectorAll('pre.console span.cl').length;
    if (v.boot !== 0) return consoleStatus(v, `boot ${v.boot}: ${count} lines`);
    consoleStatus(v, count ? `boot ${body.boot}: ${count} lines, following` : 'nothing received yet, following', 'following');
    wait = 25;
  }
}

// ---- actions (need a token) ----------------------------------------------------------

function actionButton(id, label, data = '') {
  return `<button type="button" class="action" id="${id}" ${data}>${esc(label)}</button>`;
}

function updateAuthUi() {
  const admin = caller.role === 'admin';
  document.body.classList.toggle('can-write', admin);
  $('token-state').textContent = token() && caller.name ? `${caller.name} (${caller.role})` : 'signed out';
  $('sign-out').hidden = !token();
  for (const b of document.querySelectorAll('button.action')) {
    b.disabled = !admin;
    b.title = admin ? '' : 'needs an admin token';
  }
}

// Forgets the token and shows the sign-in form (with `why` when there is one);
// the inventory already shown is dropped with the views.
function signOut(why) {
  sessionStorage.removeItem(TOKEN_KEY);
  caller.name = caller.role = '';
  model.nodes.clear();
  model.loaded = false;
  consoleView = null;
  $('view-node').innerHTML = '';
  $('view-profiles').innerHTML = '';
  $('nodes').querySelector('tbody').innerHTML = '';
  $('counts').innerHTML = '';
  Object.assign(stateHistory, { data: null, error: null, loading: false });
  stateHistory.asked++;  // an answer on its way is dropped
  $('state-chart').innerHTML = '';
  $('error').hidden = true;
  $('signin-error').hidden = !why;
  $('signin-error').textContent = why || '';
  setLive(false, 'signed out');
  updateAuthUi();
  show('signin');
}

// Shows an action's answer: a line saying what happened, and the whole JSON
// answer folded under it.
function showResult(what, ok, text, body) {
  const el = $('action-result');
  el.hidden = false;
  el.className = 'action-result ' + (ok ? 'ok' : 'failed');
  el.innerHTML = `<button type="button" class="close" aria-label="close">×</button><b>${esc(what)}</b>: ${esc(text)}` +
    (body ? `<details><summary>answer (JSON)</summary><pre>${esc(JSON.stringify(body, null, 2))}</pre></details>` : '');
}

async function act(what, path, body, summary) {
  showResult(what, true, 'sending…');
  try {
    const r = await api(path, { method: 'POST', body, write: true });
    showResult(what, true, '200 OK: ' + summary(r), r);
    return r;
  } catch (e) {
    showResult(what, false, `${e.status ? 'HTTP ' + e.status + ': ' : ''}${e.message}`);
    return null;
  }
}

async function powerCycle(name) {
  if (!window.confirm(`Power cycle ${name}? It reboots now.`)) return;
  await act(`power cycle ${name}`, `/nodes/${encodeURIComponent(name)}/power`, { action: 'cycle' },
    (r) => r.result);
}

async function applyProfile(version) {
  if (!window.confirm(`Apply profile ${version}? Its nodes move to it.`)) return;
  const summary = (p) => `${p.version} applied (sha256 ${String(p.sha256).slice(0, 12)}), ` +
    `${(p.nodes || []).length} node(s) in its plan` + ((p.nodes || []).length ? ': ' +
      p.nodes.map((n) => `${n.node} ${n.action}`).join(', ') : '');
  if (await act(`apply profile ${version}`, `/profiles/${encodeURIComponent(version)}/apply`, {}, summary) &&
      currentRoute().view === 'profiles') await renderProfiles(version);
}

// ---- pages ---------------------------------------------------------------------------

async function renderNode(name, loading = true) {
  const el = $('view-node');
  if (loading) el.innerHTML = `<h2>${esc(name)}</h2><p class="muted">loading…</p>`;
  const q = encodeURIComponent(name);
  try {
    const [n, why, ev, boots] = await Promise.all([api('/nodes/' + q), api(`/nodes/${q}/why`),
      api(`/events?node=${q}&last=50`), api(`/nodes/${q}/boots?count=2`).catch((e) => ({ error: e }))]);
    const [runs, profile] = await Promise.all([
      runsFor(n).catch((e) => ({ runs: [], details: new Map(), error: e })),
      n.profile ? api('/profiles/' + encodeURIComponent(n.profile)).catch(() => null) : null]);
    if (currentRoute().node !== name) return;
    // Keep what the operator opened (runs, logs) across live re-renders.
    const open = new Set([...el.querySelectorAll('details[open][data-run]')].map((d) => d.dataset.run));
    el.innerHTML = `<p><a href="#">← all nodes</a></p><h2>${esc(nodeName(n))} ${stateBadge(n.state)}</h2>` +
      `<div class="actions">${actionButton('power-cycle', 'power cycle', `data-node="${esc(nodeName(n))}"`)}</div>` +
      `<div class="grid"><div id="node-facts"><h3>facts</h3>${factsHtml(n)}</div>` +
      `<div id="node-timeline"><h3>boot timeline</h3>${timelineHtml(why, n.state)}</div></div>` +
      `<h3>boot stages: this boot and the one before</h3><div id="node-waterfall" class="chart-box">` +
      `${boots.error ? `<p class="error">${esc(boots.error.message)}</p>` : Charts.waterfall(boots, el.clientWidth)}</div>` +
      `<h3>console</h3><div id="node-console-slot"></div>` +
      `<h3>runs</h3><div id="node-runs">${runs.error ? `<p class="error">${esc(runs.error.message)}</p>` : runsHtml(n, runs)}</div>` +
      `<h3>health checks</h3><div id="node-health">${healthHtml(n, profile, runs)}</div>` +
      `<h3>events (last 50)</h3><div id="node-events">${eventsHtml(ev.events)}</div>`;
    if (!loading) for (const d of el.querySelectorAll('details[data-run]')) d.open = open.has(d.dataset.run);
    $('node-console-slot').replaceWith(consoleBox(name));
    el.dataset.node = name;
    updateAuthUi();
  } catch (e) {
    el.innerHTML = `<p><a href="#">← all nodes</a></p><h2>${esc(name)}</h2><p class="error">${esc(e.message)}</p>`;
  }
}

async function loadRun(details) {
  const box = details.querySelector('.run-tasks');
  if (!box || !box.querySelector('.muted')) return;
  try {
    const d = await api('/runs/' + encodeURIComponent(details.dataset.run));
    const n = await api('/nodes/' + encodeURIComponent($('view-node').dataset.node));
    box.innerHTML = tasksHtml(nodeTasks(d, n));
  } catch (e) { box.innerHTML = `<p class="error">${esc(e.message)}</p>`; }
}

// Live events re-render this page while the operator clicks: the plan shown is always the
// version clicked last (model.planVersion), never the one current when a render began.
async function renderProfiles(planVersion) {
  if (planVersion) model.planVersion = planVersion;
  const el = $('view-profiles');
  if (!el.querySelector('table.profiles')) el.innerHTML = '<h2>Profiles</h2><p class="muted">loading…</p>';
  try {
    const body = await api('/profiles');
    const applied = body.history.length ? body.history[body.history.length - 1] : null;
    let html = '<h2>Profiles</h2>';
    html += applied
      ? `<p id="applied">applied: <b>${esc(applied.version)}</b> <span class="mono" title="sha256 of the profile when it was applied">${esc(applied.sha256)}</span> <span class="muted">by ${esc(applied.who)}, ${esc(ago(applied.time))}</span></p>`
      : '<p id="applied" class="muted">no profile applied yet</p>';
    if (body.errors.length) html += '<ul>' + body.errors.map((e) => `<li class="error">${esc(e)}</li>`).join('') + '</ul>';
    html += '<table class="profiles"><thead><tr><th>version</th><th>description</th><th>image</th><th>nodes</th><th>sha256</th><th></th><th></th></tr></thead><tbody>';
    for (const p of body.profiles) {
      const badge = p.applied ? (p.applied_sha256_matches ? '<span class="badge">applied</span>'
        : '<span class="badge warn" title="the file changed since it was applied">applied, changed since</span>') : '';
      html += `<tr data-version="${esc(p.version)}"${p.applied ? ' class="applied"' : ''}><td><b>${esc(p.version)}</b></td><td>${esc(p.description)}</td><td>${esc(p.image)}</td>` +
        `<td class="mono">${esc(p.nodes)}</td><td class="mono" title="${esc(p.sha256)}">${esc(p.sha256.slice(0, 12))}</td><td>${badge}</td>` +
        `<td>${actionButton('apply-' + esc(p.version), 'apply', `data-apply="${esc(p.version)}"`)}</td></tr>`;
    }
    html += '</tbody></table><div id="plan"><p class="muted">click a version to see its plan against today</p></div>';
    if (currentRoute().view !== 'profiles') return;
    el.innerHTML = html;
    updateAuthUi();
    if (model.planVersion) await renderPlan(model.planVersion);
  } catch (e) {
    el.innerHTML = `<h2>Profiles</h2><p class="error">${esc(e.message)}</p>`;
  }
}

async function renderPlan(version) {
  model.planVersion = version;
  for (const tr of document.querySelectorAll('table.profiles tbody tr'))
    tr.classList.toggle('selected', tr.dataset.version === version);
  const el = $('plan');
  el.innerHTML = `<h3>plan of ${esc(version)}</h3><p class="muted">loading…</p>`;
  try {
    const p = await api('/profiles/' + encodeURIComponent(version) + '/plan');
    if (model.planVersion !== version || !el.isConnected) return;  // a later click or render took over
    let html = `<h3>plan of ${esc(version)}</h3><p id="plan-summary">` +
      `${p.changes ? 'applying it changes these nodes:' : 'applying it changes nothing'}` +
      ` <span class="muted">(today: ${p.current_version ? esc(p.current_version) + ' <span class="mono">' + esc((p.current_sha256 || '').slice(0, 12)) + '</span>' : 'no profile applied'})</span></p>`;
    const nodes = p.nodes || [];
    if (nodes.length) {
      html += '<table class="plan"><thead><tr><th>node</th><th>state</th><th>action</th><th>profile</th><th>image</th><th>playbooks</th><th>reboot</th><th>why</th></tr></thead><tbody>' +
        nodes.map((n) => `<tr data-node="${esc(n.node)}"><td>${esc(n.node)}</td><td>${stateBadge(n.state)}</td><td><b>${esc(n.action)}</b></td>` +
          `<td>${esc(n.from_profile)} → ${esc(n.to_profile ?? version)}</td><td>${esc(n.from_image)} → ${esc(n.to_image)}</td>` +
          `<td>${esc((n.playbooks || []).join(', '))}</td><td>${n.reboot ? 'yes' : ''}</td><td>${esc((n.reasons || []).join('; '))}</td></tr>`).join('') +
        '</tbody></table>';
    } else {
      html += '<p class="muted">no node is covered by this version</p>';
    }
    html += `<details><summary>plan (JSON)</summary><pre>${esc(JSON.stringify(p, null, 2))}</pre></details>`;
    el.innerHTML = html;
  } catch (e) {
    if (model.planVersion !== version || !el.isConnected) return;
    el.innerHTML = `<h3>plan of ${esc(version)}</h3><p class="error">${esc(e.message)}</p>`;
  }
}

async function route() {
  if (!token()) return show('signin');
  const r = currentRoute();
  show(r.view);
  if (r.view === 'node') return renderNode(r.node);
  if (r.view === 'profiles') return renderProfiles();
  if (!model.loaded) {
    try {
      await loadNodes();
      showError(null);
    } catch (e) { showError(e); }
  }
  if (stateHistory.data || stateHistory.error) renderStateChart(); else loadStateHistory();
}

// ---- wiring ---------------------------------------------------------------------------

function debounce(fn, ms) {
  let t = 0;
  return () => { clearTimeout(t); t = setTimeout(fn, ms); };
}

function init() {
  const sel = $('state-filter');
  for (const s of STATES) sel.insertAdjacentHTML('beforeend', `<option value="${s}">${s}</option>`);
  const refilter = () => { model.page = 0; refreshTable(); };
  $('filter').addEventListener('input', debounce(refilter, 80));
  sel.addEventListener('change', refilter);
  $('counts').addEventListener('click', (e) => {
    const b = e.target.closest('.count');
    if (b) { sel.value = b.dataset.state; refilter(); }
  });
  document.querySelector('#nodes thead').addEventListener('click', (e) => {
    const th = e.target.closest('th');
    if (!th) return;
    const key = th.dataset.key;
    model.sort = { key, dir: model.sort.key === key ? -model.sort.dir : 1 };
    refreshTable();
  });
  $('prev').addEventListener('click', () => { model.page--; renderTable(); });
  $('next').addEventListener('click', () => { model.page++; renderTable(); });
  $('view-profiles').addEventListener('click', (e) => {
    const apply = e.target.closest('button[data-apply]');
    if (apply) { applyProfile(apply.dataset.apply); return; }
    const tr = e.target.closest('table.profiles tbody tr');
    if (tr) renderPlan(tr.dataset.version);
  });
  $('view-node').addEventListener('click', (e) => {
    const b = e.target.closest('#power-cycle');
    if (b) powerCycle(b.dataset.node);
  });
  $('view-node').addEventListener('toggle', (e) => {
    if (e.target.matches && e.target.matches('details[data-run]') && e.target.open) loadRun(e.target);
  }, true);
  $('action-result').addEventListener('click', (e) => {
    if (e.target.closest('.close')) $('action-result').hidden = true;
  });
  $('signin-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const t = $('signin-token').value.trim();
    $('signin-token').value = '';
    if (!t) return;
    sessionStorage.setItem(TOKEN_KEY, t);
    start();
  });
  $('sign-out').addEventListener('click', () => signOut(''));
  window.addEventListener('hashchange', route);
  window.addEventListener('resize', debounce(renderStateChart, 150));
  $('history-hours').addEventListener('change', () => loadStateHistory(true));
  setInterval(() => { if (!$('view-overview').hidden) liveStateChart(); }, 60000);
  if (token()) start(); else signOut('');
}

// With a token: /status says whom it names (a 401 signs out again), then the
// live updates and the page the address asks for. The cursor comes from
// /status, read before the node list, so no event between the two reads is
// lost (it only causes one redundant refresh).
async function start() {
  try {
    await loadStatus();
  } catch (e) {
    if (token()) showError(e);
    return;
  }
  caller.name = model.status.caller.name;
  caller.role = model.status.caller.role;
  $('signin-error').hidden = true;
  updateAuthUi();
  live.cursor = model.status.last_event || 0;
  pollEvents();
  route();
}

init();
