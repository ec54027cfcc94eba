import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';
import pg from 'pg';
import { inject } from 'vitest';
import { createApiKey } from '../../src/auth/api-keys.js';
import { FakeClock } from '../../src/clock.js';
import { loadConfig, type Config } from '../../src/config.js';
import type { SupplierStatus } from '../../src/db/database.js';
import { createDeps, type Deps, type DepsOverrides } from '../../src/deps.js';
import { buildApp, type BuiltApp } from '../../src/http/app.js';
import { createLogger } from '../../src/log.js';

export const TEST_TOKEN_SECRET = 'test-secret-test-secret-test-secret-0123456789';

/** A database of its own, cloned from the migrated template, for one test file. */
export async function createTestDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  const adminUrl = inject('adminDatabaseUrl');
  const name = `di_t_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name} TEMPLATE ${inject('templateDatabase')}`);
  } finally {
    await admin.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const c = new pg.Client({ connectionString: adminUrl });
      await c.connect();
      try {
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await c.end();
      }
    },
  };
}

/** Deletes every Redis key a deployment with this prefix owns (SCAN, never KEYS). */
export async function deleteRedisPrefix(redisUrl: string, prefix: string): Promise<void> {
  // No offline queue: against a Redis that is down or silent, fail at once rather than wait forever.
  const r = new Redis(redisUrl, { maxRetriesPerRequest: 1, enableOfflineQueue: false, connectTimeout: 2_000 });
  await new Promise<void>((resolve, reject) => {
    r.once('ready', () => resolve());
    r.once('error', reject);
    setTimeout(() => reject(new Error(`Redis at ${redisUrl} not ready within 3 s`)), 3_000).unref();
  }).catch((err: unknown) => {
    r.disconnect();
    throw err;
  });
  try {
    // redis-semaphore adds its own `semaphore:` in front of our prefix.
    for (const pattern of [`${prefix}:*`, `semaphore:${prefix}:*`]) {
      let cursor = '0';
      do {
        const [next, keys] = await r.scan(cursor, 'MATCH', pattern, 'COUNT', 500);
        cursor = next;
        if (keys.length) await r.del(...keys);
      } while (cursor !== '0');
    }
  } finally {
    r.disconnect();
  }
}

export interface TestContext {
  config: Config;
  deps: Deps;
  app: FastifyInstance;
  built: BuiltApp;
  clock: FakeClock;
  /** A fresh API key and its access token's Authorization header. */
  /** A token of a new API key; `suppliers` scopes the key to those suppliers (unscoped by default). */
  authHeaders(opts?: { suppliers?: string[] }): Promise<{ authorization: string }>;
  createSupplier(code: string, opts?: { status?: SupplierStatus; documentsRoot?: string; sendCustomerEmails?: boolean }): Promise<void>;
  createTeam(name: string): Promise<void>;
  /** Row counts of every table of the public schema (for "nothing changed" assertions). */
  tableCounts(): Promise<Record<string, number>>;
  close(): Promise<void>;
}

export interface ContextOptions {
  env?: Record<string, string>;
  /** Starting time of the fake clock (defaults to now). */
  now?: Date;
  /** Passed to createDeps (for example a short vendor backoff). */
  deps?: Omit<DepsOverrides, 'clock' | 'log'>;
}

/** One service instance on its own database and Redis prefix: what a test file talks to. */
export async function createTestContext(opts: ContextOptions = {}): Promise<TestContext> {
  const database = await createTestDatabase();
  const redisUrl = inject('redisUrl');
  const prefix = `t${randomBytes(5).toString('hex')}`;
  const config = loadConfig({
    NODE_ENV: 'test',
    DATABASE_URL: database.url,
    REDIS_URL: redisUrl,
    REDIS_PREFIX: prefix,
    TOKEN_SECRET: TEST_TOKEN_SECRET,
    LOG_LEVEL: 'silent',
    // Many files run at once against one PostgreSQL (100 connections in all): keep each small.
    DATABASE_POOL_SIZE: '8',
    ...opts.env,
  });
  const clock = new FakeClock(opts.now ?? new Date());
  const deps = createDeps(config, { ...opts.deps, clock, log: createLogger('silent') });
  let built: BuiltApp;
  try {
    built = await buildApp(deps);
    await built.app.ready();
  } catch (err) {
    await deps.close();
    await database.drop();
    throw err;
  }
  const { app } = built;
  let keyCounter = 0;

  return {
    config,
    deps,
    app,
    built,
    clock,
    async authHeaders(opts = {}) {
      const key = await createApiKey(deps.db, `test-key-${++keyCounter}-${randomBytes(3).toString('hex')}`, opts.suppliers ?? []);
      const res = await app.inject({
        method: 'POST',
        url: '/v1/graphql/',
        payload: {
          query: 'mutation ObtainToken($input: ObtainJSONWebTokenInput!) { obtainKrakenToken(input: $input) { token } }',
          variables: { input: { APIKey: key.key } },
        },
      });
      const token = (res.json() as { data?: { obtainKrakenToken?: { token?: string } } }).data?.obtainKrakenToken?.token;
      if (!token) throw new Error(`could not obtain a token: ${res.body}`);
      return { authorization: `Token ${token}` };
    },
    async createSupplier(code, o = {}) {
      await deps.db
        .insertInto('import_suppliers')
        .values({
          code,
          name: code,
          status: o.status ?? 'ONGOING',
          documents_root: o.documentsRoot ?? '',
          send_customer_emails: o.sendCustomerEmails ?? false,
        })
        .execute();
    },
    async createTeam(name) {
      await deps.db.insertInto('operations_teams').values({ name }).execute();
    },
    async tableCounts() {
      const tables = await deps.pool.query<{ tablename: string }>(
        "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename",
      );
      const counts: Record<string, number> = {};
      for (const { tablename } of tables.rows) {
        const r = await deps.pool.query<{ n: string }>(`SELECT count(*)::text AS n FROM ${pg.escapeIdentifier(tablename)}`);
        counts[tablename] = Number(r.rows[0]!.n);
      }
      return counts;
    },
    async close() {
      // Every step runs even when one fails (a test that pointed the service at a dead Redis).
      const steps = [() => app.close(), () => deps.close(), () => deleteRedisPrefix(config.redisUrl, prefix), () => database.drop()];
      const failures: unknown[] = [];
      for (const step of steps) await step().catch((err: unknown) => failures.push(err));
      if (failures.length > 0) throw failures[0];
    },
  };
}
