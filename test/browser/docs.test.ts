import path from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/context.js';
import { launchBrowser, SCREENSHOTS } from './browser.js';

// /docs in a real browser: the reference renders from /openapi.json under its CSP, with nothing
// the page needs refused (a CSP violation or a failed request shows up on the console).

let ctx: TestContext;
let browser: Browser;
let base: string;

beforeAll(async () => {
  ctx = await createTestContext();
  base = await ctx.app.listen({ host: '127.0.0.1', port: 0 });
  browser = await launchBrowser();
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await ctx?.close();
});

it('renders the interface: its title, the batch upload, the v2 routes, and no console error', async () => {
  const page = await browser.newPage();
  const problems: string[] = [];
  page.on('console', (m) => m.type() === 'error' && problems.push(m.text()));
  page.on('pageerror', (e) => problems.push(e.message));
  page.on('requestfailed', (r) => problems.push(`${r.url()}: ${r.failure()?.errorText ?? 'failed'}`));
  await page.goto(`${base}/docs`);
  await page.locator('.swagger-ui .info .title').waitFor({ timeout: 20_000 });
  expect(await page.locator('.swagger-ui .info .title').innerText()).toContain('Account migration data-import service');
  await expect.poll(() => page.locator('.opblock-summary-path').allInnerTexts(), { timeout: 10_000 }).toEqual(
    expect.arrayContaining(['/v1/data-import/batches/', '/v1/data-import/batches/{batch_id}/reconciliation/', '/v2/data-import/accounts/']),
  );
  await page.screenshot({ path: path.join(SCREENSHOTS, 'docs.png'), fullPage: false });
  expect(problems).toEqual([]);
  await page.close();
}, 60_000);
