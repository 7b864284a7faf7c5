// Driver of web_render_bench.sh: loads the web page in Debian's Chromium
// (playwright-core from tests/web/node_modules) from each server in turn and
// measures how long the node table takes to show its first rows.
//
//   SERVERS='[{"name":"provisiond","url":"http://..."},...]' LOADS=5 COUNT=10000 \
//     CHROMIUM=/usr/bin/chromium node web_render_bench.js  > results.json
//
// Per load: a new browser context (empty cache, no cookies or storage), a
// navigation to the server's /, and from the page's own clock
// (performance.now(), 0 at navigation start):
//   first_render_ms  the first animation frame after the first node row was
//                    added to the table (a MutationObserver installed before
//                    the page's script runs notes the row, the frame is when
//                    the browser paints it)
//   nodes_json_ms    when the last byte of the first page of GET /api/v1/nodes arrived
//   nodes_bytes      its size as transferred
// The servers alternate, and which goes first alternates per round; one
// warm-up load per server is not counted. Each load checks that the page
// shows 1–500 of COUNT nodes, so a broken page is not measured as fast.
'use strict';
const path = require('path');
const { chromium } = require(path.join(__dirname, '../web/node_modules/playwright-core'));

const SERVERS = JSON.parse(process.env.SERVERS);
const LOADS = Number(process.env.LOADS || 5);
const COUNT = Number(process.env.COUNT || 10000);
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const TOKEN = process.env.TOKEN || '';

const OBSERVE = () => {
  const mo = new MutationObserver(() => {
    if (!document.querySelector('#nodes tbody tr[data-node]')) return;
    mo.disconnect();
    window.__rowsAt = performance.now();
    requestAnimationFrame(() => { window.__firstRender = performance.now(); });
  });
  mo.observe(document, { childList: true, subtree: true });
};

async function load(browser, server) {
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  await context.route('**/*', (route) =>
    (route.request().url().startsWith(server.url) ? route.continue() : route.abort()));
  await context.addInitScript(OBSERVE);
  // Signed in already, as an operator's tab is (the token in sessionStorage).
  await context.addInitScript((t) => sessionStorage.setItem('provisiond-token', t), TOKEN);
  const page = await context.newPage();
  try {
    await page.goto(server.url + '/', { waitUntil: 'commit' });
    await page.waitForFunction(() => window.__firstRender !== undefined, null, { timeout: 120000 });
    await page.waitForFunction((n) => document.getElementById('shown').textContent === `1–500 of ${n}`,
      COUNT, { timeout: 120000 });
    return await page.evaluate(() => {
      // The list's first page (the page asks for it in pages: GET /api/v1/nodes?limit=&after=).
      const e = performance.getEntriesByType('resource').find((r) => new URL(r.name).pathname === '/api/v1/nodes');
      return { first_render_ms: window.__firstRender, rows_added_ms: window.__rowsAt,
        nodes_json_ms: e ? e.responseEnd : null, nodes_bytes: e ? e.encodedBodySize : null };
    });
  } finally {
    await context.close();
  }
}

const median = (xs) => {
  const s = xs.slice().sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

(async () => {
  const browser = await chromium.launch({
    executablePath: CHROMIUM, headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-dev-shm-usage',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const version = browser.version();
  const runs = Object.fromEntries(SERVERS.map((s) => [s.name, []]));
  try {
    for (const s of SERVERS) await load(browser, s);  // warm-up
    for (let i = 0; i < LOADS; i++) {
      const order = i % 2 ? SERVERS.slice().reverse() : SERVERS;
      for (const s of order) {
        const r = await load(browser, s);
        runs[s.name].push(r);
        process.stderr.write(`round ${i + 1} ${s.name}: first render ${r.first_render_ms.toFixed(0)} ms, ` +
          `nodes JSON at ${r.nodes_json_ms.toFixed(0)} ms (${r.nodes_bytes} bytes)\n`);
      }
    }
  } finally {
    await browser.close();
  }
  const out = { loads: LOADS, nodes: COUNT, chromium: version, servers: {} };
  for (const s of SERVERS) {
    const r = runs[s.name];
    out.servers[s.name] = {
      url: s.url,
      median_first_render_ms: median(r.map((x) => x.first_render_ms)),
      median_nodes_json_ms: median(r.map((x) => x.nodes_json_ms)),
      median_render_after_json_ms: median(r.map((x) => x.first_render_ms - x.nodes_json_ms)),
      runs: r,
    };
  }
  console.log(JSON.stringify(out, null, 2));
})().catch((e) => { console.error('web_render_bench: ' + (e && e.message ? e.message : e)); process.exit(1); });
