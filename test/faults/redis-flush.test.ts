import { afterAll, beforeAll, expect, it } from 'vitest';
import { createPipelineContext, type PipelineContext } from '../queue/setup.js';
import { countPrefixKeys, ended, expectExactImport, flushPrefixAtomically, pendingJobs, pollStatus } from './helpers.js';

/**
 * PostgreSQL is the source of truth: when Redis loses every key of the deployment (a restart
 * without persistence, a flush), the reconciler re-enqueues every open item from batch_items and
 * the batch ends exactly as if nothing had happened. Only this file's prefix is deleted (SCAN +
 * DEL inside one Lua script, so the loss is atomic like a real flush): other test files share this Redis.
 */

let ctx: PipelineContext;

beforeAll(async () => {
  ctx = await createPipelineContext();
  await ctx.createSupplier('FLUSH', { documentsRoot: 'flush' });
  await ctx.createSupplier('LIVE', { documentsRoot: 'live' });
  await ctx.createTeam('Team');
});
afterAll(async () => ctx?.close());

it('workers stopped, every key of the prefix deleted, reconcile, workers restarted: the batch completes exactly', async ({ annotate }) => {
  const COUNT = 120;
  const { ndjson, accounts } = await ctx.cohort({ count: COUNT, supplier: 'FLUSH', prefix: 'FL', seed: 11 });
  let set = ctx.startWorkers();
  const { batch_id } = await ctx.upload(ndjson, { supplier: 'FLUSH', team: 'Team' });
  await pollStatus(ctx, batch_id, (s) => s.succeeded >= 20, '20 items to succeed', { timeoutMs: 60_000 });
  await set.close(10_000);

  // Workers are stopped: the batch stands still, part done.
  const before = await pollStatus(ctx, batch_id, () => true, 'the status');
  expect(before.state).toBe('RUNNING');
  expect(before.succeeded).toBeGreaterThanOrEqual(20);
  expect(before.succeeded).toBeLessThan(COUNT);
  expect(before.failed).toBe(0);
  const open = COUNT - before.succeeded;
  // Redis loses everything this deployment had.
  const keysBefore = await countPrefixKeys(ctx.config.redisUrl, ctx.config.redisPrefix);
  expect(await flushPrefixAtomically(ctx.config.redisUrl, ctx.config.redisPrefix)).toBe(keysBefore);
  expect(await countPrefixKeys(ctx.config.redisUrl, ctx.config.redisPrefix)).toBe(0);
  expect(await pendingJobs(ctx)).toBe(0);

  // The reconciler re-enqueues exactly the open items, one job each.
  const repaired = await ctx.built.services.batches.reconcile();
  expect(repaired).toEqual({ batches: 1, openItems: open, jobsRecreated: open });
  expect(await pendingJobs(ctx)).toBe(open);
  // Reconciling again adds nothing, and says so: job ids are deterministic.
  expect(await ctx.built.services.batches.reconcile(batch_id)).toEqual({ batches: 1, openItems: open, jobsRecreated: 0 });
  expect(await pendingJobs(ctx)).toBe(open);

  set = ctx.startWorkers();
  const end = await pollStatus(ctx, batch_id, ended, 'the batch to end', { timeoutMs: 90_000 });
  expect(end).toMatchObject({ state: 'COMPLETED', total_items: COUNT, succeeded: COUNT, failed: 0, cancelled: 0 });
  const figures = await expectExactImport(ctx, 'FLUSH', accounts, batch_id);
  await annotate(`[redis-flush stopped] ${keysBefore} keys deleted with ${before.succeeded}/${COUNT} done; re-created ${repaired.jobsRecreated} jobs for ${repaired.openItems} open items; end ${JSON.stringify(figures)}`);
  await set.close(10_000);
}, 120_000);

it('every key deleted while workers run, then reconcile (as `importctl batch reconcile` would): the batch completes exactly', async ({ annotate }) => {
  const COUNT = 80;
  const { ndjson, accounts } = await ctx.cohort({ count: COUNT, supplier: 'LIVE', prefix: 'LV', seed: 12 });
  const set = ctx.startWorkers();
  const { batch_id } = await ctx.upload(ndjson, { supplier: 'LIVE', team: 'Team' });
  await pollStatus(ctx, batch_id, (s) => s.succeeded >= 15, '15 items to succeed', { timeoutMs: 60_000 });

  // Jobs vanish under running workers, active ones included.
  expect(await flushPrefixAtomically(ctx.config.redisUrl, ctx.config.redisPrefix)).toBeGreaterThan(0);
  const atFlush = await pollStatus(ctx, batch_id, () => true, 'the status');
  expect(atFlush.state).toBe('RUNNING');

  const repaired = await ctx.built.services.batches.reconcile(batch_id);
  expect(repaired.batches).toBe(1);
  expect(repaired.jobsRecreated).toBeGreaterThan(0);
  expect(repaired.jobsRecreated).toBeLessThanOrEqual(repaired.openItems);

  const end = await pollStatus(ctx, batch_id, ended, 'the batch to end', { timeoutMs: 90_000 });
  expect(end).toMatchObject({ state: 'COMPLETED', total_items: COUNT, succeeded: COUNT, failed: 0, cancelled: 0 });
  const figures = await expectExactImport(ctx, 'LIVE', accounts, batch_id);
  await annotate(`[redis-flush live] keys deleted with ${atFlush.succeeded}/${COUNT} done; re-created ${repaired.jobsRecreated} jobs for ${repaired.openItems} open items; end ${JSON.stringify(figures)}`);
  await set.close(10_000);
}, 120_000);
