import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createApiKey } from '../../src/auth/api-keys.js';
import { TokenService } from '../../src/auth/tokens.js';
import { loadConfig } from '../../src/config.js';
import { createDeps, type Deps } from '../../src/deps.js';
import { createLogger } from '../../src/log.js';
import { startReconciling } from '../../src/queue/reconciler.js';
import { accountPayload } from '../helpers/fixtures.js';
import { createTestContext, createTestDatabase, TEST_TOKEN_SECRET, type TestContext } from '../helpers/context.js';
import { pollUntil } from '../helpers/poll.js';
import { startOwnRedis, startSilentServer, type OwnRedis } from './helpers.js';

/**
 * Redis is where requests enqueue, take processing permits and count sign-in failures. When it
 * is away, or accepts connections and never answers, every request that needs it answers 503
 * `service_unavailable` within about 2 s instead of hanging, an upload stores nothing, and the
 * log says once that the connection was lost and once that it is back, not on every retry.
 */


/** How long a request may take to answer while Redis is silent: 2 s of command timeout, with room for a loaded machine. */
const ANSWER_WITHIN_MS = 6_000;

describe('Redis silent: requests answer 503 instead of hanging', () => {
  let silent: Awaited<ReturnType<typeof startSilentServer>>;
  let ctx: TestContext;
  let auth: { authorization: string };

  beforeAll(async () => {
    silent = await startSilentServer();
    ctx = await createTestContext({
      env: {
        REDIS_URL: silent.url('redis'),
        PROCESS_CONCURRENCY_LIMIT: '2',
        // A registration gateway is configured (never reached here: nothing is marked while Redis is silent).
        REGISTRATION_GATEWAY_URL: 'http://127.0.0.1:9',
        REGISTRATION_GATEWAY_KEY: 'never-used-gateway-key',
      },
    });
    await ctx.createSupplier('RD');
    await ctx.createTeam('Team');
    // ObtainToken needs Redis (its limiter): sign a token the way it would.
    const key = await createApiKey(ctx.deps.db, 'redis-down');
    const { token } = await new TokenService(TEST_TOKEN_SECRET, () => ctx.clock.now()).issue(key.id, 'access');
    auth = { authorization: `Token ${token}` };
  });
  afterAll(async () => {
    await ctx?.close().catch(() => undefined);
    await silent?.close();
  });

  const timed = async (send: () => Promise<{ statusCode: number; body: string }>) => {
    const t = Date.now();
    const res = await send();
    return { res, ms: Date.now() - t };
  };

  it('a cohort upload answers 503 service_unavailable and stores no batch', async () => {
    const { res, ms } = await timed(() =>
      ctx.app.inject({
        method: 'POST',
        url: '/v1/data-import/batches/?import_supplier=RD&operations_team_name=Team',
        headers: { ...auth, 'content-type': 'application/x-ndjson' },
        payload: `${JSON.stringify({ account: accountPayload('RD', 'RD-1') })}\n`,
      }),
    );
    expect(res.statusCode, res.body).toBe(503);
    expect(JSON.parse(res.body)).toMatchObject({ code: 'service_unavailable', errors: [] });
    expect(ms).toBeLessThan(ANSWER_WITHIN_MS);
    expect((await ctx.tableCounts()).batches).toBe(0);
  });

  it('processing an account (which takes a permit) answers 503 and creates nothing', async () => {
    const staged = await ctx.app.inject({ method: 'POST', url: '/v1/data-import/account-import-process/create-or-update/', headers: auth, payload: accountPayload('RD', 'RD-2') });
    expect(staged.statusCode, staged.body).toBe(201);
    const { res, ms } = await timed(() =>
      ctx.app.inject({
        method: 'POST',
        url: '/v1/data-import/account-import-process/process/',
        headers: auth,
        payload: { import_supplier_code: 'RD', external_account_number: 'RD-2', operations_team_name: 'Team' },
      }),
    );
    expect(res.statusCode, res.body).toBe(503);
    expect(JSON.parse(res.body)).toMatchObject({ code: 'service_unavailable' });
    expect(ms).toBeLessThan(ANSWER_WITHIN_MS);
    expect((await ctx.tableCounts()).accounts).toBe(0);
  });

  it('marking meter points for registration answers 503 and marks nothing', async () => {
    // An imported account with one meter point, written directly (importing one needs Redis).
    const team = await ctx.deps.db.selectFrom('operations_teams').select('id').executeTakeFirstOrThrow();
    const supplier = await ctx.deps.db.selectFrom('import_suppliers').select('id').where('code', '=', 'RD').executeTakeFirstOrThrow();
    const account = await ctx.deps.db
      .insertInto('accounts')
      .values({ number: 'A-0000AD01', import_supplier_id: supplier.id, external_account_number: 'RD-REG', operations_team_id: team.id, account_type: 'DOMESTIC', communication_preference: 'ONLINE' } as never)
      .returning('id')
      .executeTakeFirstOrThrow();
    const address = await ctx.deps.db
      .insertInto('supply_addresses')
      .values({ account_id: account.id, position: 0, supply_address1: '1 Road', supply_postcode: 'W1F 9DE', customer_at_supply_address_from_date: '2026-01-01' } as never)
      .returning('id')
      .executeTakeFirstOrThrow();
    await ctx.deps.db
      .insertInto('meter_points')
      .values({ account_id: account.id, supply_address_id: address.id, supply_type: 'ELECTRICITY', identifier: '1900000000001', supply_start_date: '2026-01-01', mpid: 'TENT', position: 0 } as never)
      .execute();
    const { res, ms } = await timed(() => ctx.app.inject({ method: 'POST', url: '/v1/data-import/send-registration-flows/RD/RD-REG/', headers: auth }));
    expect(res.statusCode, res.body).toBe(503);
    expect(JSON.parse(res.body)).toMatchObject({ code: 'service_unavailable', errors: [] });
    expect(ms).toBeLessThan(ANSWER_WITHIN_MS);
    const point = await ctx.deps.db.selectFrom('meter_points').select(['registration_status', 'registration_request_id']).where('identifier', '=', '1900000000001').executeTakeFirstOrThrow();
    expect(point).toEqual({ registration_status: 'PRE_REGISTRATION', registration_request_id: null });
    expect((await ctx.tableCounts()).registration_attempts).toBe(0);
  });

  it('ObtainToken answers 503 service_unavailable (its sign-in limiter lives in Redis)', async () => {
    const key = await createApiKey(ctx.deps.db, 'redis-down-sign-in');
    const { res, ms } = await timed(() =>
      ctx.app.inject({
        method: 'POST',
        url: '/v1/graphql/',
        payload: { query: 'mutation($i: ObtainJSONWebTokenInput!) { obtainKrakenToken(input: $i) { token } }', variables: { i: { APIKey: key.key } } },
      }),
    );
    expect(res.statusCode, res.body).toBe(503);
    expect(JSON.parse(res.body)).toMatchObject({ data: { obtainKrakenToken: null }, errors: [{ extensions: { code: 'service_unavailable' } }] });
    expect(ms).toBeLessThan(ANSWER_WITHIN_MS);
  });

  it('readiness says not ready, quickly', async () => {
    const { res, ms } = await timed(() => ctx.app.inject({ method: 'GET', url: '/readyz' }));
    expect(res.statusCode).toBe(503);
    expect(ms).toBeLessThan(ANSWER_WITHIN_MS);
  });
});

describe('Redis stopped and started again: one line when lost, one when back', () => {
  let redis: OwnRedis;
  let dir: string;
  let deps: Deps;
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  const lines: Array<{ msg: string; connection?: string }> = [];

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'di-redis-down-'));
    redis = await startOwnRedis(dir);
    database = await createTestDatabase();
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line) as { msg: string });
        done();
      },
    });
    const config = loadConfig({ NODE_ENV: 'test', DATABASE_URL: database.url, REDIS_URL: redis.url, REDIS_PREFIX: 'rdown', TOKEN_SECRET: TEST_TOKEN_SECRET });
    deps = createDeps(config, { log: createLogger('info', sink) });
    await pollUntil(async () => deps.redis.status === 'ready' && deps.redisBlocking.status === 'ready', { what: 'both connections to be ready' });
  });
  afterAll(async () => {
    await redis?.start().catch(() => undefined);
    await deps?.close();
    await redis?.kill();
    await database?.drop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('logs the loss once per connection however many retries, then the return once, and tells the listeners', async () => {
    let reconnects = 0;
    let retries = 0;
    deps.onRedisReconnect(() => reconnects++);
    // What server.ts and the worker processes run: a reconcile now, and again when Redis is back.
    let reconciles = 0;
    startReconciling({
      log: createLogger('silent'),
      onRedisReconnect: deps.onRedisReconnect,
      reconcile: async () => {
        reconciles++;
        return { batches: 0, openItems: 0, jobsRecreated: 0 };
      },
    });
    expect(reconciles).toBe(1);
    deps.redis.on('reconnecting', () => retries++);

    await redis.stop();
    await pollUntil(async () => retries >= 5, { timeoutMs: 20_000, what: 'five reconnection attempts' });
    const lost = lines.filter((l) => /Redis connection lost/.test(l.msg));
    expect(lost.map((l) => l.connection).sort()).toEqual(['blocking', 'requests']);
    // While it is away, a request-path command fails at once instead of waiting.
    await expect(deps.redis.ping()).rejects.toThrow();

    await redis.start();
    await pollUntil(async () => lines.filter((l) => /Redis connection back/.test(l.msg)).length >= 2, { timeoutMs: 20_000, what: 'both connections back' });
    expect(lines.filter((l) => /Redis connection lost/.test(l.msg))).toHaveLength(2);
    expect(reconnects).toBe(1);
    await pollUntil(async () => reconciles === 2, { what: 'a second reconcile once Redis was back' });
    expect(await deps.redis.ping()).toBe('PONG');
  });
});

it('uses its own Redis servers, never the shared one', () => {
  expect(inject('redisUrl')).toBeTruthy();
});
