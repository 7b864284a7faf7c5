// provisiond web page: the two charts, drawn as inline SVG by the page itself
// (no library, nothing fetched): a node's boot waterfall (this boot and the
// one before, stage by stage, from GET /api/v1/nodes/<node>/boots) and the
// overview's nodes by state over the last hours (GET /api/v1/history/states,
// kept live by app.js). Each function takes the API's answer and a width in
// pixels and returns markup; app.js puts it in place.
'use strict';

const Charts = (() => {
  const esc = (s) => String(s ?? '').replace(/[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
  const secs = (ms) => (ms / 1000).toFixed(1) + ' s';
  const utc = (ms) => new Date(ms).toISOString().replace('T', ' ').slice(0, 19) + ' UTC';
  const hhmm = (ms) => new Date(ms).toISOString().slice(11, 16);

  // A tick step of 1, 2 or 5 times a power of ten giving at most `most` ticks up to `max`.
  function niceStep(max, most) {
    const raw = Math.max(max, 1e-9) / Math.max(most, 1);
    const p = 10 ** Math.floor(Math.log10(raw));
    return [1, 2, 5, 10].map((m) => m * p).find((s) => s >= raw);
  }

  // How two boots compare on one stage: slower or faster by more than half a
  // second and a quarter of its time, else about the same.
  function change(now, before) {
    const d = now - before;
    if (Math.abs(d) < 500 || Math.abs(d) < 0.25 * Math.max(now, before)) return { cls: 'same', text: '≈ same' };
    return d > 0 ? { cls: 'slower', text: `▲ ${secs(d)} slower` } : { cls: 'faster', text: `▼ ${secs(-d)} faster` };
  }

  // The waterfall: one row per stage either boot passed (in the order of the
  // node's path), a bar per boot from its previous stage's time to this
  // stage's, the time since the boot's first stage at the bar's end, and on
  // the right how this boot's stage compares with the previous boot's.
  function waterfall(data, width) {
    const boots = (data.boots || []).slice(0, 2);
    if (!boots.length) return '<p class="muted" id="waterfall-none">no boot seen yet</p>';
    const names = ['now', 'before'];
    const label = { now: 'this boot', before: 'previous boot' };
    // A row per stage; a stage seen again in the same boot (iPXE's own DHCP after its
    // binary loaded) gets a row of its own just after the stage before it.
    const order = data.stages || [];
    const rank = new Map(order.map((st, i) => [st, i]));
    const steps = boots.map((b) => {
      const m = new Map();
      b.steps.forEach((s, i) => {
        let key = s.stage;
        if (m.has(key)) {
          key = s.stage === 'dhcp' ? 'dhcp (iPXE)' : `${s.stage} (again)`;
          const prev = i ? b.steps[i - 1].stage : '';
          if (!rank.has(key)) rank.set(key, (rank.has(prev) ? rank.get(prev) : order.length) + 0.5);
        }
        if (!rank.has(key)) rank.set(key, order.length + rank.size);
        m.set(key, s);
      });
      return m;
    });
    const rows = [...new Set(steps.flatMap((m) => [...m.keys()]))].sort((a, b) => rank.get(a) - rank.get(b));
    const total = Math.max(...boots.map((b) => b.steps[b.steps.length - 1].after_ms), 1000);
    const W = Math.max(520, Math.min(width || 900, 1100));
    const left = 100, right = 130, top = 10, rowH = 32, axisH = 40;
    const plot = W - left - right - 56;  // room for the last bar's time label
    const step = niceStep(total, Math.max(2, Math.floor(plot / 70)));
    const span = Math.ceil(total / step) * step;
    const x = (ms) => left + (ms / span) * plot;
    const H = top + rows.length * rowH + axisH;
    let svg = '';
    // Grid and axis.
    for (let t = 0; t <= span + 1e-6; t += step) {
      svg += `<line class="grid" x1="${x(t)}" x2="${x(t)}" y1="${top}" y2="${H - axisH}"/>` +
        `<text class="tick" x="${x(t)}" y="${H - axisH + 14}" text-anchor="middle">${esc(+(t / 1000).toFixed(2))}</text>`;
    }
    svg += `<text class="axis-title" x="${left + plot / 2}" y="${H - 6}" text-anchor="middle">seconds from the boot's first stage</text>`;
    rows.forEach((st, i) => {
      const y = top + i * rowH;
      if (i % 2) svg += `<rect class="band" x="0" y="${y}" width="${W}" height="${rowH}"/>`;
      svg += `<text class="stage-label" data-stage="${esc(st)}" x="${left - 8}" y="${y + rowH / 2 + 4}" text-anchor="end">${esc(st)}</text>`;
      boots.forEach((b, k) => {
        const s = steps[k].get(st);
        if (!s) return;  // a stage this boot did not pass: no bar
        const by = y + 4 + k * 13;
        const x0 = x(s.after_ms - s.took_ms), x1 = x(s.after_ms);
        const title = `${st}, ${label[names[k]]}: ${secs(s.took_ms)}` +
          (s.took_ms ? ` (from +${secs(s.after_ms - s.took_ms)} to +${secs(s.after_ms)})` : ' (its first stage)') +
          (s.detail ? ` — ${s.detail}` : '');
        svg += `<rect class="bar bar-${names[k]}" data-boot="${names[k]}" data-stage="${esc(st)}" x="${x0.toFixed(1)}" y="${by}" ` +
          `width="${Math.max(2, x1 - x0).toFixed(1)}" height="10"><title>${esc(title)}</title></rect>` +
          `<text class="bar-time" x="${(Math.max(x1, x0 + 2) + 4).toFixed(1)}" y="${by + 9}">+${secs(s.after_ms)}</text>`;
      });
      const a = steps[0].get(st), b = steps[1] && steps[1].get(st);
      if (a && b && (a.took_ms || b.took_ms)) {
        const c = change(a.took_ms, b.took_ms);
        svg += `<text class="change ${c.cls}" data-stage="${esc(st)}" x="${W - right + 8}" y="${y + rowH / 2 + 4}">${esc(c.text)}</text>`;
      }
    });
    const start = (b) => `${utc(b.start)}, ${b.complete ? 'phoned home' : 'reached ' + b.last_stage} after ` +
      secs(b.steps[b.steps.length - 1].after_ms);
    const legend = boots.map((b, k) => `<span class="key"><i class="swatch bar-${names[k]}"></i>${label[names[k]]}: ` +
      `<span class="muted">${esc(start(b))}</span></span>`).join('') +
      (boots.length < 2 ? '<span class="key muted">no earlier boot recorded</span>' : '');
    const slower = boots.length < 2 ? [] : rows.filter((st) => {
      const a = steps[0].get(st), b = steps[1].get(st);
      return a && b && change(a.took_ms, b.took_ms).cls === 'slower';
    });
    const desc = `This boot: ${start(boots[0])}.` + (boots[1] ? ` Previous boot: ${start(boots[1])}.` : '') +
      (boots[1] ? (slower.length ? ` Slower this time: ${slower.join(', ')}.` : ' No stage got slower.') : '');
    return `<div class="legend">${legend}</div>` +
      `<svg class="chart waterfall" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" role="img" aria-labelledby="waterfall-title waterfall-desc">` +
      `<title id="waterfall-title">Boot stages of ${esc(data.node)}: this boot and the previous one</title>` +
      `<desc id="waterfall-desc">${esc(desc)}</desc>${svg}</svg>`;
  }

  // Which way up the states are stacked: the settled ones at the bottom.
  const STACK = ['ready', 'configuring', 'booted', 'booting', 'enrolled', 'discovered', 'failed', 'maintenance', 'retired'];

  const pointTime = (h, k, n) => (k === n ? h.until : h.since + k * h.step_ms);

  // Nodes by state over the window, stacked areas; the last point is now.
  // `h` is the API's answer (since, until, step_ms, order, states: arrays of
  // counts), possibly moved on by app.js's live updates.
  function states(h, width, now = Date.now()) {
    const order = STACK.filter((s) => h.states[s]).concat((h.order || []).filter((s) => !STACK.includes(s) && h.states[s]));
    if (!order.length) return '<p class="muted">no counts</p>';
    const n = h.states[order[0]].length - 1;
    const totals = [];
    for (let k = 0; k <= n; k++) totals.push(order.reduce((t, s) => t + h.states[s][k], 0));
    const shown = order.filter((s) => h.states[s].some((v) => v > 0));
    const W = Math.max(420, Math.min(width || 900, 1600));
    const H = 196, left = 52, right = 16, top = 22, bottom = 40;
    const plotW = W - left - right, plotH = H - top - bottom;
    const t0 = h.since, t1 = Math.max(h.until, t0 + 1);
    const x = (t) => left + ((t - t0) / (t1 - t0)) * plotW;
    const max = Math.max(1, ...totals);
    const ystep = Math.max(1, niceStep(max, 4));
    const ymax = Math.ceil(max / ystep) * ystep;
    const y = (v) => top + plotH - (v / ymax) * plotH;
    let svg = '';
    for (let v = 0; v <= ymax; v += ystep)
      svg += `<line class="grid" x1="${left}" x2="${W - right}" y1="${y(v)}" y2="${y(v)}"/>` +
        `<text class="tick" x="${left - 6}" y="${y(v) + 4}" text-anchor="end">${v.toLocaleString('en')}</text>`;
    svg += `<text class="axis-title" x="${left - 6}" y="${top - 10}" text-anchor="end">nodes</text>`;
    // Time ticks: whole hours (or minutes, for short windows) before now,
    // at least 80 pixels apart so their labels never touch.
    const hours = (t1 - t0) / 3600e3;
    const unit = hours >= 48 ? 86400e3 : hours >= 2 ? 3600e3 : 60e3;
    const unitName = { 86400000: 'd', 3600000: 'h', 60000: 'min' }[unit];
    const units = (t1 - t0) / unit;
    let every = niceStep(units, Math.max(1, Math.floor(plotW / 80)));
    every = Math.max(1, Math.round(every));
    for (let i = 0; i * every * unit <= t1 - t0 + 1; i++) {
      const t = t1 - i * every * unit;
      if (t < t0) break;
      const name = i === 0 ? 'now' : `${i * every} ${unitName} ago`;
      const anchor = i === 0 ? 'end' : x(t) - left < 30 ? 'start' : 'middle';
      svg += `<line class="tick-mark" x1="${x(t)}" x2="${x(t)}" y1="${top + plotH}" y2="${top + plotH + 4}"/>` +
        `<text class="tick" x="${x(t)}" y="${top + plotH + 16}" text-anchor="${anchor}">${name}<title>${esc(hhmm(t))} UTC</title></text>`;
    }
    const span = Math.round(hours) === 1 ? 'hour' : Math.round(hours) % 24 === 0 && hours >= 48
      ? `${Math.round(hours / 24)} days` : `${+hours.toFixed(1)} hours`;
    const range = hours >= 24 ? `${utc(t0).slice(0, 16)} to ${utc(t1).slice(0, 16)} UTC` : `${hhmm(t0)}–${hhmm(t1)} UTC`;
    svg += `<text class="axis-title" x="${left + plotW / 2}" y="${H - 4}" text-anchor="middle">` +
      `the last ${esc(span)}, ${esc(range)}</text>`;
    // The areas, bottom up.
    const below = new Array(n + 1).fill(0);
    for (const s of order) {
      const vals = h.states[s];
      if (!vals.some((v) => v > 0)) continue;
      let upper = '', lower = '';
      for (let k = 0; k <= n; k++) upper += `${k ? 'L' : 'M'}${x(pointTime(h, k, n)).toFixed(1)},${y(below[k] + vals[k]).toFixed(1)}`;
      for (let k = n; k >= 0; k--) lower += `L${x(pointTime(h, k, n)).toFixed(1)},${y(below[k]).toFixed(1)}`;
      svg += `<path class="area state-${esc(s)}" data-state="${esc(s)}" d="${upper}${lower}Z"><title>${esc(s)}</title></path>`;
      for (let k = 0; k <= n; k++) below[k] += vals[k];
    }
    // Before complete_since the events were not all read: shaded and said.
    if (h.complete_since > t0 + h.step_ms / 2) {
      const xe = x(Math.min(h.complete_since, t1));
      svg += `<rect class="unknown" x="${left}" y="${top}" width="${(xe - left).toFixed(1)}" height="${plotH}">` +
        `<title>before ${esc(utc(h.complete_since))} not every change was read (older events pruned, or more than the route reads)</title></rect>`;
    }
    // One hover column per point: its time and the counts then.
    const cols = [];
    for (let k = 0; k <= n; k++) {
      const t = pointTime(h, k, n);
      const xa = k === 0 ? left : (x(pointTime(h, k - 1, n)) + x(t)) / 2;
      const xb = k === n ? W - right : (x(t) + x(pointTime(h, k + 1, n))) / 2;
      const parts = order.filter((s) => h.states[s][k] > 0).map((s) => `${s} ${h.states[s][k]}`);
      const when = k === n ? `now (${utc(t)})` : `${utc(t)} (${Math.round((now - t) / 60e3)} min ago)`;
      cols.push(`<rect class="col" data-k="${k}" data-t="${Math.round(t)}" x="${xa.toFixed(1)}" y="${top}" width="${Math.max(0.5, xb - xa).toFixed(1)}" height="${plotH}">` +
        `<title>${esc(when)}: ${esc(parts.join(', ') || 'no nodes')} (${totals[k]} in all)</title></rect>`);
    }
    svg += cols.join('');
    const latest = Object.fromEntries(order.map((s) => [s, h.states[s][n]]));
    const legend = shown.map((s) => `<span class="key" data-state="${esc(s)}"><i class="swatch state-${esc(s)}"></i>${esc(s)} ` +
      `<b>${h.states[s][n]}</b></span>`).join('') || '<span class="key muted">no nodes</span>';
    const desc = `Nodes by state from ${utc(t0)} to now: now ` +
      (Object.entries(latest).filter(([, v]) => v > 0).map(([s, v]) => `${s} ${v}`).join(', ') || 'none') +
      `; at most ${max} nodes.`;
    return `<svg class="chart states" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" role="img" aria-labelledby="states-title states-desc">` +
      `<title id="states-title">Nodes by state over the last ${esc(span)}</title><desc id="states-desc">${esc(desc)}</desc>` +
      `${svg}</svg><div class="legend">${legend}</div>`;
  }

  // Moves a state history on to `now` with today's counts: a point per
  // step_ms that passed (each holding the counts known then), the oldest
  // dropped, the last one now.
  function advance(h, counts, now = Date.now()) {
    const order = Object.keys(h.states);
    const n = h.states[order[0]].length - 1;
    let rolls = 0;
    while (now >= h.since + (n + 1) * h.step_ms && rolls++ <= n) {
      for (const s of order) { h.states[s].push(h.states[s][n]); h.states[s].shift(); }
      h.since += h.step_ms;
    }
    if (rolls > n) h.since = now - n * h.step_ms;  // away for longer than the window
    for (const s of order) h.states[s][n] = (counts && counts[s]) || 0;
    h.until = Math.max(now, h.since + n * h.step_ms);
    return h;
  }

  return { waterfall, states, advance };
})();
