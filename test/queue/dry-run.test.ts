import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AccountBundle } from '../../src/cohort/generate.js';
import { IMPORT_TABLES, LONG, SMALL_POOL, api, batchItems, csvRecords, importTableCounts, ndjsonOf, type BatchItem } from './helpers.js';
import { createPipelineContext, type PipelineContext } from './setup.js';

const SUPPLIER = 'DRY';
const TEAM = 'Dry Team';
const VALID = 30;
/** Lines (1-based) of the three invalid accounts and of the one whose transactions fail. */
const INVALID: Record<number, { code: string; attr: string }> = {
  31: { code: 'required', attr: 'supply_addresses.0.supply_postcode' },
  32: { code: 'invalid_postcode', attr: 'billing_postcode' },
  33: { code: 'unknown_field', attr: 'loyalty_points' },
};
const BAD_TRANSACTIONS = 34;
/** Valid accounts without any e-mail address: created without a welcome e-mail. */
const NO_EMAIL = new Set([2, 17]);

let ctx: PipelineContext;
let bundles: AccountBundle[];
let ndjson: string;
const extAt = (line: number) => bundles[line - 1]!.account.external_account_number as string;

beforeAll(async () => {
  ctx = await createPipelineContext({ deps: { dbPoolSize: SMALL_POOL } });
  await ctx.createSupplier(SUPPLIER, { documentsRoot: 'dry', sendCustomerEmails: true });
  await ctx.createTeam(TEAM);
  ctx.startWorkers();

  const cohort = await ctx.cohort({ count: VALID + 4, supplier: SUPPLIER, prefix: 'DR', seed: 4 });
  bundles = cohort.accounts.map((a) => a.bundle);
  for (const line of NO_EMAIL) {
    const account = bundles[line - 1]!.account;
    delete account.billing_email;
    for (const c of account.customers as Array<Record<string, unknown>>) delete c.email;
  }
  delete (bundles[30]!.account.supply_addresses as Array<Record<string, unknown>>)[0]!.supply_postcode;
  bundles[31]!.account.billing_postcode = 'XX1 1XXX';
  bundles[32]!.account.loyalty_points = 120;
  const charge = bundles[BAD_TRANSACTIONS - 1]!.transactions!.find((t) => t.type === 'CHARGE')!;
  charge.reason = 'NOT_A_CHARGE_REASON';
  ndjson = ndjsonOf(bundles.map((b) => JSON.stringify(b)));
}, 120_000);
afterAll(async () => ctx?.close());

const badTransactionIndex = () => bundles[BAD_TRANSACTIONS - 1]!.transactions!.findIndex((t) => t.reason === 'NOT_A_CHARGE_REASON');
const emailJobs = async () => {
  const counts = await ctx.deps.queues.emails.getJobCounts();
  return Object.values(counts).reduce((a, b) => a + b, 0);
};

function expectInvalidAndBadTransactionItems(items: BatchItem[]): void {
  for (const [line, { code, attr }] of Object.entries(INVALID)) {
    const item = items.find((i) => i.line === Number(line))!;
    expect(item, `line ${line}`).toMatchObject({ stage: 'validate', state: 'failed', external_account_number: extAt(Number(line)), service_account_number: null });
    expect(item.error).toMatchObject({ code: 'account_failed_validation', errors: [expect.objectContaining({ code, attr })] });
  }
  const bad = items.find((i) => i.line === BAD_TRANSACTIONS)!;
  expect(bad).toMatchObject({ stage: 'extras', state: 'failed', external_account_number: extAt(BAD_TRANSACTIONS) });
  // The transactions endpoint's own 400 shape: the first failing transaction, with code and attr.
  expect(bad.error).toEqual({
    status: 'TRANSACTION_IMPORT_ERROR',
    error_detail: expect.stringContaining('NOT_A_CHARGE_REASON'),
    transaction_data: expect.objectContaining({ reason: 'NOT_A_CHARGE_REASON' }),
    code: 'invalid_choice',
    attr: `transactions.${badTransactionIndex()}.reason`,
  });
}

describe('a dry-run batch', () => {
  let batchId: string;
  let items: BatchItem[];

  beforeAll(async () => {
    const up = await ctx.upload(ndjson, { supplier: SUPPLIER, team: TEAM, dryRun: true });
    expect(up.total_items).toBe(VALID + 4);
    batchId = up.batch_id;
    await ctx.waitForEnd(batchId, LONG);
    items = await batchItems(ctx, batchId);
  }, 120_000);

  it('leaves no account, no e-mail and no import trace behind', async () => {
    const counts = await importTableCounts(ctx);
    expect(counts).toEqual(Object.fromEntries(IMPORT_TABLES.map((t) => [t, 0])));
    expect(counts.customer_emails).toBe(0);
    expect(await emailJobs()).toBe(0);
  });

  it('reports what would have happened for every item', async () => {
    const status = await ctx.status(batchId);
    expect(status).toMatchObject({ dry_run: true, state: 'COMPLETED_WITH_ERRORS', total_items: VALID + 4, succeeded: VALID, failed: 4 });
    expect(items).toHaveLength(VALID + 4);
    for (const item of items.filter((i) => i.line <= VALID)) {
      expect(item, `line ${item.line}`).toMatchObject({ state: 'succeeded', service_account_number: null, error: null, external_account_number: extAt(item.line) });
    }
    expectInvalidAndBadTransactionItems(items);
  });
});

describe('then a real batch of the same supplier', () => {
  let batchId: string;
  let items: BatchItem[];

  beforeAll(async () => {
    const up = await ctx.upload(ndjson, { supplier: SUPPLIER, team: TEAM });
    batchId = up.batch_id;
    await ctx.waitForEnd(batchId, LONG);
    items = await batchItems(ctx, batchId);
  }, 120_000);

  it('creates the accounts, failing the same items the same way', async () => {
    expect(await ctx.status(batchId)).toMatchObject({ dry_run: false, state: 'COMPLETED_WITH_ERRORS', succeeded: VALID, failed: 4 });
    for (const item of items.filter((i) => i.line <= VALID)) {
      expect(item, `line ${item.line}`).toMatchObject({ state: 'succeeded', stage: 'extras', error: null });
      expect(item.service_account_number).toMatch(/^A-[0-9A-F]{8}$/);
    }
    expectInvalidAndBadTransactionItems(items);
    // The account whose transactions fail was created (process succeeded before extras failed).
    const accounts = await ctx.deps.db.selectFrom('accounts').select(['external_account_number', 'number']).execute();
    expect(accounts.map((a) => a.external_account_number).sort()).toEqual(
      [...Array.from({ length: VALID }, (_, i) => extAt(i + 1)), extAt(BAD_TRANSACTIONS)].sort(),
    );
    // The failed item's error is what the transactions endpoint answers for that account.
    const b = bundles[BAD_TRANSACTIONS - 1]!;
    const rest = await api(ctx).post('/v1/data-import/transactions/create/', {
      import_supplier: SUPPLIER,
      external_account_number: extAt(BAD_TRANSACTIONS),
      transactions: b.transactions,
    });
    expect(rest.statusCode).toBe(400);
    expect(items.find((i) => i.line === BAD_TRANSACTIONS)!.error).toEqual(rest.json());
  });

  it('lists the failures as CSV with their code and attr, whatever the shape of the stage\'s error', async () => {
    const res = await api(ctx).get(`/v1/data-import/batches/${batchId}/items/?state=failed`, { accept: 'text/csv' });
    expect(res.statusCode).toBe(200);
    const { records } = csvRecords(res.body);
    expect(records.map((r) => Number(r.line))).toEqual([31, 32, 33, BAD_TRANSACTIONS]);
    for (const [line, { code, attr }] of Object.entries(INVALID)) {
      expect(records.find((r) => r.line === line)).toMatchObject({ stage: 'validate', state: 'failed', code, attr });
    }
    const bad = records.find((r) => Number(r.line) === BAD_TRANSACTIONS)!;
    expect(bad).toMatchObject({ stage: 'extras', state: 'failed', code: 'invalid_choice', attr: `transactions.${badTransactionIndex()}.reason` });
    for (const line of Object.keys(INVALID)) expect(records.find((r) => r.line === line)!.detail).not.toBe('');
  });

  // The transactions 400 shape carries its text as `error_detail` (not `detail`): the CSV row must show it.
  it("gives the row of a transactions failure that error's detail", async () => {
    const res = await api(ctx).get(`/v1/data-import/batches/${batchId}/items/?state=failed`, { accept: 'text/csv' });
    const bad = csvRecords(res.body).records.find((r) => Number(r.line) === BAD_TRANSACTIONS)!;
    const error = items.find((i) => i.line === BAD_TRANSACTIONS)!.error!;
    expect(error.error_detail).toEqual(expect.stringContaining('NOT_A_CHARGE_REASON'));
    expect(bad.detail).toBe(error.error_detail);
  });

  it('enqueues exactly one welcome e-mail per created account that has an e-mail address', async () => {
    const rows = await ctx.deps.db
      .selectFrom('customer_emails as e')
      .innerJoin('accounts as a', 'a.id', 'e.account_id')
      .select(['a.external_account_number', 'e.account_id', 'e.kind', 'e.recipient', 'e.sent_at'])
      .execute();
    const withEmail = [...Array.from({ length: VALID }, (_, i) => i + 1).filter((l) => !NO_EMAIL.has(l)), BAD_TRANSACTIONS];
    expect(rows.map((r) => r.external_account_number).sort()).toEqual(withEmail.map(extAt).sort());
    for (const r of rows) {
      const line = bundles.findIndex((b) => b.account.external_account_number === r.external_account_number) + 1;
      expect(r).toMatchObject({ kind: 'WELCOME', recipient: bundles[line - 1]!.account.billing_email, sent_at: null });
    }
    // No SMTP_URL in tests: the e-mail jobs wait unsent, one per row, keyed by the account.
    const jobs = await ctx.deps.queues.emails.getJobs(['waiting', 'delayed', 'active', 'completed', 'failed', 'prioritized'], 0, -1);
    expect(jobs.map((j) => j.id).sort()).toEqual(rows.map((r) => `welcome.${r.account_id}`).sort());
  });

  it('never writes a second e-mail for an account, however often the cohort is uploaded', async () => {
    const before = await importTableCounts(ctx);
    const jobs = await emailJobs();
    const up = await ctx.upload(ndjson, { supplier: SUPPLIER, team: TEAM });
    expect(await ctx.waitForEnd(up.batch_id, LONG)).toMatchObject({ succeeded: VALID, failed: 4 });
    // A retry of the extras failure runs it again without creating anything either.
    const res = await api(ctx).post(`/v1/data-import/batches/${up.batch_id}/retry/`);
    expect(res.json()).toEqual({ requeued: 4 });
    expect(await ctx.waitForEnd(up.batch_id, LONG)).toMatchObject({ succeeded: VALID, failed: 4 });
    expect(await importTableCounts(ctx)).toEqual(before);
    expect(await emailJobs()).toBe(jobs);
  }, 240_000);
});
