// Browser test of the provisiond web page: Playwright (playwright-core, no
// bundled browser) driving Debian's Chromium against a running provisiond
// that web_test.sh started and seeded.
//
//   MODE=states URL=... TOKEN=... OUT=dir node web_test.js   nodes in every state
//   MODE=big    URL=... OUT=dir COUNT=10000 node web_test.js  10,000 nodes + render timing
//
// Prints "ok: ..." per check, "FAIL: ..." and exits 1 on the first failure.
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { execFileSync } = require('child_process');
const { chromium } = require('playwright-core');

const URL_ = process.env.URL;
const TOKEN = process.env.TOKEN || '';
const MODE = process.env.MODE || 'states';
const OUT = process.env.OUT || fs.mkdtempSync(path.join(os.tmpdir(), 'web-test-out.'));
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const T = 15000;

function ok(what) { console.log('ok: ' + what); }
function check(cond, what, detail) {
  if (!cond) throw new Error(what + (detail !== undefined ? ': got ' + JSON.stringify(detail) : ''));
  ok(what);
}

async function launch() {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'web-test-chromium.'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 1400, height: 900 },
  });
  // Nothing but the provisiond under test may be reached.
  await context.route('**/*', (route) =>
    route.request().url().startsWith(URL_) ? route.continue() : route.abort());
  return { context, profile };
}

async function shot(page, name) {
  const file = path.join(OUT, name + '.png');
  await page.screenshot({ path: file, fullPage: true });
  console.log('screenshot: ' + file);
}

const rowNames = (page) =>
  page.$$eval('#nodes tbody tr[data-node]', (trs) => trs.map((tr) => tr.dataset.node));

async function waitRows(page, n, what) {
  await page.waitForFunction((n) => document.querySelectorAll('#nodes tbody tr[data-node]').length === n,
    n, { timeout: T }).catch(async () => { throw new Error(`${what}: expected ${n} rows, got ${(await rowNames(page)).length}`); });
  ok(what);
}

async function testStates(page) {
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(URL_ + '/');
  await waitRows(page, 9, 'the table shows the 9 seeded nodes');

  // Counts by state: one node in each, 9 in all.
  await page.waitForSelector('#counts .count.total');
  const counts = await page.$$eval('#counts .count[data-count]',
    (bs) => Object.fromEntries(bs.map((b) => [b.dataset.state, b.dataset.count])));
  for (const s of ['discovered', 'enrolled', 'booting', 'booted', 'configuring', 'ready', 'failed',
    'maintenance', 'retired'])
    check(counts[s] === '1', `count of ${s} is 1`, counts[s]);
  check((await page.textContent('#counts .count.total')).includes('9'), 'total count is 9');

  // Table content, state colours as a class per state.
  const row = (n) => page.locator(`#nodes tbody tr[data-node="${n}"]`);
  const gpu05 = await row('gpu05').innerText();
  for (const want of ['gpu05', '52:54:00:10:00:05', '10.20.0.15', 'ready', 'v0.2', 'lab', '8086:56a0', 'Arc A770', 'hello'])
    check(gpu05.includes(want), `gpu05's row shows ${want}`, gpu05);
  check(!gpu05.includes('125c'), 'the Ethernet controller is not an accelerator', gpu05);
  check((await row('gpu03').innerText()).includes('10de:2684'), "gpu03's row shows its NVIDIA GPU");
  check(!(await row('gpu03').innerText()).includes('22ba'), 'the NVIDIA audio function is not listed');
  check(await row('gpu05').evaluate((tr) => tr.classList.contains('state-ready')), 'ready row has class state-ready');
  check(await row('gpu06').evaluate((tr) => tr.classList.contains('state-failed')), 'failed row has class state-failed');
  const badge = await row('gpu06').locator('.state').evaluate((el) => getComputedStyle(el).backgroundColor);
  const readyBadge = await row('gpu05').locator('.state').evaluate((el) => getComputedStyle(el).backgroundColor);
  check(badge !== readyBadge, 'failed and ready badges have different colours', [badge, readyBadge]);
  check((await row('gpu06').innerText()).includes('initrd download timed out'), 'the failure reason is shown');
  check((await row('52:54:00:10:00:00').innerText()).includes('discovered'), 'the discovered node is listed by MAC');
  await shot(page, 'overview');

  // State filter.
  await page.selectOption('#state-filter', 'failed');
  await waitRows(page, 1, 'state filter "failed" leaves one row');
  check((await rowNames(page))[0] === 'gpu06', 'and it is gpu06');
  await page.selectOption('#state-filter', '');
  await waitRows(page, 9, 'clearing the state filter shows all again');

  // Text filter over hostname, MAC, IP, profile.
  await page.fill('#filter', '10.20.0.13');
  await waitRows(page, 1, 'text filter on an IP leaves one row');
  check((await rowNames(page))[0] === 'gpu03', 'and it is gpu03');
  await page.fill('#filter', '52:54:00:10:00:07');
  await waitRows(page, 1, 'text filter on a MAC leaves one row');
  await page.fill('#filter', 'v0.2');
  await waitRows(page, 3, 'text filter on profile v0.2 leaves three rows');
  await page.fill('#filter', '');
  await waitRows(page, 9, 'clearing the text filter shows all again');

  // Sorting: hostname ascending by default, clicking toggles; state by life cycle.
  let names = await rowNames(page);
  check(names.at(-1) === 'gpu08', 'sorted by hostname: gpu08 last', names);
  await page.click('#nodes th[data-key="hostname"]');
  await page.waitForFunction(() => document.querySelector('#nodes tbody tr').dataset.node === 'gpu08', null, { timeout: T });
  ok('clicking hostname sorts descending: gpu08 first');
  await page.click('#nodes th[data-key="state"]');
  await page.waitForFunction(() => document.querySelector('#nodes tbody tr').dataset.node === '52:54:00:10:00:00', null, { timeout: T });
  names = await rowNames(page);
  check(names.at(-1) === 'gpu08', 'sorted by state: discovered first, retired last', names);
  await page.click('#nodes th[data-key="ip"]');
  await page.click('#nodes th[data-key="ip"]');
  names = await rowNames(page);
  check(names[0] === 'gpu08', 'sorted by IP descending: gpu08 (10.20.0.18) first', names);
  await page.click('#nodes th[data-key="hostname"]');

  // Live: enroll a node over the API while the page is open.
  await page.evaluate(() => { window.__noReload = true; });
  execFileSync('curl', ['-sf', '-X', 'POST', '-H', 'Authorization: Bearer ' + TOKEN,
    '-H', 'Content-Type: application/json', '-d',
    JSON.stringify({ hostname: 'gpu09', mac: '52:54:00:10:00:09', ip: '10.20.0.19', profile: 'v0.1' }),
    URL_ + '/api/v1/nodes']);
  await page.waitForSelector('#nodes tbody tr[data-node="gpu09"]', { timeout: 40000 });
  ok('a node enrolled over the API appears without a reload');
  check(await page.evaluate(() => window.__noReload === true), 'the page was not reloaded');
  await page.waitForFunction(() => document.querySelector('#counts .count[data-state="enrolled"]').dataset.count === '2',
    null, { timeout: T });
  ok('the enrolled count went to 2');
  check((await row('gpu09').innerText()).includes('10.20.0.19'), 'the new row shows its IP');
  await shot(page, 'overview-live');

  // Node page: facts and timeline.
  await page.click('#nodes tbody tr[data-node="gpu05"] a');
  await page.waitForSelector('#node-facts dl', { timeout: T });
  const facts = await page.innerText('#node-facts');
  for (const want of ['8086:56a0', 'Arc A770', 'AMD Ryzen 9 7950X', '64.0 GiB', 'bookworm'])
    check(facts.includes(want), `gpu05's facts show ${want}`, facts.slice(0, 400));
  const steps = await page.$$eval('#node-timeline li', (lis) => lis.map((li) => [li.dataset.stage, li.className]));
  check(steps.length === 8 && steps.every(([, c]) => c === 'done'), "gpu05's timeline has 8 completed stages", steps);
  check((await page.innerText('#node-timeline')).includes('+10.5 s'), 'stages show their time offset');
  check((await page.innerText('#why-summary')).includes('booted and phoned home'), 'the summary sentence is shown');
  check((await page.innerText('#node-events')).includes('boot'), "the node's events are listed");
  await shot(page, 'node-gpu05');

  await page.goto(URL_ + '/#node/gpu06');
  await page.waitForSelector('#node-timeline li.failed', { timeout: T });
  check(await page.getAttribute('#node-timeline li.failed', 'data-stage') === 'kernel', "gpu06's failed stage is kernel");
  check((await page.innerText('#why-summary')).includes("stopped after 'kernel'"), 'the summary says where it stopped');
  check((await page.innerText('#node-timeline')).includes('connection reset'), 'the boot error is shown');
  await shot(page, 'node-gpu06');

  await page.goto(URL_ + '/#node/gpu02');
  await page.waitForSelector('#node-timeline li.stopped', { timeout: T });
  check(await page.getAttribute('#node-timeline li.stopped', 'data-stage') === 'kernel', "booting gpu02's stopped stage is kernel");

  // Profiles page: the three versions, a plan on click.
  await page.click('nav a[data-nav="profiles"]');
  await page.waitForSelector('table.profiles tbody tr', { timeout: T });
  const versions = await page.$$eval('table.profiles tbody tr', (trs) => trs.map((tr) => tr.dataset.version));
  for (const v of ['v0.1', 'v0.2', 'lab']) check(versions.includes(v), `profiles lists ${v}`, versions);
  await page.click('table.profiles tr[data-version="v0.1"]');
  await page.waitForSelector('#plan table.plan', { timeout: T });
  check((await page.innerText('#plan')).includes('plan of v0.1'), 'clicking v0.1 shows its plan');
  await shot(page, 'profiles');
  check(errors.length === 0, 'no JavaScript errors', errors);
}

async function testBig(page) {
  const count = Number(process.env.COUNT || 10000);
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  // Time to first render: navigation start to the first node row painted.
  const times = [];
  for (let i = 0; i < 3; i++) {
    await page.goto('about:blank');
    await page.goto(URL_ + '/', { waitUntil: 'commit' });
    const t = await page.waitForFunction(
      () => document.querySelector('#nodes tbody tr[data-node]') &&
        new Promise((r) => requestAnimationFrame(() => r(performance.now()))),
      null, { timeout: 60000, polling: 'raf' });
    times.push(await t.jsonValue());
  }
  times.sort((a, b) => a - b);
  console.log(`first render of ${count} nodes: median ${times[1].toFixed(0)} ms (runs: ${times.map((t) => t.toFixed(0)).join(', ')} ms)`);
  fs.writeFileSync(path.join(OUT, 'web_render_bench.json'),
    JSON.stringify({ nodes: count, median_ms: times[1], runs_ms: times }, null, 2));

  const shown = await page.textContent('#shown');
  check(shown.includes(`of ${count}`), `the table knows all ${count} nodes`, shown);
  check((await rowNames(page)).length === Math.min(count, 500), 'one page of 500 rows is rendered');
  check(await page.$eval('#counts .count[data-state="enrolled"]', (b) => b.dataset.count) === String(count),
    `the enrolled count is ${count}`);
  await shot(page, 'big-overview');
  const last = 'node' + String(count - 1).padStart(5, '0');
  const t0 = Date.now();
  await page.fill('#filter', last);
  await waitRows(page, 1, `filtering ${count} nodes for ${last} leaves one row`);
  console.log(`filter to one row took ${Date.now() - t0} ms (incl. 80 ms debounce)`);
  await page.fill('#filter', 'node0001');
  await waitRows(page, 10, 'filter "node0001" leaves 10 rows');
  await page.fill('#filter', '');
  await page.selectOption('#state-filter', 'ready');
  await waitRows(page, 0, 'state filter "ready" leaves none');
  await page.selectOption('#state-filter', 'enrolled');
  await waitRows(page, 500, 'state filter "enrolled" shows a full page');
  await page.click('#next');
  await page.waitForFunction(() => document.querySelector('#shown').textContent.startsWith('501'), null, { timeout: T });
  ok('the next page shows rows 501 on');
  await page.click('#nodes th[data-key="hostname"]');
  await page.waitForFunction((l) => document.querySelector('#nodes tbody tr').dataset.node === l, last, { timeout: T });
  ok('sorting descending puts the last node first');
  check(errors.length === 0, 'no JavaScript errors', errors);
}

(async () => {
  if (!URL_) { console.error('URL is not set'); process.exit(2); }
  fs.mkdirSync(OUT, { recursive: true });
  const { context, profile } = await launch();
  let rc = 0;
  try {
    const page = context.pages()[0] || await context.newPage();
    if (MODE === 'big') await testBig(page); else await testStates(page);
    console.log(`all ${MODE} checks passed; screenshots in ${OUT}`);
  } catch (e) {
    console.log('FAIL: ' + (e && e.message ? e.message : e));
    try { await shot(context.pages()[0], 'failure-' + MODE); } catch (_) { /* best effort */ }
    rc = 1;
  } finally {
    await context.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }
  process.exit(rc);
})();
