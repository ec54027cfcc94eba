import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { pollUntil } from '../helpers/poll.js';
import { createPipelineContext, type PipelineContext } from '../queue/setup.js';
import { countPrefixKeys, ended, expectEnvelope, expectExactImport, pollStatus, startOwnRedis, type OwnRedis } from './helpers.js';

/**
 * Redis restarts (with persistence: append-only file) in the middle of a batch. The service was
 * not told anything: its ioredis clients (maxRetriesPerRequest null) hold commands while Redis is
 * away and reconnect by themselves; BullMQ workers resume; the batch ends exactly. The redis-server
 * is this file's own, on a free loopback port, so restarting it disturbs no other test file.
 */

let redis: OwnRedis;
let dir: string;
let ctx: PipelineContext;

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'di-redis-'));
  redis = await startOwnRedis(dir);
  ctx = await createPipelineContext({ env: { REDIS_URL: redis.url, PROCESS_CONCURRENCY_LIMIT: '4', PROCESS_PERMIT_TTL_MS: '3000' } });
  await ctx.createSupplier('RR', { documentsRoot: 'rr' });
  await ctx.createTeam('Team');
});
afterAll(async () => {
  try {
    // Redis must be up for a clean close (quit, prefix cleanup); start it if a failed test left it down.
    await redis?.start().catch(() => undefined);
    await ctx?.close();
  } finally {
    await redis?.kill();
    if (dir) rmSync(dir, { recursive: true, force: true });
  }
});

const get = (url: string) => ctx.app.inject({ method: 'GET', url, headers: ctx.auth });

it('the service runs on the redis-server given by REDIS_URL (the override reaches config, queues and workers)', async () => {
  expect(ctx.config.redisUrl).toBe(redis.url);
  expect(redis.url).not.toBe(inject('redisUrl'));
  const ready = await get('/readyz');
  expect(ready.statusCode, ready.body).toBe(200);
});

it('Redis restarted mid-batch (SIGTERM, same port and dir): workers and API reconnect, the batch completes exactly', async ({ annotate }) => {
  const COUNT = 100;
  const { ndjson, accounts } = await ctx.cohort({ count: COUNT, supplier: 'RR', prefix: 'RR', seed: 21 });
  const set = ctx.startWorkers();
  const { batch_id } = await ctx.upload(ndjson, { supplier: 'RR', team: 'Team' });
  // Nothing of this deployment in the shared Redis: the jobs live on our server.
  expect(await countPrefixKeys(inject('redisUrl'), ctx.config.redisPrefix)).toBe(0);
  await pollStatus(ctx, batch_id, (s) => s.succeeded >= 20, '20 items to succeed');

  const keysBefore = await countPrefixKeys(redis.url, ctx.config.redisPrefix);
  expect(keysBefore).toBeGreaterThan(0);
  const outageStarted = Date.now();
  await redis.stop();

  // While Redis is away: the batch status (PostgreSQL) still answers, mid-batch.
  const during = await get(`/v1/data-import/batches/${batch_id}/`);
  expect(during.statusCode, during.body).toBe(200);
  const atOutage = during.json() as { state: string; succeeded: number };
  expect(atOutage.state).toBe('RUNNING');
  expect(atOutage.succeeded).toBeLessThan(COUNT);

  await redis.start();
  const outageMs = Date.now() - outageStarted;
  // The append-only file brought the deployment's keys back.
  expect(await countPrefixKeys(redis.url, ctx.config.redisPrefix)).toBeGreaterThan(0);

  // The API's own Redis client is back: readiness (which pings Redis) answers 200 again.
  await pollUntil(async () => (await get('/readyz')).statusCode === 200, { timeoutMs: 15_000, intervalMs: 100, what: '/readyz to answer 200 after the restart' });

  const end = await pollStatus(ctx, batch_id, ended, 'the batch to end', { timeoutMs: 90_000 });
  expect(end).toMatchObject({ state: 'COMPLETED', total_items: COUNT, succeeded: COUNT, failed: 0, cancelled: 0 });
  const figures = await expectExactImport(ctx, 'RR', accounts, batch_id);

  // No processing permit outlives the batch (leases held across the restart were released or expired).
  await pollUntil(async () => (await ctx.deps.permits.inUse()) === 0, { timeoutMs: 10_000, what: 'permits to return to 0' });

  // The producer side reconnected too: a new upload after the restart is enqueued and completes.
  const second = await ctx.cohort({ count: 10, supplier: 'RR', prefix: 'RS', seed: 22 });
  const { batch_id: after } = await ctx.upload(second.ndjson, { supplier: 'RR', team: 'Team' });
  const end2 = await pollStatus(ctx, after, ended, 'the second batch to end', { timeoutMs: 60_000 });
  expect(end2).toMatchObject({ state: 'COMPLETED', succeeded: 10, failed: 0 });

  await annotate(`[redis-restart] restarted with ${atOutage.succeeded}/${COUNT} done (${keysBefore} keys, outage ${outageMs} ms); end ${JSON.stringify(figures)}; second batch 10/10`);
  await set.close(10_000);
}, 240_000);

/**
 * BUG (src/http/routes/system.ts, the /readyz handler): `deps.redis.ping()` goes through the shared
 * ioredis client, created with maxRetriesPerRequest null and the offline queue (src/deps.ts), so while
 * Redis is down the ping is queued until Redis is back: /readyz hangs for the whole outage instead of
 * answering the 503 its own route declares ("A dependency is down") and decisions.md requires
 * ("PostgreSQL or Redis unreachable → 503"). Fix: treat Redis as down unless
 * `deps.redis.status === 'ready'`, and bound the ping (race it with a ~1 s timer → false).
 * Remove `.fails` once fixed.
 */
it('while Redis is down, readiness answers 503 service_unavailable promptly (not a hang, not a 500)', async () => {
  await redis.stop();
  try {
    const started = Date.now();
    const res = await Promise.race([
      get('/readyz'),
      new Promise<null>((resolve) => setTimeout(() => resolve(null), 5_000).unref()),
    ]);
    expect(res, `/readyz gave no answer within 5 s of Redis going down (${Date.now() - started} ms)`).not.toBeNull();
    expectEnvelope(res!, 503, 'service_unavailable');
  } finally {
    await redis.start();
  }
  await pollUntil(async () => (await get('/readyz')).statusCode === 200, { timeoutMs: 15_000, intervalMs: 100, what: '/readyz to answer 200 again' });
}, 60_000);
