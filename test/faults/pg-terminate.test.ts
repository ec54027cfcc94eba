import type { LightMyRequestResponse } from 'fastify';
import pg from 'pg';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { createDeps, type Deps } from '../../src/deps.js';
import { buildApp, type BuiltApp } from '../../src/http/app.js';
import { createLogger } from '../../src/log.js';
import { accountPayload } from '../helpers/fixtures.js';
import { pollUntil } from '../helpers/poll.js';
import { createPipelineContext, type PipelineContext } from '../queue/setup.js';
import type { WorkerProcess } from '../queue/worker-process.js';
import { ended, expectEnvelope, expectExactImport, pollStatus, spawnTrackedWorker, startTcpProxy, type TcpProxy } from './helpers.js';

/**
 * PostgreSQL connections die under the service: backends terminated (pg_terminate_backend) several
 * times mid-batch, the database cut off at the network, the database refusing connections. Workers
 * retry what failed and the batch ends exactly; the API answers 503 `service_unavailable` with the
 * envelope and Retry-After while the database is unreachable (never 500, never 401), then recovers.
 * Only this file's database is touched.
 */

let ctx: PipelineContext;
let admin: pg.Client;
let dbName: string;
const workers: WorkerProcess[] = [];
/** Errors emitted by a checked-out pg client: without the stand-in listener each was an uncaught exception. */
const escaped: string[] = [];

/**
 * Stand-in for the fix of the bug pinned by the worker-process test below: node-postgres emits
 * 'error' on a *checked-out* client whose connection dies (the pool only listens on idle ones), and
 * src/db/create-db.ts attaches no listener, so the error is an uncaught exception that ends the
 * process. In-process, that would abort this whole file; a listener on every client keeps the
 * in-process tests about the retry logic, and records what escaped.
 */
function listenOnCheckedOutClients(pool: pg.Pool): void {
  pool.on('connect', (client) => {
    client.on('error', (err) => {
      // Only this listener: the pool's idle listener is off, the client was checked out.
      if (client.listenerCount('error') === 1) escaped.push(err.message);
    });
  });
}

beforeAll(async () => {
  ctx = await createPipelineContext();
  listenOnCheckedOutClients(ctx.deps.pool);
  await ctx.createSupplier('PGK', { documentsRoot: 'pgk' });
  await ctx.createSupplier('CLOSE', { documentsRoot: 'close' });
  await ctx.createSupplier('CRASH', { documentsRoot: 'crash' });
  await ctx.createTeam('Team');
  dbName = new URL(ctx.config.databaseUrl).pathname.slice(1);
  admin = new pg.Client({ connectionString: inject('adminDatabaseUrl') });
  admin.on('error', () => undefined); // connected to another database: never a target
  await admin.connect();
  // Clients opened before the listener was attached are idle now: recycle them, so every client has it.
  await terminateServiceBackends();
  await pollUntil(async () => ctx.deps.pool.totalCount === 0, { timeoutMs: 5_000, what: 'the pool to drop its terminated clients' });
});
afterAll(async () => {
  for (const w of workers) await w.kill('SIGKILL');
  await admin?.query(`ALTER DATABASE ${pg.escapeIdentifier(dbName)} WITH ALLOW_CONNECTIONS true`).catch(() => undefined);
  await admin?.end();
  await ctx?.close();
});

/** Terminates every backend of this file's database (the service's API and workers alike); resolves to how many. */
async function terminateServiceBackends(): Promise<number> {
  // pg_terminate_backend in the select list (never in WHERE, where it could run before the filter).
  const r = await admin.query<{ killed: boolean }>(
    "SELECT pg_terminate_backend(pid) AS killed FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid() AND backend_type = 'client backend'",
    [dbName],
  );
  return r.rows.filter((x) => x.killed).length;
}

const statusUrl = (batchId: string) => `/v1/data-import/batches/${batchId}/`;

function expect503(res: LightMyRequestResponse): void {
  expectEnvelope(res, 503, 'service_unavailable');
  expect(res.headers['retry-after']).toBe('5');
}

it('backends terminated three times mid-batch: failed steps are retried and the batch completes exactly', async ({ annotate }) => {
  const COUNT = 90;
  const { ndjson, accounts } = await ctx.cohort({ count: COUNT, supplier: 'PGK', prefix: 'PG', seed: 31 });
  const set = ctx.startWorkers();
  const jobFailures: string[] = [];
  for (const w of set.workers) w.on('failed', (_job, err) => jobFailures.push(err.message));
  const { batch_id } = await ctx.upload(ndjson, { supplier: 'PGK', team: 'Team' });

  const apiErrors: LightMyRequestResponse[] = [];
  const kills: Array<{ atSucceeded: number; terminated: number }> = [];
  for (const threshold of [15, 40, 65]) {
    const s = await pollStatus(ctx, batch_id, (x) => x.succeeded >= threshold, `${threshold} items to succeed`, { errors: apiErrors });
    expect(s.state).toBe('RUNNING');
    const terminated = await terminateServiceBackends();
    kills.push({ atSucceeded: s.succeeded, terminated });
  }
  // Every round hit live connections of the service.
  for (const k of kills) expect(k.terminated, JSON.stringify(kills)).toBeGreaterThan(0);
  expect(kills.at(-1)!.atSucceeded).toBeLessThan(COUNT);

  const end = await pollStatus(ctx, batch_id, ended, 'the batch to end', { timeoutMs: 90_000, errors: apiErrors });
  expect(end).toMatchObject({ state: 'COMPLETED', total_items: COUNT, succeeded: COUNT, failed: 0, cancelled: 0 });
  const figures = await expectExactImport(ctx, 'PGK', accounts, batch_id);
  // Whatever the API answered while its connections were dying was a 503 envelope, never a 500.
  for (const res of apiErrors) expect503(res);
  await set.close(10_000);
  await annotate(
    `[pg-terminate] kills ${JSON.stringify(kills)}; ${escaped.length} client errors would have been uncaught; ${jobFailures.length} job attempts failed and were retried ` +
      `(${[...new Set(jobFailures)].slice(0, 3).join(' | ')}); API non-200 during kills: ${apiErrors.map((r) => r.statusCode).join(',') || 'none'}; end ${JSON.stringify(figures)}`,
  );
}, 240_000);

it('database cut off at the network (API through a loopback proxy): 503 envelope with Retry-After, not 500 nor 401; recovers when it is back', async () => {
  const target = new URL(ctx.config.databaseUrl);
  const proxy: TcpProxy = await startTcpProxy(Number(target.port || 5432));
  const viaProxy = new URL(ctx.config.databaseUrl);
  viaProxy.host = `127.0.0.1:${proxy.port}`;
  // A second API process of the same deployment whose PostgreSQL traffic goes through the proxy.
  let deps: Deps | undefined;
  let built: BuiltApp | undefined;
  try {
    deps = createDeps({ ...ctx.config, databaseUrl: viaProxy.toString() }, { log: createLogger('silent'), clock: ctx.clock });
    listenOnCheckedOutClients(deps.pool);
    built = await buildApp(deps);
    await built.app.ready();
    const app = built.app;
    const { batch_id } = await ctx.upload('{"not": "a bundle"}\n', { supplier: 'PGK', team: 'Team' });
    const get = (url: string, headers: Record<string, string> = ctx.auth) => app.inject({ method: 'GET', url, headers });
    const validate = () => app.inject({ method: 'POST', url: '/v1/data-import/validate-account/', headers: { ...ctx.auth, 'content-type': 'application/json' }, payload: JSON.stringify(accountPayload('PGK', 'V-1')) });

    expect((await get(statusUrl(batch_id))).statusCode).toBe(200);
    expect((await validate()).statusCode).toBe(200);
    expect(proxy.connections).toBeGreaterThan(0);

    await proxy.cut();
    // Authentication needs the database too: a valid token is answered 503, not 401.
    expect503(await get(statusUrl(batch_id)));
    expect503(await validate());
    expect503(await app.inject({ method: 'GET', url: `/v1/data-import/batches/${batch_id}/items/`, headers: ctx.auth }));
    // Without credentials nothing needs the database: still the 401 it always was.
    const anonymous = await get(statusUrl(batch_id), {});
    expectEnvelope(anonymous, 401, 'not_authenticated');
    const ready = await get('/readyz', {});
    expectEnvelope(ready, 503, 'service_unavailable');

    await proxy.restore();
    await pollUntil(async () => (await get(statusUrl(batch_id))).statusCode === 200, { timeoutMs: 15_000, intervalMs: 100, what: 'the status to answer 200 again' });
    expect((await validate()).statusCode).toBe(200);
    expect((await get('/readyz', {})).statusCode).toBe(200);
  } finally {
    await built?.app.close();
    await deps?.close();
    await proxy.close();
  }
}, 60_000);

/**
 * BUG (src/http/app-errors.ts, UNAVAILABLE_PG_CODES): a database that refuses connections answers
 * `FATAL 55000 database "…" is not currently accepting connections` at connect time, which toAppError
 * does not know, so the API answers 500 internal_error instead of 503 (decisions.md: "PostgreSQL or
 * Redis unreachable → 503 … never a 500"). 55000 cannot be added to the set as it is (it is also a
 * statement-level error); fix: map any PostgreSQL error whose `severity` is FATAL or PANIC (the
 * session is gone: only connection-level failures are FATAL) to 503 service_unavailable.
 * Remove `.fails` once fixed.
 */
it('database refusing connections (ALLOW_CONNECTIONS false, backends terminated): 503 envelope, then 200 once it accepts again', async () => {
  const { batch_id } = await ctx.upload('{"not": "a bundle"}\n', { supplier: 'PGK', team: 'Team' });
  const get = (url: string) => ctx.app.inject({ method: 'GET', url, headers: ctx.auth });
  expect((await get(statusUrl(batch_id))).statusCode).toBe(200);
  await admin.query(`ALTER DATABASE ${pg.escapeIdentifier(dbName)} WITH ALLOW_CONNECTIONS false`);
  try {
    expect(await terminateServiceBackends()).toBeGreaterThan(0);
    // Once the pool has dropped its dead clients, the request must open a connection: refused.
    await pollUntil(async () => ctx.deps.pool.totalCount === 0, { timeoutMs: 5_000, what: 'the pool to drop its terminated clients' });
    expect503(await get(statusUrl(batch_id)));
    expect503(await get(`/v1/data-import/batches/${batch_id}/items/`));
  } finally {
    await admin.query(`ALTER DATABASE ${pg.escapeIdentifier(dbName)} WITH ALLOW_CONNECTIONS true`);
  }
  await pollUntil(async () => (await get(statusUrl(batch_id))).statusCode === 200, { timeoutMs: 15_000, intervalMs: 100, what: 'the status to answer 200 again' });
}, 30_000);

/**
 * The database goes away right after the last item is recorded `succeeded`: the statement that
 * closes the batch (finishIfDone) fails once (SQLSTATE 57P01, "terminating connection", injected by
 * a trigger through a sequence, whose nextval survives the rollback). The job is retried; the retry
 * finds the item succeeded and closes the batch. A second trigger counts any attempt to move the
 * succeeded item back to `waiting`: the step committed, so nothing may undo it.
 */
it('a transient failure while closing the batch (after the last item succeeded) is retried: the batch still ends COMPLETED', async () => {
  const svc = new pg.Client({ connectionString: ctx.config.databaseUrl });
  svc.on('error', () => undefined);
  await svc.connect();
  try {
    await svc.query(`
      CREATE SEQUENCE fault_finish_seq;
      CREATE SEQUENCE fault_reset_seq;
      CREATE FUNCTION fault_fail_finish() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF nextval('fault_finish_seq') = 1 THEN
          RAISE EXCEPTION 'injected: terminating connection due to administrator command' USING ERRCODE = '57P01';
        END IF;
        RETURN NEW;
      END $$;
      CREATE FUNCTION fault_fail_reset() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF nextval('fault_reset_seq') = 1 THEN
          RAISE EXCEPTION 'injected: terminating connection due to administrator command' USING ERRCODE = '57P01';
        END IF;
        RETURN NEW;
      END $$;
      CREATE TRIGGER fault_fail_finish BEFORE UPDATE ON batches FOR EACH ROW
        WHEN (OLD.state = 'RUNNING' AND NEW.state <> 'RUNNING') EXECUTE FUNCTION fault_fail_finish();
      CREATE TRIGGER fault_fail_reset BEFORE UPDATE ON batch_items FOR EACH ROW
        WHEN (OLD.state = 'succeeded' AND NEW.state = 'waiting') EXECUTE FUNCTION fault_fail_reset();
    `);
    const { ndjson, accounts } = await ctx.cohort({ count: 1, supplier: 'CLOSE', prefix: 'CL', seed: 32 });
    const set = ctx.startWorkers();
    try {
      const { batch_id } = await ctx.upload(ndjson, { supplier: 'CLOSE', team: 'Team' });
      try {
        // The one item succeeds (one item: its close of the batch is the only one)...
        await pollStatus(ctx, batch_id, (s) => s.succeeded === 1, 'the item to succeed', { timeoutMs: 30_000 });
        // ...and the injected failure happened: the batch close failed once.
        await pollUntil(async () => Number((await svc.query<{ n: string }>("SELECT last_value::text AS n FROM fault_finish_seq WHERE is_called")).rows[0]?.n ?? 0) >= 1, { timeoutMs: 10_000, what: 'the injected failure' });
        // The failed job is retried (0.5 s backoff); the batch must end by itself.
        const end = await pollStatus(ctx, batch_id, ended, 'the batch to end after the transient failure', { timeoutMs: 10_000 }).catch(async (err: Error) => {
          const [s] = await ctx.items(batch_id);
          throw new Error(`${err.message}: batch ${(await ctx.status(batch_id)).state}, its item ${s?.state} at ${s?.stage}`);
        });
        expect(end).toMatchObject({ state: 'COMPLETED', succeeded: 1, failed: 0 });
        // The item's committed success was never moved back to waiting (the reset trigger counts any attempt).
        expect((await svc.query<{ called: boolean }>('SELECT is_called AS called FROM fault_reset_seq')).rows[0]!.called).toBe(false);
        await expectExactImport(ctx, 'CLOSE', accounts, batch_id);
      } finally {
        // Leave the database tidy whatever happened: the reconciler closes a batch whose items are done.
        await ctx.built.services.batches.reconcile(batch_id);
      }
    } finally {
      await set.close(10_000);
    }
  } finally {
    await svc.query(`
      DROP TRIGGER IF EXISTS fault_fail_finish ON batches;
      DROP TRIGGER IF EXISTS fault_fail_reset ON batch_items;
      DROP FUNCTION IF EXISTS fault_fail_finish();
      DROP FUNCTION IF EXISTS fault_fail_reset();
      DROP SEQUENCE IF EXISTS fault_finish_seq;
      DROP SEQUENCE IF EXISTS fault_reset_seq;
    `);
    await svc.end();
  }
}, 60_000);

/**
 * BUG (src/db/create-db.ts, createDb): node-postgres emits 'error' on a client that is checked out
 * when its connection dies (the pool's own listener is only attached while the client is idle).
 * Inside a transaction that is the normal case: the statement fails, Kysely sends ROLLBACK on the
 * same client, the socket closes, and `Connection terminated unexpectedly` is emitted with no
 * listener: an uncaught exception. A worker process dies of it (the API server too: close-with-grace
 * shuts it down), so one pg_terminate_backend, a failover or a network blip during any transaction
 * takes the process down instead of failing one job attempt. Fix: in createDb,
 * `pool.on('connect', (client) => client.on('error', (err) => options.onPoolError?.(err)))` — the
 * query or transaction still rejects and is retried; the event is logged, not thrown.
 * Deterministic here: a trigger holds every account insert (inside processStaged's transaction)
 * for 1.5 s, and the backends are terminated while one is in it. Remove `.fails` once fixed.
 */
it('a worker process survives its connections being terminated inside a transaction, and finishes the batch', async () => {
  const svc = new pg.Client({ connectionString: ctx.config.databaseUrl });
  svc.on('error', () => undefined); // it is terminated with the service's backends
  await svc.connect();
  let worker: WorkerProcess | undefined;
  try {
    await svc.query(`
      CREATE FUNCTION fault_slow_insert() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN PERFORM pg_sleep(1.5); RETURN NEW; END $$;
      CREATE TRIGGER fault_slow_insert BEFORE INSERT ON accounts FOR EACH ROW EXECUTE FUNCTION fault_slow_insert();
    `);
    const { ndjson, accounts } = await ctx.cohort({ count: 4, supplier: 'CRASH', prefix: 'CR', seed: 33 });
    worker = await spawnTrackedWorker(
      ctx.config,
      ctx.workerEnv({ WORKER_LOCK_MS: '5000' }),
      workers,
    );
    const w = worker;
    const { batch_id } = await ctx.upload(ndjson, { supplier: 'CRASH', team: 'Team' });
    // A worker backend is inside processStaged's transaction, in the (slow) account insert.
    await pollUntil(
      async () =>
        (
          await admin.query(
            "SELECT 1 FROM pg_stat_activity WHERE datname = $1 AND state = 'active' AND query ILIKE 'insert into \"accounts\"%'",
            [dbName],
          )
        ).rowCount! > 0,
      { timeoutMs: 30_000, intervalMs: 50, what: 'a worker to be inside an account insert' },
    );
    expect(await terminateServiceBackends()).toBeGreaterThan(0);
    await svc.end().catch(() => undefined); // terminated with the rest
    const svc2 = new pg.Client({ connectionString: ctx.config.databaseUrl });
    await svc2.connect();
    try {
      await svc2.query('DROP TRIGGER fault_slow_insert ON accounts; DROP FUNCTION fault_slow_insert();');
    } finally {
      await svc2.end();
    }
    // The worker carries on: the failed attempt is retried and the batch ends, by this worker alone.
    const end = await pollUntil(
      async () => {
        if (w.child.exitCode !== null || w.child.signalCode !== null) return { died: true as const };
        const r = await ctx.app.inject({ method: 'GET', url: statusUrl(batch_id), headers: ctx.auth });
        const s = r.statusCode === 200 ? (r.json() as { state: string }) : null;
        return s && s.state !== 'RUNNING' ? { died: false as const, status: s } : null;
      },
      { timeoutMs: 40_000, intervalMs: 100, what: 'the batch to end or the worker to die' },
    );
    expect(end.died, `the worker process died:\n${w.output().split('\n').filter((l) => /error|terminat|uncaught/i.test(l)).slice(-5).join('\n')}`).toBe(false);
    expect(end).toMatchObject({ status: { state: 'COMPLETED' } });
    await expectExactImport(ctx, 'CRASH', accounts, batch_id);
  } finally {
    await worker?.kill('SIGKILL');
    await svc.query('DROP TRIGGER IF EXISTS fault_slow_insert ON accounts; DROP FUNCTION IF EXISTS fault_slow_insert();').catch(() => undefined);
    await svc.end().catch(() => undefined);
  }
}, 150_000);
