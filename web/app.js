// provisiond web page: the node inventory, one node's boot timeline and the
// profiles. Read-only; talks only to the provisiond that served it (same
// origin, /api/v1). No framework: the node table is built as one HTML string
// per page of rows, so 10,000 nodes stay responsive.
'use strict';

const STATES = ['discovered', 'enrolled', 'booting', 'booted', 'configuring', 'ready', 'failed',
  'maintenance', 'retired'];
const PAGE = 500;                                  // rows rendered at once
const ACCEL_VENDORS = { '10de': 'NVIDIA', '1002': 'AMD', '1022': 'AMD', '8086': 'Intel' };

const $ = (id) => document.getElementById(id);
const esc = (s) => String(s ?? '').replace(/[&<>"']/g,
  (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);

async function api(path) {
  const r = await fetch('/api/v1' + path, { headers: { Accept: 'application/json' } });
  const body = await r.json().catch(() => ({}));
  if (!r.ok) throw new Error(body.error || `${path}: HTTP ${r.status}`);
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
  n._key = [n.hostname, n.mac, n.ip, n.profile].join(' ').toLowerCase();
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

async function loadNodes() {
  const body = await api('/nodes');
  model.nodes.clear();
  for (const n of body.nodes) model.nodes.set(n.id, prepare(n));
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
  const route = currentRoute();
  if (route.view === 'node' && names.has(route.node)) renderNode(route.node, false);
}

async function pollEvents() {
  if (live.running) return;
  live.running = true;
  for (;;) {
    try {
      const body = await api(`/events?after=${live.cursor}&wait=25&limit=1000`);
      setLive(true, 'live');
      if (body.events.length) await applyEvents(body.events);
      live.cursor = Math.max(live.cursor, body.next || 0);
    } catch (e) {
      setLive(false, 'disconnected, retrying');
      await new Promise((r) => setTimeout(r, 3000));
    }
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
  for (const v of ['overview', 'node', 'profiles']) $('view-' + v).hidden = v !== view;
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
  add('profile', esc(n.profile)); add('image', esc(n.image)); add('boot stage', esc(n.stage));
  add('last seen', esc(ago(n.last_seen)));
  if (f.cpu) add('CPU', esc(`${f.cpu.model || ''}${f.cpu.cores ? ` (${f.cpu.cores} cores)` : ''}`));
  if (f.memory_bytes) add('memory', esc((f.memory_bytes / 2 ** 30).toFixed(1) + ' GiB'));
  add('OS', f.os ? esc(f.os) : undefined);
  add('kernel', f.kernel ? esc(f.kernel) : undefined);
  const acc = accelerators(f);
  add('accelerators', acc.length ? acc.map((d) =>
    `<span class="mono">${esc(d.vendor_id + ':' + d.device_id)}</span> ${esc(ACCEL_VENDORS[d.vendor_id])} ${esc(d.device)}` +
    (d.driver ? ` <span class="muted">(${esc(d.driver)})</span>` : '')).join('<br>') : '<span class="muted">none</span>');
  if (Array.isArray(f.disks)) add('disks', f.disks.map((d) =>
    esc(`${d.name} ${d.model || ''} ${d.bytes ? (d.bytes / 1e9).toFixed(0) + ' GB' : ''}`)).join('<br>'));
  if (Array.isArray(f.nics)) add('NICs', f.nics.map((d) => esc(`${d.name} ${d.mac || ''}`)).join('<br>'));
  let pci = '';
  if (Array.isArray(f.pci) && f.pci.length) {
    pci = '<h3>PCI devices</h3><table class="pci"><thead><tr><th>slot</th><th>id</th><th>class</th><th>device</th><th>driver</th></tr></thead><tbody>' +
      f.pci.map((d) => `<tr><td class="mono">${esc(d.slot)}</td><td class="mono">${esc(d.vendor_id + ':' + d.device_id)}</td>` +
        `<td class="mono">${esc(d.class)}</td><td>${esc(d.vendor)} ${esc(d.device)}</td><td>${esc(d.driver)}</td></tr>`).join('') +
      '</tbody></table>';
  }
  return `<dl class="facts">${rows.join('')}</dl>${pci}` +
    `<details><summary>all facts (JSON)</summary><pre>${esc(JSON.stringify(f, null, 2))}</pre></details>`;
}

function timelineHtml(why, state) {
  const steps = why.steps || [];
  const stopped = why.next_stage && !['booted', 'configuring', 'ready'].includes(state);
  let html = `<p class="summary" id="why-summary">${esc(why.summary)}</p><ol class="timeline">`;
  steps.forEach((s, i) => {
    const last = i === steps.length - 1;
    const cls = last && stopped ? (state === 'failed' || (why.errors || []).length ? 'failed' : 'stopped') : 'done';
    html += `<li class="${cls}" data-stage="${esc(s.stage)}"><span class="at">+${(s.after_ms / 1000).toFixed(1)} s</span>` +
      `<span class="stage">${esc(s.stage)}</span> <span class="muted">${esc(s.detail)}</span></li>`;
  });
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
  return '<table class="events"><thead><tr><th>time</th><th>kind</th><th>detail</th><th>who</th></tr></thead><tbody>' +
    events.slice().reverse().map((e) => `<tr><td class="mono">${esc(new Date(e.time).toISOString().replace('T', ' ').slice(0, 19))}</td>` +
      `<td>${esc(e.kind)}</td><td>${esc(e.detail)}</td><td>${esc(e.who)}</td></tr>`).join('') +
    '</tbody></table>';
}

async function renderNode(name, loading = true) {
  const el = $('view-node');
  if (loading) el.innerHTML = `<h2>${esc(name)}</h2><p class="muted">loading…</p>`;
  const q = encodeURIComponent(name);
  try {
    const [n, why, ev] = await Promise.all([api('/nodes/' + q), api(`/nodes/${q}/why`),
      api(`/events?node=${q}&last=50`)]);
    if (currentRoute().node !== name) return;
    el.innerHTML = `<p><a href="#">← all nodes</a></p><h2>${esc(nodeName(n))} ${stateBadge(n.state)}</h2>` +
      `<div class="grid"><div id="node-facts"><h3>facts</h3>${factsHtml(n)}</div>` +
      `<div id="node-timeline"><h3>boot timeline</h3>${timelineHtml(why, n.state)}</div></div>` +
      `<h3>events (last 50)</h3><div id="node-events">${eventsHtml(ev.events)}</div>`;
  } catch (e) {
    el.innerHTML = `<p><a href="#">← all nodes</a></p><h2>${esc(name)}</h2><p class="error">${esc(e.message)}</p>`;
  }
}

async function renderProfiles() {
  const el = $('view-profiles');
  el.innerHTML = '<h2>Profiles</h2><p class="muted">loading…</p>';
  try {
    const body = await api('/profiles');
    const applied = body.history.length ? body.history[body.history.length - 1] : null;
    let html = '<h2>Profiles</h2>';
    html += applied
      ? `<p>applied: <b>${esc(applied.version)}</b> <span class="mono">${esc(applied.sha256)}</span> <span class="muted">by ${esc(applied.who)}, ${esc(ago(applied.time))}</span></p>`
      : '<p class="muted">no profile applied yet</p>';
    if (body.errors.length) html += '<ul>' + body.errors.map((e) => `<li class="error">${esc(e)}</li>`).join('') + '</ul>';
    html += '<table class="profiles"><thead><tr><th>version</th><th>description</th><th>image</th><th>nodes</th><th>sha256</th><th></th></tr></thead><tbody>';
    for (const p of body.profiles) {
      const badge = p.applied ? (p.applied_sha256_matches ? '<span class="badge">applied</span>'
        : '<span class="badge warn" title="the file changed since it was applied">applied, changed since</span>') : '';
      html += `<tr data-version="${esc(p.version)}"><td><b>${esc(p.version)}</b></td><td>${esc(p.description)}</td><td>${esc(p.image)}</td>` +
        `<td class="mono">${esc(p.nodes)}</td><td class="mono" title="${esc(p.sha256)}">${esc(p.sha256.slice(0, 12))}</td><td>${badge}</td></tr>`;
    }
    html += '</tbody></table><div id="plan"><p class="muted">click a version to see its plan</p></div>';
    el.innerHTML = html;
  } catch (e) {
    el.innerHTML = `<h2>Profiles</h2><p class="error">${esc(e.message)}</p>`;
  }
}

async function renderPlan(version) {
  for (const tr of document.querySelectorAll('table.profiles tr'))
    tr.classList.toggle('selected', tr.dataset.version === version);
  const el = $('plan');
  el.innerHTML = `<h3>plan of ${esc(version)}</h3><p class="muted">loading…</p>`;
  try {
    const p = await api('/profiles/' + encodeURIComponent(version) + '/plan');
    let html = `<h3>plan of ${esc(version)}</h3><p>${p.changes ? 'applying it changes these nodes:' : 'nothing changes'}` +
      (p.current_version ? ` <span class="muted">(current: ${esc(p.current_version)})</span>` : '') + '</p>';
    const nodes = p.nodes || [];
    if (nodes.length) {
      html += '<table class="plan"><thead><tr><th>node</th><th>state</th><th>action</th><th>profile</th><th>image</th><th>playbooks</th><th>reboot</th><th>why</th></tr></thead><tbody>' +
        nodes.map((n) => `<tr><td>${esc(n.node)}</td><td>${stateBadge(n.state)}</td><td><b>${esc(n.action)}</b></td>` +
          `<td>${esc(n.from_profile)} → ${esc(n.to_profile ?? version)}</td><td>${esc(n.from_image)} → ${esc(n.to_image)}</td>` +
          `<td>${esc((n.playbooks || []).join(', '))}</td><td>${n.reboot ? 'yes' : ''}</td><td>${esc((n.reasons || []).join('; '))}</td></tr>`).join('') +
        '</tbody></table>';
    }
    html += `<details><summary>plan (JSON)</summary><pre>${esc(JSON.stringify(p, null, 2))}</pre></details>`;
    el.innerHTML = html;
  } catch (e) {
    el.innerHTML = `<h3>plan of ${esc(version)}</h3><p class="error">${esc(e.message)}</p>`;
  }
}

async function route() {
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
    const tr = e.target.closest('table.profiles tbody tr');
    if (tr) renderPlan(tr.dataset.version);
  });
  window.addEventListener('hashchange', route);
  // The cursor comes from /status, read before the node list, so no event
  // between the two reads is lost (it only causes one redundant refresh).
  loadStatus().then(() => {
    live.cursor = model.status.last_event || 0;
    pollEvents();
  }, showError).finally(route);
}

init();
