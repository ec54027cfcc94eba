import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import { createProcessPermits, type Permit, type ProcessPermits } from '../../src/queue/semaphore.js';
import { createTestContext, deleteRedisPrefix, type TestContext } from '../helpers/context.js';
import { accountPayload } from '../helpers/fixtures.js';
import { pollUntil } from '../helpers/poll.js';
import { batchItems } from '../queue/helpers.js';
import { createPipelineContext, type PipelineContext } from '../queue/setup.js';
import { startTcpProxy, type TcpProxy } from './helpers.js';

/** The test Redis (with its credentials, if any) reached through the proxy's port instead. */
function throughProxy(port: number): string {
  const url = new URL(redisUrl());
  url.host = `127.0.0.1:${String(port)}`;
  return url.toString();
}

/**
 * Issue 10, item 11: a processing permit whose lease was lost during a stall (Redis unreachable, or
 * the event loop blocked, longer than PROCESS_PERMIT_TTL_MS) must not let more accounts commit than
 * PROCESS_CONCURRENCY_LIMIT. Another instance takes the expired lease, as it should; the stalled
 * holder, still "working", learns it lost its permit (its signal aborts, assertHeld() refuses) and
 * its account rolls back with 503 processing_permit_lost instead of committing beside the new holder.
 *
 * Measured here: the holders that would commit at the same moment (assertHeld() resolves) against
 * the limit. Before the fix a stalled holder had no way to know, so that was limit + 1.
 */

const log = createLogger('silent');
const redisUrl = () => inject('redisUrl');

/** One instance's permits, on its own Redis connection, configured as the service's request connection (src/redis.ts). */
function instance(url: string, prefix: string, limit: number, ttlMs: number): { permits: ProcessPermits; redis: Redis } {
  const redis = new Redis(url, { enableOfflineQueue: false, maxRetriesPerRequest: 1, commandTimeout: 2_000, connectTimeout: 2_000 });
  redis.on('error', () => undefined);
  return { permits: createProcessPermits(redis, { prefix, limit, ttlMs, log }), redis };
}

const ready = (r: Redis) => pollUntil(async () => r.status === 'ready', { timeoutMs: 10_000, what: 'a Redis connection to be ready' });

/** Whether the holder would commit now: its permit's check right before COMMIT passes. */
const wouldCommit = (p: Permit): Promise<boolean> => p.assertHeld().then(
  () => true,
  () => false,
);

/** How many of `holders` would commit at this moment. */
const committing = async (holders: Permit[]): Promise<number> => (await Promise.all(holders.map(wouldCommit))).filter(Boolean).length;

/** Polls until a session of the database waits for a row lock (the guarded call is blocked inside its transaction). */
const blockedOnLock = (lock: pg.Client, what: string) =>
  pollUntil(
    async () => Number((await lock.query<{ n: string }>("SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'")).rows[0]!.n) > 0,
    { timeoutMs: 30_000, what },
  );

/** Polls until `permits` hands out a permit (the expired lease is taken over). */
const acquireWhenFree = (permits: ProcessPermits, what: string): Promise<Permit> =>
  pollUntil(() => permits.tryAcquire(), { timeoutMs: 10_000, intervalMs: 20, what });

describe('the semaphore: a holder that stalls past its lease', () => {
  const cleanups: Array<() => Promise<unknown>> = [];
  let prefix: string;
  beforeAll(() => {
    prefix = `t${randomBytes(5).toString('hex')}`;
  });
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
    await deleteRedisPrefix(redisUrl(), prefix);
  });
  const track = <T extends { redis: Redis }>(i: T): T => {
    cleanups.push(async () => i.redis.disconnect());
    return i;
  };

  it('Redis unreachable for one holder longer than the TTL: the others take its lease, it learns and does not commit (limit 2)', async ({ annotate }) => {
    const LIMIT = 2;
    const TTL = 1_000;
    const proxy = await startTcpProxy(Number(new URL(redisUrl()).port || 6379));
    cleanups.push(() => proxy.close());
    const a = track(instance(throughProxy(proxy.port), prefix, LIMIT, TTL));
    const b = track(instance(redisUrl(), prefix, LIMIT, TTL));
    const c = track(instance(redisUrl(), prefix, LIMIT, TTL));
    await Promise.all([ready(a.redis), ready(b.redis), ready(c.redis)]);

    const pa = (await a.permits.tryAcquire())!;
    const pb = (await b.permits.tryAcquire())!;
    expect([pa, pb].every(Boolean)).toBe(true);
    cleanups.push(() => pa.release(), () => pb.release());
    expect(await c.permits.tryAcquire()).toBeNull();
    expect(await committing([pa, pb])).toBe(2);

    // A's Redis goes away while A keeps working; B refreshes as usual.
    await proxy.cut();
    const pc = await acquireWhenFree(c.permits, "A's expired lease to be taken over");
    cleanups.push(() => pc.release());
    const redisView = await b.permits.inUse();
    // Still cut off: A is about to commit. Only B and C may.
    const atOnce = await committing([pa, pb, pc]);
    const learned = pa.signal.aborted;
    await annotate(`[permit lease, Redis cut] limit ${LIMIT}: ${atOnce} holders would commit at once; Redis counts ${redisView}; A's signal aborted: ${learned}`);
    expect(redisView).toBe(LIMIT);
    expect(atOnce).toBe(LIMIT);
    await expect(pa.assertHeld()).rejects.toMatchObject({ status: 503, code: 'processing_permit_lost' });
    expect(pa.signal.aborted).toBe(true);
    expect(pa.signal.reason).toMatchObject({ status: 503, code: 'processing_permit_lost' });

    // Redis back for A: the lease stays lost (C holds it), and A's release does not free C's.
    await proxy.restore();
    await ready(a.redis);
    expect(await wouldCommit(pa)).toBe(false);
    await pa.release();
    expect(await b.permits.inUse()).toBe(LIMIT);
    expect(await committing([pb, pc])).toBe(2);
    expect(await c.permits.tryAcquire()).toBeNull();
  });

  it('every holder cut off, three times over: the overshoot does not stack (at most the limit would commit)', async ({ annotate }) => {
    const LIMIT = 2;
    const TTL = 1_000;
    const GENERATIONS = 3;
    const direct = track(instance(redisUrl(), prefix, LIMIT, TTL));
    await ready(direct.redis);
    const holders: Permit[] = [];
    for (let g = 0; g < GENERATIONS; g++) {
      // Each generation's instances reach Redis through a proxy of their own, cut once they hold every permit.
      const proxy = await startTcpProxy(Number(new URL(redisUrl()).port || 6379));
      cleanups.push(() => proxy.close());
      const generation = Array.from({ length: LIMIT }, () => track(instance(throughProxy(proxy.port), prefix, LIMIT, TTL)));
      await Promise.all(generation.map((i) => ready(i.redis)));
      for (const [k, i] of generation.entries()) {
        const p = await acquireWhenFree(i.permits, `generation ${g}, holder ${k} to get a permit`);
        cleanups.push(() => p.release());
        holders.push(p);
      }
      expect(await direct.permits.tryAcquire()).toBeNull();
      if (g < GENERATIONS - 1) await proxy.cut();
    }
    // The last generation is reachable and holds every permit; the earlier ones are still cut off, still "working".
    const atOnce = await committing(holders);
    await annotate(`[permit lease, ${GENERATIONS} generations cut off] limit ${LIMIT}: ${atOnce} of ${holders.length} holders would commit at once`);
    expect(atOnce).toBe(LIMIT);
    expect(await direct.permits.inUse()).toBe(LIMIT);
  });

  it('the event loop blocked longer than the TTL: another instance takes the lease, the holder does not commit (limit 1)', async ({ annotate }) => {
    const LIMIT = 1;
    const TTL = 600;
    const a = track(instance(redisUrl(), prefix, LIMIT, TTL));
    const c = track(instance(redisUrl(), prefix, LIMIT, TTL));
    await Promise.all([ready(a.redis), ready(c.redis)]);
    const pa = (await a.permits.tryAcquire())!;
    expect(pa).not.toBeNull();
    cleanups.push(() => pa.release());
    expect(await c.permits.tryAcquire()).toBeNull();

    // The fault itself, not a wait for something: this process stalls (no timer, no refresh) for twice the TTL.
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 2 * TTL);

    const pc = await acquireWhenFree(c.permits, "A's expired lease to be taken over");
    cleanups.push(() => pc.release());
    const atOnce = await committing([pa, pc]);
    await annotate(`[permit lease, event loop blocked ${2 * TTL} ms] limit ${LIMIT}: ${atOnce} holders would commit at once`);
    expect(atOnce).toBe(LIMIT);
    expect(await wouldCommit(pc)).toBe(true);
    expect(pa.signal.aborted).toBe(true);
  });

  it('the controls: a holder that never stalls keeps committing for several TTLs, and a short stall (under the TTL) costs nothing', async () => {
    const TTL = 900;
    const a = track(instance(redisUrl(), prefix, 1, TTL));
    await ready(a.redis);
    const pa = (await a.permits.tryAcquire())!;
    cleanups.push(() => pa.release());
    // What is tested is the passing of time (the lease outliving its TTL while refreshed), checked every third of it.
    const until = Date.now() + 3 * TTL;
    let checks = 0;
    while (Date.now() < until) {
      expect(await wouldCommit(pa)).toBe(true);
      checks++;
      await new Promise((r) => setTimeout(r, TTL / 3));
    }
    expect(checks).toBeGreaterThanOrEqual(3);
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, TTL / 3);
    expect(await wouldCommit(pa)).toBe(true);
    expect(pa.signal.aborted).toBe(false);
    await pa.release();
    expect(await wouldCommit(pa)).toBe(false);
  });
});

describe('REST process (PROCESS_CONCURRENCY_LIMIT=1): an account whose permit was lost during a stall does not commit', () => {
  const S = 'LEASE_CO';
  const TEAM = 'Lease Team';
  const TTL = 1_000;
  let proxy: TcpProxy;
  let ctx: TestContext;
  let auth: { authorization: string };
  let other: { permits: ProcessPermits; redis: Redis };

  beforeAll(async () => {
    // The service reaches Redis through a proxy this test can cut; "another instance" reaches it directly.
    proxy = await startTcpProxy(Number(new URL(redisUrl()).port || 6379));
    ctx = await createTestContext({ env: { REDIS_URL: throughProxy(proxy.port), PROCESS_CONCURRENCY_LIMIT: '1', PROCESS_PERMIT_TTL_MS: String(TTL) } });
    await ctx.createSupplier(S);
    await ctx.createTeam(TEAM);
    auth = await ctx.authHeaders();
    other = instance(redisUrl(), ctx.config.redisPrefix, 1, TTL);
    await ready(other.redis);
  });
  afterAll(async () => {
    await proxy?.restore();
    other?.redis.disconnect();
    await ctx?.close();
    await proxy?.close();
  });

  const call = (url: string, payload: unknown) => ctx.app.inject({ method: 'POST', url, payload: payload as object, headers: auth });
  const processAccount = (ext: string) =>
    call('/v1/data-import/account-import-process/process/', { external_account_number: ext, import_supplier_code: S, operations_team_name: TEAM });
  const accountsOf = async (ext: string) => (await ctx.deps.db.selectFrom('accounts').select('number').where('external_account_number', '=', ext).execute()).length;

  it('503 processing_permit_lost with Retry-After and nothing written; the retry succeeds once the permit is free', async ({ annotate }) => {
    expect((await call('/v1/data-import/account-import-process/create-or-update/', accountPayload(S, 'L-1'))).statusCode).toBe(201);
    // The first call stops inside its transaction, holding the permit, until this lock is released.
    const lock = new pg.Client({ connectionString: ctx.config.databaseUrl });
    await lock.connect();
    let first: Awaited<ReturnType<typeof processAccount>> | undefined;
    let otherPermit: Permit | null = null;
    try {
      await lock.query('BEGIN');
      await lock.query('SELECT id FROM account_import_processes WHERE external_account_number = $1 FOR UPDATE', ['L-1']);
      const pending = processAccount('L-1');
      await pollUntil(async () => (await other.permits.inUse()) === 1, { what: 'the first call to hold the permit' });
      await blockedOnLock(lock, 'the first call to wait for the row lock');
      expect(await other.permits.tryAcquire()).toBeNull();

      // The service loses Redis for longer than the lease: another instance takes the permit over.
      await proxy.cut();
      otherPermit = await acquireWhenFree(other.permits, 'the stalled lease to be taken over');
      await proxy.restore();
      await ready(ctx.deps.redis);

      // The first call goes on to COMMIT while another instance holds the only permit.
      await lock.query('COMMIT');
      first = await pending;
    } finally {
      await lock.end();
    }
    await annotate(`[permit lease, REST] limit 1, the stalled call answered ${first.statusCode} ${first.body}`);
    expect(first.statusCode, first.body).toBe(503);
    expect(first.headers['retry-after']).toBe('1');
    expect(first.json()).toEqual({ detail: expect.any(String), code: 'processing_permit_lost', errors: [] });
    expect(await accountsOf('L-1')).toBe(0);
    const status = await ctx.app.inject({ method: 'GET', url: `/v1/data-import/account-transfer-status/${S}/L-1/`, headers: auth });
    expect(status.json()).toEqual({ status: 'UNKNOWN', service_account_number: '', kraken_account_number: '' });

    // While the other instance holds the permit the limit holds (429); once it is done the retry succeeds.
    expect((await processAccount('L-1')).statusCode).toBe(429);
    await otherPermit.release();
    const retried = await processAccount('L-1');
    expect(retried.statusCode, retried.body).toBe(201);
    expect(await accountsOf('L-1')).toBe(1);
  });
});

describe('the pipeline (PROCESS_CONCURRENCY_LIMIT=1): a process job whose permit was lost during a stall does not commit, and is retried', () => {
  const S = 'LEASE_PIPE';
  const TEAM = 'Lease Pipeline Team';
  const TTL = 1_000;
  let proxy: TcpProxy;
  let ctx: PipelineContext;
  let other: { permits: ProcessPermits; redis: Redis };

  beforeAll(async () => {
    proxy = await startTcpProxy(Number(new URL(redisUrl()).port || 6379));
    ctx = await createPipelineContext({ env: { REDIS_URL: throughProxy(proxy.port), PROCESS_CONCURRENCY_LIMIT: '1', PROCESS_PERMIT_TTL_MS: String(TTL) } });
    await ctx.createSupplier(S, { documentsRoot: 'lease' });
    await ctx.createTeam(TEAM);
    other = instance(redisUrl(), ctx.config.redisPrefix, 1, TTL);
    await ready(other.redis);
  });
  afterAll(async () => {
    await proxy?.restore();
    other?.redis.disconnect();
    await ctx?.close();
    await proxy?.close();
  });

  it('the job fails its attempt with processing_permit_lost, nothing is written, and the retry creates the account once', async ({ annotate }) => {
    const { ndjson, accounts } = await ctx.cohort({ count: 1, supplier: S, prefix: 'LP', seed: 7 });
    const ext = accounts[0]!.bundle.account.external_account_number as string;
    ctx.startWorkers(['validate', 'stage']);
    const { batch_id } = await ctx.upload(ndjson, { supplier: S, team: TEAM });
    await pollUntil(async () => (await batchItems(ctx, batch_id)).find((i) => i.stage === 'process' && i.state === 'waiting'), { timeoutMs: 30_000, what: 'the item to wait at process' });

    // The process job stops inside its transaction, holding the permit, until this lock is released.
    const lock = new pg.Client({ connectionString: ctx.config.databaseUrl });
    await lock.connect();
    let otherPermit: Permit | null = null;
    try {
      await lock.query('BEGIN');
      await lock.query('SELECT id FROM account_import_processes WHERE external_account_number = $1 FOR UPDATE', [ext]);
      ctx.startWorkers(['process', 'extras']);
      await pollUntil(async () => (await other.permits.inUse()) === 1, { timeoutMs: 30_000, what: 'the process job to hold the permit' });
      await blockedOnLock(lock, 'the process job to wait for the row lock');

      await proxy.cut();
      otherPermit = await acquireWhenFree(other.permits, 'the stalled lease to be taken over');
      await proxy.restore();
      await Promise.all([ready(ctx.deps.redis), ready(ctx.deps.redisBlocking)]);
      await lock.query('COMMIT');
    } finally {
      await lock.end();
    }

    // The attempt that lost its permit rolls back: no account while the other instance holds the only permit.
    const job = await pollUntil(async () => {
      const j = await ctx.deps.queues.process.getJob(`${batch_id}.1.process.0`);
      return j && j.attemptsMade >= 1 ? j : null;
    }, { timeoutMs: 30_000, what: 'the process job to fail its first attempt' });
    await annotate(`[permit lease, pipeline] first attempt: ${job.failedReason}`);
    expect(job.failedReason).toMatch(/processing permit expired/);
    expect(await ctx.deps.db.selectFrom('accounts').select('number').where('external_account_number', '=', ext).execute()).toHaveLength(0);

    await otherPermit!.release();
    const end = await ctx.waitForEnd(batch_id, 60_000);
    expect(end).toMatchObject({ state: 'COMPLETED', succeeded: 1, failed: 0 });
    const [item] = await batchItems(ctx, batch_id);
    expect(item).toMatchObject({ state: 'succeeded', error: null });
    expect(await ctx.deps.db.selectFrom('accounts').select('number').where('external_account_number', '=', ext).execute()).toEqual([{ number: item!.service_account_number }]);
  });
});
