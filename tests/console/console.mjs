// console.mjs — drives gpupoold's web console in a real headless Chromium
// (Debian's chromium, through playwright-core; no browser is downloaded)
// and prints TAP. test-console.sh starts the daemon and gives, in the
// environment: SERVER, ADMIN_TOKEN, RESEARCHER_TOKEN, DEPT_TOKEN, PENDING_ID, OTHER_ID (the
// admin's workload in the researcher's project), XSS_NAME, HOME_DIR (the admin's
// Unix user's home directory, the form's default working directory),
// IDLE_SERVER and IDLE_TOKEN (a daemon whose console sessions end after 5 s unused),
// IDLE_SHELL (an interactive shell on it), PAUSE_SERVER and PAUSE_TOKEN (a daemon
// whose node can pause), PAUSED_ID (a borrower paused there, empty where the node
// cannot pause) and PAUSE_OWNER (the owner's workload it was paused for),
// GP (the gpupool command), NB_DIR (a directory for the notebook, empty without
// jupyter-notebook), and SHOTS (a directory for screenshots of each page, or empty).
import { chromium } from 'playwright-core';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const env = process.env;
const SERVER = env.SERVER;
let n = 0;
let failed = 0;
function ok(cond, what, detail) {
  n++;
  if (!cond) failed++;
  console.log(`${cond ? 'ok' : 'not ok'} ${n} - ${what}`);
  if (!cond && detail !== undefined) console.log(`#   ${String(detail).split('\n').join('\n#   ')}`);
}

const profile = mkdtempSync(join(tmpdir(), 'gpupool-chromium-'));
// A fresh profile directory each run (playwright passes it as --user-data-dir).
const browser = await chromium.launchPersistentContext(profile, {
  executablePath: env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  viewport: { width: 1280, height: 900 },
});
const dialogs = [];
const urls = [];
async function newPage() {
  // Each page is its own tab, with its own sessionStorage (its own sign-in).
  const page = await browser.newPage();
  page.setDefaultTimeout(30000);
  page.on('dialog', (d) => { dialogs.push(d.message()); d.dismiss().catch(() => {}); });
  page.on('request', (r) => urls.push(r.url()));
  return page;
}
async function shot(page, name) {
  if (env.SHOTS) await page.screenshot({ path: join(env.SHOTS, `${name}.png`), fullPage: true });
}
async function signIn(page, token, server) {
  await page.goto((server || SERVER) + '/');
  await page.fill('#token', token);
  await page.click('#signin-form button');
  await page.locator('#nav').waitFor({ state: 'visible' });
}
const text = (page, sel) => page.locator(sel).first().textContent();
// Polls until the text of sel matches re (waitForFunction would need eval,
// which the console's Content-Security-Policy rightly forbids).
async function waitText(page, sel, re) {
  let t = '';
  for (let i = 0; i < 120; i++) {
    t = (await page.locator(sel).first().textContent().catch(() => '')) || '';
    if (re.test(t)) return t;
    await page.waitForTimeout(250);
  }
  throw new Error(`${sel} never matched ${re} (it said '${t}')`);
}

// As waitText, for up to secs seconds (a session or Jupyter starting on a
// loaded machine).
async function waitLong(page, sel, re, secs) {
  const end = Date.now() + secs * 1000;
  let t = '';
  while (Date.now() < end) {
    t = ((await page.locator(sel).first().innerText({ timeout: 1000 }).catch(() => '')) || '').replace(/\u00a0/g, ' ');
    if (re.test(t)) return t;
    await page.waitForTimeout(250);
  }
  throw new Error(`${sel} never matched ${re} in ${secs} s; it shows: ${t.slice(-300)}`);
}

try {
  const page = await newPage();
  const resp = await page.goto(SERVER + '/');
  const csp = resp.headers()['content-security-policy'] || '';
  ok(/script-src 'self'/.test(csp) && !/unsafe-inline/.test(csp), 'the console is served with a strict Content-Security-Policy', csp);
  await shot(page, 'signin');
  await page.locator('#token').waitFor({ state: 'visible' });
  ok(!(await page.locator('#nav').isVisible()), 'signed out, the navigation is not shown (seen, not only an attribute)');
  ok(!(await page.locator('#signout').isVisible()), 'nor the sign-out button');
  const missing = await page.request.get(SERVER + '/console/nope.js');
  ok(missing.status() === 404, 'a file the console does not have is 404', missing.status());

  // Sign in as the administrator; the overview has the pool and a chart.
  await signIn(page, env.ADMIN_TOKEN);
  ok((await text(page, '#who')).includes('admin'), 'signed in as the admin');
  await page.waitForSelector('.card');
  const cards = await page.locator('.card').allTextContents();
  ok(cards.some((c) => /^3GPUs in the pool/.test(c)), 'the overview counts the GPUs of the pool', cards.join(' | '));
  ok(cards.some((c) => /really busy \(/.test(c)), 'the overview says how much is really busy', cards.join(' | '));
  await page.waitForSelector('.chart svg path', { state: 'attached' });
  ok(await page.locator('.chart svg path').count() >= 1, 'the overview draws allocated against used');
  const reasons = await page.locator('td.reason').allTextContents();
  ok(reasons.some((r) => /limit/.test(r)), 'the overview says why work waits', reasons.join(' | '));
  await shot(page, 'overview');

  const auth = { Authorization: 'Bearer ' + env.ADMIN_TOKEN, 'Content-Type': 'application/json' };
  // Submit half a GPU through the form and see it run.
  await page.goto(SERVER + '/#/submit');
  await page.waitForSelector('#submit-form');
  await page.selectOption('#f-project', 'nlp');
  const workdir = await page.locator('#f-workdir').inputValue();
  ok(workdir === env.HOME_DIR, 'the working directory is offered, its default (the home directory) shown', workdir);
  await page.fill('#f-command', 'echo started in $(pwd); i=0; while [ $i -lt 400 ]; do echo line $i; i=$((i+1)); sleep 0.05; done; sleep 300');
  await page.fill('#f-gpu', '1.5');
  await page.click('#submit-form button[type=submit]');
  await waitText(page, '#err-gpu', /./);
  ok(/gpu/i.test(await text(page, '#err-gpu')), 'a bad GPU amount is shown next to its field', await text(page, '#err-gpu'));
  await page.fill('#f-name', 'half-a-gpu');
  await page.fill('#f-gpu', '0.5');
  // The eviction modes, as visible text, the project's default named first.
  const modes = await page.locator('#f-on_preempt option').allTextContents();
  ok(modes[0] === "the project's default (checkpoint)" && ['pause', 'checkpoint', 'requeue'].every((m) => modes.some((t) => t.startsWith(m + ': '))),
    'the form offers on_preempt: the project\'s default, pause, checkpoint, requeue', modes.join(' | '));
  await page.selectOption('#f-on_preempt', 'requeue');
  await shot(page, 'submit');
  await page.click('#submit-form button[type=submit]');
  await page.waitForURL(/#\/workload\/\d+/);
  const wid = page.url().split('/').pop();
  let st = '';
  for (let i = 0; i < 60 && st !== 'running'; i++) {
    await page.waitForTimeout(500);
    await page.evaluate(() => window.dispatchEvent(new HashChangeEvent('hashchange')));
    await page.waitForSelector('#page h1');
    st = (await page.locator('tr:has(th:text-is("state")) td').first().textContent().catch(() => '')) || '';
  }
  ok(st === 'running', 'the 0.5-GPU workload submitted through the form runs', st);
  ok((await page.locator('tr:has(th:text-is("asks for")) td').first().textContent()).includes('0.5'), 'it asks for 0.5 GPU');
  const evm = await text(page, 'tr:has(th:text-is("when evicted")) td');
  ok(/^requeue: it is stopped at once/.test(evm), 'its page shows the eviction mode chosen in the form', evm);
  await waitText(page, '#log', /started/);
  ok(true, 'its log is tailed live');
  ok((await text(page, '#log')).includes('started in ' + env.HOME_DIR + '\n'), 'it ran in the working directory of the form', (await text(page, '#log')).slice(0, 80));
  // The log follows its end as the task writes, unless the reader scrolls up.
  const logPos = () => page.locator('#log').evaluate((e) => ({ top: e.scrollTop, end: e.scrollHeight - e.clientHeight }));
  await waitText(page, '#log', /line 60\n/);
  await waitText(page, '#log', /line 100\n/);
  let pos = await logPos();
  ok(pos.end > 0 && pos.top >= pos.end - 8, 'the live log shows its last lines as they come', JSON.stringify(pos));
  await page.locator('#log').evaluate((e) => { e.scrollTop = 0; });
  await waitText(page, '#log', /line 160\n/);
  pos = await logPos();
  ok(pos.top === 0 && pos.end > 0, 'and stays where the reader scrolled up to', JSON.stringify(pos));
  await shot(page, 'workload');
  await page.goto(SERVER + '/#/nodes');
  await page.waitForSelector('.gpu svg');
  ok(await page.locator('.gpu svg rect title').count() >= 3, 'the nodes page draws each slice');
  await shot(page, 'nodes');

  // A pending workload says why it waits.
  await page.goto(SERVER + '/#/workload/' + env.PENDING_ID);
  await page.waitForSelector('td.reason');
  ok(/limit/.test(await text(page, 'td.reason')), 'a pending workload shows its reason in words', await text(page, 'td.reason'));

  // Delete the 0.5-GPU workload.
  await page.goto(SERVER + '/#/workload/' + wid);
  await page.waitForSelector('button[data-action=delete]');
  await page.click('button[data-action=delete]');
  let gone = '';
  for (let i = 0; i < 60 && gone !== 'deleted'; i++) {
    await page.waitForTimeout(500);
    await page.evaluate(() => window.dispatchEvent(new HashChangeEvent('hashchange')));
    await page.waitForSelector('#page h1');
    gone = (await page.locator('tr:has(th:text-is("state")) td').first().textContent().catch(() => '')) || '';
  }
  ok(gone === 'deleted', 'deleting it from the console stops it', gone);

  // ---- Sessions: the terminal of an interactive workload, typed into from the
  // page; its recent output replayed; its end said in words; another user's
  // page shows no terminal; a notebook started from the Submit page and reached
  // through gpupool port-forward, a cell run in Jupyter from this browser.
  const shell = await (await fetch(SERVER + '/api/v1/workloads', { method: 'POST', headers: auth,
    body: JSON.stringify({ project: 'nlp', name: 'shell', gpu: '0.1', tty: true, kind: 'interactive', preemptible: true, command: ['/bin/sh'] }) })).json();
  ok(shell.id > 0, 'an interactive shell is submitted', JSON.stringify(shell));
  const stateOf = async (id) => (await (await fetch(SERVER + '/api/v1/workloads/' + id, { headers: auth })).json()).state;
  for (let i = 0; i < 240 && (await stateOf(shell.id)) !== 'running'; i++) await page.waitForTimeout(250);
  await page.goto(SERVER + '/#/workload/' + shell.id);
  await waitLong(page, '#term-status', /Connected/, 60);
  ok(true, 'its page opens its terminal and says it is connected');
  await page.click('#terminal');
  await page.keyboard.type('echo answer-$((6*7))');
  await page.keyboard.press('Enter');
  await waitLong(page, '#terminal .xterm-rows', /answer-42/, 60);
  ok(true, 'a command typed into the console\'s terminal runs, and its answer is shown');
  const rowsColor = await page.locator('#terminal .xterm-rows').evaluate((e) => getComputedStyle(e).color);
  ok(rowsColor !== 'rgb(0, 0, 0)', 'the terminal is drawn with its own colours under the strict policy', rowsColor);
  await shot(page, 'terminal');
  // The size the task sees: "size=ROWS COLS" (stty's answer, marked).
  const sizes = (t) => [...t.matchAll(/size=(\d+) (\d+)/g)].map((m) => [Number(m[1]), Number(m[2])]);
  await page.keyboard.type("stty size | sed 's/^/size=/'");
  await page.keyboard.press('Enter');
  const [rows0, cols0] = sizes(await waitLong(page, '#terminal .xterm-rows', /size=\d+ \d+/, 60))[0];
  ok(rows0 > 5 && cols0 > 40, 'the terminal\'s size reached the task when it opened', rows0 + ' ' + cols0);
  await page.setViewportSize({ width: 800, height: 900 });
  await page.keyboard.type("stty size | sed 's/^/size=/'");
  await page.keyboard.press('Enter');
  let after = [];
  for (let i = 0; i < 60 && !(after.length > 1 && after[after.length - 1][1] < cols0); i++) {
    after = sizes((await page.locator('#terminal .xterm-rows').innerText()).replace(/\u00a0/g, ' '));
    if (after.length > 1 && after[after.length - 1][1] >= cols0) {
      // Asked before the new size arrived: ask again.
      await page.keyboard.type("stty size | sed 's/^/size=/'");
      await page.keyboard.press('Enter');
    }
    await page.waitForTimeout(500);
  }
  ok(after.length > 1 && after[after.length - 1][1] < cols0, 'and its new size when the window narrowed', JSON.stringify(after));
  await page.setViewportSize({ width: 1280, height: 900 });
  // Left and opened again: the recent output is replayed first.
  await page.goto(SERVER + '/#/workloads');
  await page.waitForSelector('#workloads');
  await page.goto(SERVER + '/#/workload/' + shell.id);
  await waitLong(page, '#terminal .xterm-rows', /answer-42/, 60);
  ok(true, 'the terminal opened again shows the recent output first');
  // The connection drops (cut between the page and the daemon): the page
  // says so and offers to reconnect, which replays the output again.
  let cut = null;
  // (The route takes effect in a page loaded after it: reloaded here.)
  await page.routeWebSocket(/\/attach$/, (ws) => { ws.connectToServer(); cut = ws; });
  await page.reload();
  await waitLong(page, '#term-status', /Connected/, 60);
  for (let i = 0; i < 40 && !cut; i++) await page.waitForTimeout(250);
  await cut.close();
  await waitLong(page, '#term-status', /connection .*dropped/, 30);
  ok(await page.locator('#term-reconnect').isVisible(), 'a dropped connection is said, with a Reconnect button', await text(page, '#term-status'));
  await page.click('#term-reconnect');
  await waitLong(page, '#term-status', /Connected/, 60);
  await waitLong(page, '#terminal .xterm-rows', /answer-42/, 60);
  ok(true, 'Reconnect attaches again and shows the recent output');
  await page.unrouteAll();
  // Another user sees the workload, and why there is no terminal for them.
  const other = await newPage();
  await signIn(other, env.RESEARCHER_TOKEN);
  await other.goto(SERVER + '/#/workload/' + shell.id);
  await other.locator('#no-terminal').waitFor({ state: 'visible' });
  ok(/only/.test(await text(other, '#no-terminal')) && await other.locator('#terminal').count() === 0,
    'another user\'s interactive workload shows no terminal, and says why', await text(other, '#no-terminal'));
  await other.goto(SERVER + '/#/workload/' + env.OTHER_ID);
  await other.locator('#no-terminal').waitFor({ state: 'visible' });
  ok(/no terminal/.test(await text(other, '#no-terminal')), 'a batch workload says it has no terminal', await text(other, '#no-terminal'));
  await other.close();
  // The session ends: said in words, with the exit code.
  await page.click('#terminal');
  await page.keyboard.type('exit 3');
  await page.keyboard.press('Enter');
  await waitLong(page, '#term-status', /ended/, 60);
  ok(/exited with code 3/.test(await text(page, '#term-status')), 'the end of the session is said, with its exit code', await text(page, '#term-status'));

  if (env.NB_DIR) {
    await page.goto(SERVER + '/#/submit');
    await page.waitForSelector('#notebook-form');
    await page.selectOption('#nb-project', 'notebooks');
    await page.fill('#nb-gpu', '1.5');
    await page.click('#notebook-form button[type=submit]');
    await waitText(page, '#nb-error', /./);
    ok(/gpu/i.test(await text(page, '#nb-error')) && /#\/submit$/.test(page.url()), 'a bad GPU amount for a notebook is said, and nothing starts', await text(page, '#nb-error'));
    await page.fill('#nb-gpu', '0.25');
    await page.fill('#nb-workdir', env.NB_DIR);
    await shot(page, 'notebook-start');
    await page.click('#notebook-form button[type=submit]');
    await page.waitForURL(/#\/workload\/\d+/);
    const nbId = page.url().split('/').pop();
    // The page says how to reach it once Jupyter has printed its address.
    let fwd = '';
    for (let i = 0; i < 120 && !fwd; i++) {
      fwd = (await page.locator('#notebook-forward').textContent({ timeout: 1000 }).catch(() => '')) || '';
      if (!fwd && !(await page.locator('#terminal').count())) {
        await page.waitForTimeout(500);
        await page.evaluate(() => window.dispatchEvent(new HashChangeEvent('hashchange')));
        await page.waitForSelector('#page h1');
      }
    }
    const nbUrl = (await page.locator('#notebook-url').textContent().catch(() => '')) || '';
    const fm = fwd.match(/^gpupool port-forward (\d+) 8888:(\d+)$/);
    const um = nbUrl.match(/^http:\/\/127\.0\.0\.1:8888\/\?token=(\w+)$/);
    ok(fm && fm[1] === nbId && um, 'the notebook\'s page gives the port-forward command with its id, and Jupyter\'s token', fwd + ' | ' + nbUrl);
    // Jupyter prints a token it makes itself into its output, which is the workload's log,
    // and every member of the project may read that log (then reach the notebook from a task
    // of theirs on the node's loopback): the console gives Jupyter a token of its own in
    // JUPYTER_TOKEN, whose value only the submitter and admins see, as gpupool notebook does.
    const nbLog = await (await fetch(SERVER + '/api/v1/workloads/' + nbId + '/logs', { headers: auth })).text();
    ok(um && /token=/.test(nbLog) && !nbLog.includes(um[1]), 'the notebook\'s log, which its project\'s members read, does not hold Jupyter\'s token', nbLog.slice(-600));
    await shot(page, 'notebook');
    if (fm && um) {
      // The command as shown, on a free local port instead of 8888.
      const pf = spawn(env.GP, ['port-forward', fm[1], '0:' + fm[2]], { env: { ...process.env, GPUPOOL_SERVER: SERVER, GPUPOOL_TOKEN: env.ADMIN_TOKEN } });
      const local = await new Promise((resolve) => {
        let out = '';
        pf.stdout.on('data', (d) => { out += d; const m = out.match(/Forwarding 127\.0\.0\.1:(\d+)/); if (m) resolve(m[1]); });
        pf.on('exit', () => resolve(null));
      });
      ok(local, 'gpupool port-forward forwards a local port to it', local);
      const base = 'http://127.0.0.1:' + local;
      const jp = await newPage();
      await jp.goto(base + '/?token=' + um[1]);
      await jp.locator('#notebook_list').waitFor({ state: 'visible', timeout: 120000 });
      ok(true, 'Jupyter\'s own page opens in Chromium through the forward, with the token shown');
      const made = await jp.request.post(base + '/api/contents', { headers: { Authorization: 'token ' + um[1] }, data: { type: 'notebook' } });
      const nbPath = made.ok() ? (await made.json()).path : '';
      ok(nbPath, 'a notebook is made in the notebook directory', made.status());
      await jp.goto(base + '/notebooks/' + encodeURIComponent(nbPath));
      await jp.locator('.CodeMirror').first().waitFor({ state: 'visible', timeout: 120000 });
      await jp.locator('.CodeMirror').first().click();
      await jp.keyboard.type('print("cell says", 6 * 7)');
      await jp.keyboard.press('Shift+Enter');
      await waitLong(jp, '.output_area', /cell says 42/, 180);
      ok(true, 'a cell run in the notebook from Chromium prints its answer');
      await shot(jp, 'jupyter');
      await jp.close();
      pf.kill('SIGINT');
    }
    await fetch(SERVER + '/api/v1/workloads/' + nbId, { method: 'DELETE', headers: auth });
  } else {
    ok(true, '# SKIP jupyter-notebook not installed (scripts/install-deps.sh)');
  }

  // A hostile name is shown as text, and no script runs.
  await page.goto(SERVER + '/#/workloads');
  await page.selectOption('select[aria-label=state]', 'any');
  await page.waitForSelector('#workloads td.wname');
  const names = await page.locator('#workloads td.wname').allTextContents();
  ok(names.includes(env.XSS_NAME), 'a workload named like HTML is shown as its text', names.join(' | '));
  ok(await page.locator('#workloads img').count() === 0, 'no element was made from it');
  await page.waitForTimeout(500);
  ok(dialogs.length === 0, 'no script of it ran', dialogs.join(' | '));
  await page.click('th:text("state")');
  ok((await text(page, 'th.sortable:has-text("state")')).includes('▲'), 'the page sorts by a column');
  await shot(page, 'workloads');

  // A heading orders all pages, not only the one shown: newest first is one
  // click on "age", and the next page goes on where the first ended.
  const all = await (await fetch(SERVER + '/api/v1/workloads?order=-submitted&limit=1000',
    { headers: { Authorization: 'Bearer ' + env.ADMIN_TOKEN } })).json();
  const newest = all.workloads.map((w) => '' + w.id);
  await page.selectOption('select[aria-label="per page"]', '10');
  await waitText(page, '#page .toolbar .muted', /, 10 shown/);
  await page.click('th:text("age")');
  await waitText(page, 'th.sortable:has-text("age")', /▲/);
  const ids = async () => page.locator('#workloads tr[data-id]').evaluateAll((rows) => rows.map((r) => r.dataset.id));
  const first = await ids();
  await page.click('button:text("Next →")');
  await waitText(page, '#page .toolbar .muted', /page 2/);
  const both = first.concat(await ids());
  ok(newest.length > 10 && both.join(',') === newest.slice(0, both.length).join(','), 'a heading orders all pages (newest first), and the next page follows on', both.join(',') + ' vs ' + newest.join(','));

  // States are badges; the form's workload shows its command as the shell reads it.
  ok(await page.locator('#workloads .badge.state-pending').first().isVisible(), 'workload states are shown as badges');
  await page.goto(SERVER + '/#/workload/' + wid);
  await page.waitForSelector('code.command');
  const cmdShown = await text(page, 'code.command');
  ok(cmdShown.startsWith("sh -c 'echo started in $(pwd); i=0;"), 'the command is shown quoted as the shell reads it', cmdShown);
  await page.goto(SERVER + '/#/nodes');
  await page.waitForSelector('#node-legend .swatch');
  const swatches = await page.locator('#node-legend .swatch').evaluateAll((e) => e.map((x) => getComputedStyle(x).backgroundColor));
  ok(swatches.length >= 2 && new Set(swatches).size === swatches.length, 'each project shown on the nodes page has a colour of its own', swatches.join(' '));

  // A thousand workloads waiting for the same reason: the page draws its
  // first rows at once, the rest as they are scrolled to, and the reason once.
  for (let i = 0; i < 1000; i += 10)
    await Promise.all(Array.from({ length: 10 }, (_, j) => fetch(SERVER + '/api/v1/workloads', { method: 'POST', headers: auth,
      body: JSON.stringify({ project: 'infra', gpu: '1', name: 'bulk-' + (i + j), command: ['true'] }) })));
  await page.goto(SERVER + '/#/workloads');
  await page.waitForSelector('#workloads');
  await page.selectOption('select[aria-label=state]', 'pending');
  await waitText(page, '#page .toolbar .muted', /shown/);
  const t0 = Date.now();
  await page.selectOption('select[aria-label="per page"]', '1000');
  await waitText(page, '#page .toolbar .muted', /, 1000 shown/);
  await page.locator('#workloads tr[data-id]').first().waitFor({ state: 'visible' });
  const drawn = Date.now() - t0;
  console.log(`# the workloads page with 1000 rows: first rows on screen ${drawn} ms after asking`);
  const made = await page.locator('#workloads tr[data-id]').count();
  ok(made <= 101, 'of 1,000 rows, only those near the screen are made', made);
  ok(await page.locator('#workloads td.ditto').first().isVisible(), 'a reason the row above gives is not repeated');
  await page.locator('#workloads tr.more').scrollIntoViewIfNeeded();
  await page.locator('#workloads tr[data-id]').nth(150).waitFor({ state: 'attached' });
  ok(await page.locator('#workloads tr[data-id]').count() > 101, 'scrolling down makes the next rows');
  await page.selectOption('select[aria-label="per page"]', '100');
  await waitText(page, '#page .toolbar .muted', /, 100 shown/);

  for (const [name, sel] of [['quotas', 'td.qname'], ['plan', '#page h1']]) {
    await page.goto(SERVER + '/#/' + name);
    await page.waitForSelector(sel);
    await page.waitForTimeout(300);
    await shot(page, name);
  }
  ok(await page.locator('#plan-table, p.muted').count() > 0, 'the plan page answers');

  // Usage: GPU-hours per department and project over a period, and its CSV.
  await page.goto(SERVER + '/#/usage');
  await page.locator('#usage-table').waitFor({ state: 'visible' });
  const uq = await page.locator('#usage-table tr[data-queue]').evaluateAll((r) => r.map((x) => x.dataset.queue));
  ok(uq.indexOf('research') >= 0 && uq.indexOf('nlp') === uq.indexOf('research') + 1, 'the usage page lists each department with its projects below it', uq.join(','));
  ok(await page.locator('#usage-table tr.total').isVisible(), 'and the total of the departments');
  await shot(page, 'usage');
  const [dl] = await Promise.all([page.waitForEvent('download'), page.click('#usage-csv')]);
  const csvText = readFileSync(await dl.path(), 'utf8');
  ok(/^from,to,queue,parent,allocated_gpu_hours,used_gpu_hours,idle_gpu_hours,used_percent,borrowed_gpu_hours,lent_gpu_hours,returned_gpu_hours\n/.test(csvText) &&
    /,nlp,research,/.test(csvText), 'it downloads the table as CSV, each project with its department', csvText.slice(0, 200));
  await page.click('button:text("last 1d")');
  await waitText(page, '#usage-period', /GPU-hours from/);
  ok(true, 'and another period can be chosen');
  await page.goto(SERVER + '/#/quotas');
  await page.waitForSelector('td.qname');
  ok(await page.locator('button.edit').count() > 0, 'the admin may edit quotas');

  // A researcher sees no admin action.
  const rp = await newPage();
  await signIn(rp, env.RESEARCHER_TOKEN);
  ok((await text(rp, '#who')).includes('researcher'), 'signed in as a researcher');
  await rp.goto(SERVER + '/#/submit');
  await rp.waitForSelector('#f-project');
  const offered = await rp.locator('#f-project option').allTextContents();
  ok(offered.join(',') === 'nlp', 'a researcher is offered only the projects of its token', offered.join(','));
  await rp.goto(SERVER + '/#/quotas');
  await rp.waitForSelector('td.qname');
  ok(await rp.locator('button.edit').count() === 0, 'a researcher is offered no quota editing');
  await rp.goto(SERVER + '/#/workload/' + env.OTHER_ID);
  await rp.waitForSelector('h1:has-text("Workload")');
  await rp.waitForTimeout(300);
  ok(await rp.locator('button[data-action]').count() === 0, "a researcher is offered no action on another user's workload");

  // A department admin edits the quotas of its own department only.
  const dp = await newPage();
  await signIn(dp, env.DEPT_TOKEN);
  // A page left while it loads never replaces the page shown after it: the
  // overview (several API calls) is asked for, then at once the quotas (one).
  await dp.goto(SERVER + '/#/quotas');
  await dp.waitForSelector('td.qname');
  // The overview's usage call is held back a second so that it answers last.
  await dp.route('**/api/v1/usage*', async (r) => { await new Promise((res) => setTimeout(res, 1000)); await r.continue(); });
  await dp.evaluate(() => { location.hash = '#/overview'; setTimeout(() => { location.hash = '#/quotas'; }, 100); });
  await dp.waitForTimeout(2000);
  await dp.unroute('**/api/v1/usage*');
  ok(await dp.locator('#page h1').innerText() === 'Quotas', 'a page left while loading does not replace the page shown', await dp.locator('#page h1').innerText());
  const editable = await dp.locator('tr:has(button.edit)').evaluateAll((rows) => rows.map((r) => r.dataset.queue));
  ok(editable.sort().join(',') === 'nlp,research,vision', 'a department admin may edit its own subtree only', editable.join(','));
  await dp.click('tr[data-queue=vision] button.edit');
  await dp.fill('tr[data-queue=vision] input[aria-label="deserved GPUs"]', '0.5');
  await dp.click('tr[data-queue=vision] button:text("Save")');
  await waitText(dp, 'tr[data-queue=vision] td:nth-child(2)', /^0\.5$/);
  ok(true, 'and the new deserved quota is shown');

  // A young pool (no history): the plan and the overview say how much there
  // is and what is needed, and print no "-0".
  if (env.YOUNG_SERVER) {
    const yp = await newPage();
    await yp.goto(env.YOUNG_SERVER + '/');
    await yp.fill('#token', env.YOUNG_TOKEN);
    await yp.click('#signin-form button');
    await yp.locator('#nav').waitFor({ state: 'visible' });
    await yp.goto(env.YOUNG_SERVER + '/#/plan');
    await yp.locator('#plan-history').waitFor({ state: 'visible' });
    ok(/No whole hour of usage is recorded/.test(await text(yp, '#plan-history')), 'a young pool\'s plan says how much history there is and what it needs', await text(yp, '#plan-history'));
    ok(!/-0\b/.test(await yp.locator('#page').innerText()), 'and prints no -0');
    await shot(yp, 'plan-young');
    await yp.goto(env.YOUNG_SERVER + '/#/overview');
    await yp.locator('#usage-young').waitFor({ state: 'visible' });
    ok(/recorded/.test(await text(yp, '#usage-young')), 'its overview says how much usage is recorded instead of drawing dots', await text(yp, '#usage-young'));
    await shot(yp, 'overview-young');
  }

  // A borrower paused for its owner (a daemon whose node can pause): its
  // page shows it paused, with Resume and Delete, and its events paused,
  // then resumed once the owner leaves.
  if (env.PAUSE_SERVER && env.PAUSED_ID) {
    const pp = await newPage();
    await signIn(pp, env.PAUSE_TOKEN, env.PAUSE_SERVER);
    await pp.goto(env.PAUSE_SERVER + '/#/workload/' + env.PAUSED_ID);
    const pst = await waitText(pp, 'tr:has(th:text-is("state")) td', /./);
    ok(pst === 'paused', 'a paused workload\'s page shows the state paused', pst);
    const labels = await pp.locator('#page .toolbar button').allInnerTexts();
    ok(labels.includes('Resume') && labels.includes('Delete'), 'with Resume and Delete', labels.join(' | '));
    const pev = await pp.locator('#page table').last().innerText();
    ok(/\bpaused\s+evicted \(reclaim\)/.test(pev), 'its events say paused, and why', pev);
    const pm = await text(pp, 'tr:has(th:text-is("when evicted")) td');
    ok(/^pause: its GPU state is moved to host memory/.test(pm), 'and its eviction mode, pause', pm);
    await shot(pp, 'workload-paused');
    const pa = { Authorization: 'Bearer ' + env.PAUSE_TOKEN };
    await fetch(env.PAUSE_SERVER + '/api/v1/workloads/' + env.PAUSE_OWNER, { method: 'DELETE', headers: pa });
    let pnow = '';
    for (let i = 0; i < 240 && pnow !== 'running'; i++) {
      await pp.waitForTimeout(250);
      pnow = (await (await fetch(env.PAUSE_SERVER + '/api/v1/workloads/' + env.PAUSED_ID, { headers: pa })).json()).state;
    }
    await pp.goto(env.PAUSE_SERVER + '/#/overview');
    await pp.goto(env.PAUSE_SERVER + '/#/workload/' + env.PAUSED_ID);
    await waitText(pp, 'tr:has(th:text-is("state")) td', /./);
    const rev = await pp.locator('#page table').last().innerText();
    ok(/\bresumed\s+resumed/.test(rev), 'once its owner leaves, its events say resumed', `state ${pnow}; ${rev}`);
  } else {
    ok(true, '# SKIP the pause daemon\'s node cannot pause here');
  }

  // Signed out, the navigation is gone again (seen).
  await dp.click('#signout');
  await dp.locator('#token').waitFor({ state: 'visible' });
  ok(!(await dp.locator('#nav').isVisible()), 'after signing out, the navigation is not shown');

  // The nodes page says what each node's tasks asked for and what it uses.
  await page.goto(SERVER + '/#/nodes');
  const use = await waitText(page, '.node-use', /CPU: .* in use; memory: .* in use/);
  ok(true, 'the nodes page shows the CPU and memory a node really uses', use);

  // The browser keeps a console session, never the token, and sign-out
  // revokes the session at the daemon.
  const sp = await newPage();
  await signIn(sp, env.RESEARCHER_TOKEN);
  const held = async (p) => p.evaluate(() => Object.entries(window.sessionStorage));
  let stored = await held(sp);
  const secret = (stored.find(([k]) => k === 'gpupool.session') || ['', ''])[1];
  ok(/^gpc_[0-9a-f]{48}$/.test(secret), 'sign-in holds a console session', stored.map(([k]) => k).join(','));
  ok(!stored.some(([, v]) => v.includes(env.RESEARCHER_TOKEN)), 'the token itself is not kept in the browser');
  const whoStatus = async (server, bearer) =>
    (await sp.request.get(server + '/api/v1/whoami', { headers: { Authorization: 'Bearer ' + bearer } })).status();
  ok(await whoStatus(SERVER, secret) === 200, 'the API takes the console session');
  await sp.click('#signout');
  await sp.locator('#token').waitFor({ state: 'visible' });
  let refused = 0;
  for (let i = 0; i < 40 && refused !== 401; i++) {
    refused = await whoStatus(SERVER, secret);
    if (refused !== 401) await sp.waitForTimeout(250);
  }
  ok(refused === 401, 'after sign-out the old session secret is refused by the API', refused);
  stored = await held(sp);
  ok(!stored.some(([, v]) => v === secret), 'and it is gone from the browser');

  // Left alone past the idle timeout, the console asks to sign in again and
  // its session is refused.
  if (env.IDLE_SERVER) {
    const ip = await newPage();
    await signIn(ip, env.IDLE_TOKEN, env.IDLE_SERVER);
    const idleSecret = ((await held(ip)).find(([k]) => k === 'gpupool.session') || ['', ''])[1];
    if (env.IDLE_SHELL) {
      // Typing into a terminal is activity: xterm.js keeps some keys (Enter,
      // arrows, Ctrl-keys) from the page's listeners, so the console counts
      // what the terminal sends. Only Enter is pressed here, for 9 s.
      const ia = { Authorization: 'Bearer ' + env.IDLE_TOKEN };
      const st = async () => (await (await fetch(env.IDLE_SERVER + '/api/v1/workloads/' + env.IDLE_SHELL, { headers: ia })).json()).state;
      for (let i = 0; i < 240 && (await st()) !== 'running'; i++) await ip.waitForTimeout(250);
      await ip.goto(env.IDLE_SERVER + '/#/workload/' + env.IDLE_SHELL);
      await waitLong(ip, '#term-status', /Connected/, 60);
      await ip.click('#terminal');
      await ip.keyboard.type('echo typed');
      for (let i = 0; i < 9; i++) {
        await ip.keyboard.press('Enter');
        await ip.waitForTimeout(1000);
      }
      await waitLong(ip, '#terminal .xterm-rows', /typed\s/, 30);
      ok(await ip.locator('#nav').isVisible() && /Connected/.test(await text(ip, '#term-status')),
        'typing into the terminal for longer than the idle timeout keeps the console signed in', await text(ip, '#signin-error'));
    }
    await ip.locator('#signin').waitFor({ state: 'visible', timeout: 60000 });
    const why = await text(ip, '#signin-error');
    ok(/without activity; sign in again/.test(why), 'after the idle timeout the console asks to sign in again', why);
    ok(!(await ip.locator('#nav').isVisible()), 'and shows nothing of the pool');
    ok(idleSecret !== '' && await whoStatus(env.IDLE_SERVER, idleSecret) === 401, 'the timed-out session is refused by the API', idleSecret);
  }

  const token = env.ADMIN_TOKEN;
  ok(!urls.some((u) => [token, env.RESEARCHER_TOKEN, env.DEPT_TOKEN, secret].some((t) => u.includes(t))), 'no token or session secret ever appears in a URL');
} catch (e) {
  ok(false, 'the console test ran to its end', e.stack || e);
} finally {
  await browser.close();
  rmSync(profile, { recursive: true, force: true });
}
console.log(`1..${n}`);
process.exit(failed ? 1 : 0);
