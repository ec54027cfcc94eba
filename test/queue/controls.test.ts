import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { QueueName } from '../../src/queue/contract.js';
import type { WorkerSet } from '../../src/queue/workers.js';
import {
  LONG,
  SMALL_POOL,
  accountHoldings,
  api,
  batchItems,
  batchStatus,
  countSql,
  importTableCounts,
  setSupplierStatus,
  waitForStatus,
  type BatchStatusBody,
} from './helpers.js';
import { createPipelineContext, type PipelineContext } from './setup.js';

const TEAM = 'Controls Team';

let ctx: PipelineContext;
let running: WorkerSet[] = [];

/** Workers for these queues only; every test stops its own, so the next starts from none. */
const workers = (queues: readonly QueueName[]): WorkerSet => {
  const set = ctx.startWorkers(queues);
  running.push(set);
  return set;
};

beforeAll(async () => {
  // Two validate jobs at a time: the cancel tests hold them active, and they must not take every pooled connection.
  ctx = await createPipelineContext({ env: { WORKER_CONCURRENCY_VALIDATE: '2' }, deps: { dbPoolSize: SMALL_POOL } });
  await ctx.createTeam(TEAM);
});
afterEach(async () => {
  await Promise.all(running.map((s) => s.close(5_000)));
  running = [];
});
afterAll(async () => ctx?.close());

const retry = async (batchId: string, body?: unknown) => {
  const res = await api(ctx).post(`/v1/data-import/batches/${batchId}/retry/`, body);
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as { requeued: number };
};
const cancel = async (batchId: string): Promise<BatchStatusBody> => {
  const res = await api(ctx).post(`/v1/data-import/batches/${batchId}/cancel/`);
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as BatchStatusBody;
};
const accountsOf = (supplier: string) =>
  countSql(ctx, 'SELECT count(*) AS n FROM accounts a JOIN import_suppliers s ON s.id = a.import_supplier_id WHERE s.code = $1', [supplier]);
const processesOf = (supplier: string) =>
  countSql(ctx, 'SELECT count(*) AS n FROM account_import_processes p JOIN import_suppliers s ON s.id = p.import_supplier_id WHERE s.code = $1', [supplier]);

describe('a supplier paused mid-batch', () => {
  const SUPPLIER = 'PAUSE';
  const COUNT = 40;

  it('fails the items at process with import_supplier_migration_not_ongoing; set Ongoing and retry: all succeed, nothing duplicated', async () => {
    await ctx.createSupplier(SUPPLIER, { documentsRoot: 'pause' });
    const { ndjson, accounts } = await ctx.cohort({ count: COUNT, supplier: SUPPLIER, prefix: 'PA', seed: 5 });
    const exts = accounts.map((a) => a.bundle.account.external_account_number as string);

    // Only validate and stage run: every item piles up waiting at process.
    workers(['validate', 'stage']);
    const { batch_id } = await ctx.upload(ndjson, { supplier: SUPPLIER, team: TEAM });
    await waitForStatus(ctx, batch_id, (s) => s.stages.process.waiting === COUNT, `${COUNT} items waiting at process`);
    expect(await processesOf(SUPPLIER)).toBe(COUNT);
    expect(await accountsOf(SUPPLIER)).toBe(0);
    const pending = await batchItems(ctx, batch_id, 'pending');
    expect(pending).toHaveLength(COUNT);
    expect(pending.every((i) => i.stage === 'process' && i.state === 'waiting')).toBe(true);
    expect(await batchItems(ctx, batch_id, 'failed')).toEqual([]);

    await setSupplierStatus(ctx, SUPPLIER, 'PAUSED');
    workers(['process', 'extras']);
    const paused = await ctx.waitForEnd(batch_id, LONG);
    expect(paused).toMatchObject({ state: 'COMPLETED_WITH_ERRORS', total_items: COUNT, succeeded: 0, failed: COUNT });
    expect(await accountsOf(SUPPLIER)).toBe(0);

    const failed = await batchItems(ctx, batch_id, 'failed');
    expect(failed).toHaveLength(COUNT);
    for (const item of failed) {
      expect(item).toMatchObject({ stage: 'process', state: 'failed', service_account_number: null });
      expect(item.error).toMatchObject({
        code: 'import_supplier_migration_not_ongoing',
        errors: [{ code: 'import_supplier_migration_not_ongoing', attr: 'import_supplier_code' }],
      });
    }
    // The same envelope the process endpoint answers for that account.
    const rest = await api(ctx).post('/v1/data-import/account-import-process/process/', {
      external_account_number: exts[0],
      import_supplier_code: SUPPLIER,
      operations_team_name: TEAM,
    });
    expect(rest.statusCode).toBe(400);
    expect(failed.find((i) => i.external_account_number === exts[0])!.error).toEqual(rest.json());

    await setSupplierStatus(ctx, SUPPLIER, 'ONGOING');

    // A retry naming some accounts requeues only those that failed (an unknown number is ignored),
    // also when the list is longer than one statement's 65,535 parameters.
    const some = exts.slice(0, 5);
    const unknown = Array.from({ length: 70_000 }, (_, i) => `PA-NO-SUCH-ACCOUNT-${i}`);
    expect(await retry(batch_id, { external_account_numbers: [...unknown.slice(0, 35_000), ...some, ...unknown.slice(35_000)] })).toEqual({ requeued: 5 });
    const partial = await ctx.waitForEnd(batch_id, LONG);
    expect(partial).toMatchObject({ state: 'COMPLETED_WITH_ERRORS', succeeded: 5, failed: COUNT - 5 });
    const afterPartial = await batchItems(ctx, batch_id, 'succeeded');
    expect(afterPartial.map((i) => i.external_account_number).sort()).toEqual([...some].sort());
    expect(await accountsOf(SUPPLIER)).toBe(5);
    // Naming an account that already succeeded requeues nothing.
    expect(await retry(batch_id, { external_account_numbers: [some[0]] })).toEqual({ requeued: 0 });
    expect(await batchStatus(ctx, batch_id)).toMatchObject({ state: 'COMPLETED_WITH_ERRORS', succeeded: 5 });

    // Then everything else.
    expect(await retry(batch_id)).toEqual({ requeued: COUNT - 5 });
    const end = await ctx.waitForEnd(batch_id, LONG);
    expect(end).toMatchObject({ state: 'COMPLETED', total_items: COUNT, succeeded: COUNT, failed: 0 });
    expect(end.finished_at).not.toBeNull();

    const items = await batchItems(ctx, batch_id);
    const holdings = await accountHoldings(ctx, SUPPLIER);
    expect(holdings.size).toBe(COUNT);
    for (const item of items) {
      const rows = holdings.get(item.external_account_number!)!;
      expect(rows).toHaveLength(1);
      expect(item).toMatchObject({ state: 'succeeded', stage: 'extras', error: null, service_account_number: rows[0]!.number });
      expect(rows[0]).toMatchObject({ imported_notes: 3, moved_notes: 1, transactions: 10, statements: 2, payment_instructions: 1 });
    }

    // Re-running a finished batch requeues nothing and changes nothing.
    const before = await importTableCounts(ctx);
    expect(await retry(batch_id)).toEqual({ requeued: 0 });
    expect(await batchStatus(ctx, batch_id)).toMatchObject({ state: 'COMPLETED', succeeded: COUNT, failed: 0 });
    expect(await importTableCounts(ctx)).toEqual(before);
  }, 240_000);

  it('refuses a retry body that is not a list of account numbers, and a batch that does not exist', async () => {
    const { batch_id } = await ctx.upload('not json\n', { supplier: SUPPLIER, team: TEAM });
    const res = await api(ctx).post(`/v1/data-import/batches/${batch_id}/retry/`, { external_account_numbers: [] });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ code: 'invalid_request' });
    // A parse failure cannot be retried: there is no bundle to run.
    expect(await retry(batch_id)).toEqual({ requeued: 0 });
    const missing = await api(ctx).post(`/v1/data-import/batches/${randomUUID()}/retry/`);
    expect(missing.statusCode).toBe(404);
    expect(missing.json()).toMatchObject({ code: 'batch_not_found' });
  });
});

describe('cancel', () => {
  /**
   * Holds every validate job that reaches the meter-point check: validation reads
   * meter_point_registrations, which nothing the batch endpoints do touches.
   */
  async function holdValidation(): Promise<{ release: () => Promise<void> }> {
    const client = new pg.Client({ connectionString: ctx.config.databaseUrl });
    await client.connect();
    await client.query('BEGIN');
    await client.query('LOCK TABLE meter_point_registrations IN ACCESS EXCLUSIVE MODE');
    return {
      release: async () => {
        await client.query('ROLLBACK');
        await client.end();
      },
    };
  }

  /** Uploads 50 accounts with only validate workers, and cancels while two validate jobs are held active. */
  async function cancelWithTwoActive(supplier: string, prefix: string) {
    await ctx.createSupplier(supplier, { documentsRoot: supplier.toLowerCase() });
    const { ndjson } = await ctx.cohort({ count: 50, supplier, prefix, seed: 9 });
    const hold = await holdValidation();
    try {
      workers(['validate']);
      const { batch_id } = await ctx.upload(ndjson, { supplier, team: TEAM });
      await waitForStatus(ctx, batch_id, (s) => s.stages.validate.active === 2, 'two validate jobs held active');
      const atCancel = await cancel(batch_id);
      // Not yet started: cancelled at once. Active: left to finish their step, so the batch still runs.
      expect(atCancel).toMatchObject({ state: 'RUNNING', cancelled: 48, succeeded: 0, failed: 0 });
      expect(atCancel.stages.validate).toMatchObject({ active: 2, waiting: 0, delayed: 0 });
      const items = await batchItems(ctx, batch_id);
      expect(items.filter((i) => i.state === 'cancelled')).toHaveLength(48);
      expect(items.filter((i) => i.state === 'active').map((i) => i.stage)).toEqual(['validate', 'validate']);
      return { batch_id, release: hold.release };
    } catch (err) {
      await hold.release();
      throw err;
    }
  }

  it('cancels items not yet started; the batch is CANCELLED once the active ones are done; nothing at later stages runs', async () => {
    const { batch_id, release } = await cancelWithTwoActive('CANC', 'CA');
    await release();
    // The later stages' workers find nothing to do but finish the cancellation.
    workers(['stage', 'process', 'extras']);
    const end = await ctx.waitForEnd(batch_id, LONG);
    expect(end).toMatchObject({ state: 'CANCELLED', total_items: 50, succeeded: 0, failed: 0, cancelled: 50 });
    expect(end.finished_at).not.toBeNull();
    expect((await batchItems(ctx, batch_id)).every((i) => i.state === 'cancelled')).toBe(true);
    expect(await processesOf('CANC')).toBe(0);
    expect(await accountsOf('CANC')).toBe(0);
    // Cancelling again changes nothing.
    expect(await cancel(batch_id)).toMatchObject({ state: 'CANCELLED', cancelled: 50 });
  }, 120_000);

  // The contract: "items not yet started become CANCELLED (state CANCELLED on the batch once nothing is
  // active)". An item whose step was in flight when the cancel came must stop after that step, not move
  // on as `waiting` (with only validate workers running, the batch would then stay RUNNING for ever).
  it('with only validate workers running, the batch is CANCELLED as soon as nothing is active', async () => {
    const { batch_id, release } = await cancelWithTwoActive('CANV', 'CV');
    await release();
    const settled = await waitForStatus(ctx, batch_id, (s) => s.stages.validate.active === 0, 'the held validate jobs to finish');
    // Nothing is active any more (no stage, process or extras worker runs)...
    expect(STAGES_ACTIVE(settled)).toBe(0);
    // ...so the batch has ended, every item cancelled.
    const end = await waitForStatus(ctx, batch_id, (s) => s.state !== 'RUNNING', 'the batch to end', 3_000).catch(() => batchStatus(ctx, batch_id));
    expect(end).toMatchObject({ state: 'CANCELLED', cancelled: 50 });
    expect(await processesOf('CANV')).toBe(0);
  }, 120_000);

  it('keeps what already succeeded', async () => {
    const SUPPLIER = 'CANS';
    const COUNT = 40;
    await ctx.createSupplier(SUPPLIER, { documentsRoot: 'cans' });
    const { ndjson } = await ctx.cohort({ count: COUNT, supplier: SUPPLIER, prefix: 'CS', seed: 13 });
    workers(['validate', 'stage', 'process', 'extras']);
    const { batch_id } = await ctx.upload(ndjson, { supplier: SUPPLIER, team: TEAM });
    await waitForStatus(ctx, batch_id, (s) => s.succeeded >= 3, 'three items to succeed');
    await cancel(batch_id);
    const end = await ctx.waitForEnd(batch_id, LONG);
    expect(end.state).toBe('CANCELLED');
    const items = await batchItems(ctx, batch_id);
    const succeeded = items.filter((i) => i.state === 'succeeded');
    expect(succeeded.length).toBeGreaterThanOrEqual(3);
    expect(end).toMatchObject({ succeeded: succeeded.length, failed: 0, cancelled: COUNT - succeeded.length });
    expect(items.every((i) => i.state === 'succeeded' || i.state === 'cancelled')).toBe(true);
    const holdings = await accountHoldings(ctx, SUPPLIER);
    for (const item of succeeded) {
      const rows = holdings.get(item.external_account_number!)!;
      expect(rows).toHaveLength(1);
      expect(rows[0]).toMatchObject({ number: item.service_account_number, imported_notes: 3, transactions: 10, statements: 2, payment_instructions: 1 });
    }
    // Anything created belongs to an item that got at least as far as process; never more than one per account.
    expect(holdings.size).toBeGreaterThanOrEqual(succeeded.length);
    for (const rows of holdings.values()) expect(rows).toHaveLength(1);
  }, 120_000);
});

const STAGES_ACTIVE = (s: BatchStatusBody): number => Object.values(s.stages).reduce((a, c) => a + c.active, 0);
