import { readFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createOperator } from '../../src/console/operators.js';
import { LONG, linesOf, ndjsonOf } from '../queue/helpers.js';
import { createPipelineContext, type PipelineContext } from '../queue/setup.js';
import { launchBrowser, SCREENSHOTS } from './browser.js';

// The operators' console in a real browser (issue 13, part 8): an operator signs in, uploads a
// cohort with planted mistakes, watches it finish live, opens its failures, retries one code,
// downloads the CSV and reads the reconciliation; a viewer sees the same pages and cannot act; a
// form sent without its CSRF token is refused. Every page is screenshotted into SHOTS, and no page
// may log a console error or a CSP violation.

const SHOTS = path.join(SCREENSHOTS, 'console');
const SUPPLIER = 'BROWSE';
const TEAM = 'Browser Team';
const OPERATOR = { name: 'olivia', password: 'olivias-console-password' };
const VIEWER = { name: 'victor', password: 'victors-console-password' };
const PLANTED = ['BR-BAD-1', 'BR-BAD-2', 'BR-BAD-3'];

let ctx: PipelineContext;
let browser: Browser;
let base: string;
let cohortFile: string;
let batchId: string;
const problems: string[] = [];

/** Console errors the tests cause on purpose, or that come from outside (bull-board's Google Fonts, offline here). */
const EXPECTED = [/\/admin\/queues: Failed to load resource: net::ERR_NAME_NOT_RESOLVED$/, /: Failed to load resource: the server responded with a status of 403 \(Forbidden\)$/];

function watch(page: Page): Page {
  page.on('console', (m) => {
    const line = `${page.url()}: ${m.text()}`;
    if (m.type() === 'error' && !EXPECTED.some((e) => e.test(line))) problems.push(line);
  });
  page.on('pageerror', (e) => problems.push(`${page.url()}: ${e.message}`));
  return page;
}

const shot = (page: Page, name: string) => page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });

async function signInAs(who: { name: string; password: string }): Promise<Page> {
  const page = watch(await (await browser.newContext({ acceptDownloads: true, viewport: { width: 1360, height: 900 } })).newPage());
  await page.goto(`${base}/admin/`);
  // Sent to sign in first, and brought back to where they were going.
  expect(new URL(page.url()).pathname).toBe('/admin/sign-in');
  await page.getByLabel('Name').fill(who.name);
  await page.getByLabel('Password').fill(who.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(`${base}/admin/`);
  expect(await page.getByTestId('me').innerText()).toBe(who.name);
  return page;
}

beforeAll(async () => {
  ctx = await createPipelineContext();
  await ctx.createSupplier(SUPPLIER, { documentsRoot: 'browse' });
  await ctx.createTeam(TEAM);
  await createOperator(ctx.deps.db, OPERATOR.name, 'operator', OPERATOR.password);
  await createOperator(ctx.deps.db, VIEWER.name, 'viewer', VIEWER.password);
  ctx.startWorkers();
  base = await ctx.app.listen({ host: '127.0.0.1', port: 0 });
  browser = await launchBrowser();
  mkdirSync(SHOTS, { recursive: true });

  // Twelve good accounts and three with a billing e-mail that is not one: the planted mistakes.
  const { ndjson } = await ctx.cohort({ count: 12, supplier: SUPPLIER, prefix: 'BR', seed: 77 });
  const lines = linesOf(ndjson);
  const spoiled = PLANTED.map((ext, i) => {
    const b = JSON.parse(lines[i]!) as { account: Record<string, unknown>; transactions?: unknown[] };
    b.account.external_account_number = ext;
    b.account.billing_email = 'not an e-mail';
    return JSON.stringify(b);
  });
  cohortFile = path.join(SHOTS, 'cohort.ndjson');
  const { writeFileSync } = await import('node:fs');
  writeFileSync(cohortFile, ndjsonOf([...lines, ...spoiled]));
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await ctx?.close();
});

it('an operator runs, watches, fixes and reconciles a cohort from the browser', { timeout: 180_000 }, async () => {
  const signInPage = watch(await browser.newPage());
  await signInPage.goto(`${base}/admin/sign-in`);
  await shot(signInPage, 'sign-in');
  await signInPage.close();

  const page = await signInAs(OPERATOR);

  // Upload, with the workers of the first stage held, so the batch is seen running and then finishing live.
  await ctx.deps.queues.validate.pause();
  await page.getByRole('link', { name: 'Upload a cohort' }).click();
  await page.getByLabel('Supplier').selectOption(SUPPLIER);
  await page.getByLabel('Operations team').selectOption(TEAM);
  await page.getByLabel('File').setInputFiles(cohortFile);
  await shot(page, 'upload');
  await page.getByRole('button', { name: 'Upload and start' }).click();
  await page.waitForURL(/\/admin\/batches\/[0-9a-f-]{36}$/);
  batchId = page.url().split('/').at(-1)!;
  expect(await page.locator('[data-live="state"]').innerText()).toBe('RUNNING');
  expect(await page.locator('.live').innerText()).toBe('live');
  await shot(page, 'batch-running');
  // The service's clock (a test clock, set when the context started) says when the batch ends: now, for a true rate.
  ctx.clock.set(new Date());
  await ctx.deps.queues.validate.resume();
  // The page follows the batch over server-sent events, and shows how it ended without a manual reload.
  await page.locator('[data-live="state"]', { hasText: 'COMPLETED_WITH_ERRORS' }).waitFor({ timeout: LONG });
  expect(await page.locator('[data-live="succeeded"]').innerText()).toBe('12');
  expect(await page.locator('[data-live="failed"]').innerText()).toBe('3');
  expect(await page.locator('[data-stage="extras"] [data-k="completed"]').innerText()).toBe('12');
  await shot(page, 'batch');

  // Its failures, grouped by code, each with an example attr.
  const group = page.locator('tr[data-code="account_failed_validation"]');
  expect(await group.locator('td').nth(2).innerText()).toBe('3');
  expect(await group.locator('td').nth(3).innerText()).toBe('billing_email');

  // The CSV of failures, downloaded as a file.
  const [download] = await Promise.all([page.waitForEvent('download'), page.getByTestId('failures-csv').click()]);
  const csv = readFileSync((await download.path())!, 'utf8').trim().split('\n');
  expect(csv[0]).toBe('line,external_account_number,stage,state,code,attr,detail');
  expect(csv.slice(1).map((l) => l.split(',')[1]).sort()).toEqual(PLANTED);

  // Retry that code, behind a confirmation.
  await group.getByRole('link', { name: 'Retry these' }).click();
  expect(await page.locator('#confirm-question').innerText()).toContain('Retry the 3 failed item(s) with code account_failed_validation');
  await shot(page, 'retry-confirm');
  await page.getByTestId('confirm').click();
  await page.waitForURL(`${base}/admin/batches/${batchId}`);
  await expect.poll(async () => (await ctx.status(batchId)).state, { timeout: LONG }).toBe('COMPLETED_WITH_ERRORS');
  const rounds = await ctx.deps.db.selectFrom('batch_items').select(['external_account_number', 'round']).where('batch_id', '=', batchId).where('external_account_number', 'in', PLANTED).execute();
  expect(rounds.map((r) => r.round)).toEqual([1, 1, 1]);

  // The reconciliation: balanced, to the penny.
  await page.goto(`${base}/admin/batches/${batchId}`);
  await page.getByRole('link', { name: 'Reconciliation' }).click();
  expect(await page.getByTestId('verdict').innerText()).toMatch(/^Balanced/);
  await shot(page, 'reconciliation');

  // An account, the suppliers, the audit log (which names the operator) and the queues.
  await page.goto(`${base}/admin/batches/${batchId}?search=BR-BAD-1`);
  await page.getByRole('link', { name: 'BR-BAD-1' }).click();
  expect(await page.locator('h1').innerText()).toContain('BR-BAD-1');
  await page.goto(`${base}/admin/batches/${batchId}?state=succeeded`);
  await page.locator('table.items a').first().click();
  expect(await page.getByTestId('service-account-number').innerText()).toMatch(/^A-[0-9A-F]+$/);
  await shot(page, 'account');
  await page.getByRole('link', { name: 'Suppliers' }).click();
  await shot(page, 'suppliers');
  await page.getByRole('link', { name: SUPPLIER, exact: true }).click();
  await shot(page, 'supplier');
  await page.getByRole('link', { name: 'Audit log' }).click();
  expect(await page.locator('table.audit tbody tr').first().innerText()).toMatch(new RegExp(`operator\\s+${OPERATOR.name}\\s+batch\\.retry`));
  await shot(page, 'audit');
  await page.getByRole('link', { name: 'Batches', exact: true }).click();
  await shot(page, 'batches');
  await page.goto(`${base}/admin/queues`);
  await page.getByText('Data import queues').first().waitFor();
  await shot(page, 'queues');

  // A form sent without its CSRF token (as a forged one would be) is refused, and changes nothing.
  await page.goto(`${base}/admin/suppliers/${SUPPLIER}/status?status=PAUSED`);
  await page.locator('input[name="_csrf"]').evaluateAll((inputs) => inputs.forEach((i) => i.remove()));
  await page.getByTestId('confirm').click();
  expect(await page.locator('.error').innerText()).toContain('did not come from this console');
  await shot(page, 'csrf-refused');
  expect((await ctx.deps.db.selectFrom('import_suppliers').select('status').where('code', '=', SUPPLIER).executeTakeFirstOrThrow()).status).toBe('ONGOING');

  expect(problems).toEqual([]);
});

it('a viewer sees the same batch and cannot act on it', { timeout: 60_000 }, async () => {
  const page = await signInAs(VIEWER);
  await page.goto(`${base}/admin/batches/${batchId}`);
  expect(await page.locator('tr[data-code="account_failed_validation"]').count()).toBe(1);
  expect(await page.getByRole('link', { name: /Retry/ }).count()).toBe(0);
  expect(await page.getByRole('link', { name: 'Upload a cohort' }).count()).toBe(0);
  await shot(page, 'viewer-batch');
  // Typing the action's address gets a refusal, not the form.
  const res = await page.goto(`${base}/admin/batches/${batchId}/retry`);
  expect(res!.status()).toBe(403);
  expect(await page.locator('.error').innerText()).toContain('needs the operator role');
  await shot(page, 'viewer-refused');
  // And a POST with a valid token of the viewer's own session is refused for the role.
  await page.goto(`${base}/admin/batches/${batchId}`);
  const token = await page.locator('input[name="_csrf"]').first().inputValue();
  const status = await page.evaluate(async ([id, csrf]) => {
    const r = await fetch(`/admin/batches/${id}/cancel`, { method: 'POST', body: new URLSearchParams({ _csrf: csrf }) });
    return r.status;
  }, [batchId, token] as const);
  expect(status).toBe(403);
  const line = await ctx.deps.db.selectFrom('audit_log').select('actor').where('actor', '=', VIEWER.name).executeTakeFirst();
  expect(line).toBeUndefined();
  expect(problems).toEqual([]);
});
