// workloads-bench.mjs — how long the console's Workloads page takes to show
// 1,000 rows in Debian's Chromium: from choosing "1000 a page" to the first
// rows on screen and the frame after them, RUNS times (median printed).
// bench-console-workloads.sh starts the daemon and fills it; env: SERVER,
// TOKEN, RUNS.
import { chromium } from 'playwright-core';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const env = process.env;
const profile = mkdtempSync(join(tmpdir(), 'gpupool-chromium-'));
const browser = await chromium.launchPersistentContext(profile, {
  executablePath: env.CHROMIUM || '/usr/bin/chromium', headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run'], viewport: { width: 1280, height: 900 },
});
try {
  const page = await browser.newPage();
  await page.goto(env.SERVER + '/');
  await page.fill('#token', env.TOKEN);
  await page.click('#signin-form button');
  await page.waitForSelector('#nav a');
  const times = [];
  for (let i = 0; i < Number(env.RUNS || 5); i++) {
    await page.goto(env.SERVER + '/#/workloads');
    await page.waitForSelector('select[aria-label="per page"]');
    await page.selectOption('select[aria-label=state]', 'pending');
    await page.waitForSelector('#workloads tr[data-id]');
    await page.selectOption('select[aria-label="per page"]', '10');
    for (let k = 0; k < 200 && (await page.locator('#workloads tr[data-id]').count()) !== 10; k++) await page.waitForTimeout(50);
    const t0 = Date.now();
    await page.selectOption('select[aria-label="per page"]', '1000');
    await page.locator('text=, 1000 shown').first().waitFor({ state: 'visible', timeout: 60000 });
    await page.locator('#workloads tr[data-id]').first().waitFor({ state: 'visible' });
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0))));
    times.push(Date.now() - t0);
  }
  times.sort((a, b) => a - b);
  console.log(`console: workloads page, 1000 rows: first screen drawn in ${times[times.length >> 1]} ms (median of ${times.length}; ${times.join(', ')} ms)`);
} finally {
  await browser.close();
  rmSync(profile, { recursive: true, force: true });
}
