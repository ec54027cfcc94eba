import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import type { Kysely } from 'kysely';
import pg from 'pg';
import { createApiKey } from '../../src/auth/api-keys.js';
import { createDb } from '../../src/db/create-db.js';
import type { Database } from '../../src/db/database.js';
import { ensureDatabase, migrate } from '../../src/db/migrator.js';
import { createSupplier } from '../../src/imports/suppliers/supplier.service.js';
import { createTeam } from '../../src/imports/teams/team.service.js';
import { startSandboxVendor, type SandboxVendor } from '../../src/vendors/sandbox-vendor.js';
import { onCleanup } from './cleanup.js';
import { countDatabaseAsOwn } from './meter.js';
import { guardPool, pgClient } from './pg.js';
import { freePort, serviceEnv, startService, waitForHttp, waitForWorkers, type Service } from './services.js';

export const DEFAULT_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/data_import';
export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';
export const VENDOR_CODE = 'sandbox';
export const TEAM = 'Bench Migrations';

/**
 * Everything one run owns: fresh databases, a fresh Redis key prefix, a temporary documents folder,
 * the sandbox payment vendor, and the API and worker processes. Nothing outside these is touched.
 */
export interface BenchEnv {
  readonly runId: string;
  readonly root: string;
  readonly dbName: string;
  readonly databaseUrl: string;
  readonly redisUrl: string;
  readonly redisPrefix: string;
  /** The bench's own connection (setup, status reads, cleanup). */
  readonly redis: Redis;
  readonly db: Kysely<Database>;
  readonly workDir: string;
  readonly docsDir: string;
  readonly vendor: SandboxVendor;
  readonly tokenSecret: string;
  api: Service | undefined;
  apiUrl: string;
  /** The worker processes, in start order; a restarted one takes its predecessor's place. */
  workers: Service[];
  /** Node flags for the service processes (--cpu-prof when profiling). */
  nodeFlags: string[];
  /** A fresh migrated database next to the main one (the ceiling writes there); dropped with the run. */
  siblingDatabase(suffix: string): Promise<string>;
}

const withDatabase = (url: string, name: string): string => {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
};

export async function dropDatabase(url: string): Promise<void> {
  const name = decodeURIComponent(new URL(url).pathname.slice(1));
  const client = pgClient({ connectionString: withDatabase(url, 'postgres'), connectionTimeoutMillis: 10_000 });
  await client.connect();
  try {
    await client.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`);
  } finally {
    await client.end();
  }
}

/** Deletes every key under the run's prefix (SCAN + UNLINK): never a global flush. */
export async function deleteRedisPrefix(redis: Redis, prefix: string): Promise<number> {
  let deleted = 0;
  // redis-semaphore keeps its leases under its own `semaphore:` prefix, in front of ours.
  for (const pattern of [`${prefix}:*`, `semaphore:${prefix}:*`]) {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 2000);
      cursor = next;
      if (keys.length > 0) deleted += await redis.unlink(...keys);
    } while (cursor !== '0');
  }
  return deleted;
}

export async function createBenchEnv(opts: { root: string; keep: boolean; log: (line: string) => void }): Promise<BenchEnv> {
  const stamp = new Date().toISOString().replace(/\D/g, '').slice(0, 14);
  const rand = randomBytes(3).toString('hex');
  const runId = `${stamp}_${rand}`;
  const dbName = `di_bench_${runId}`;
  const baseUrl = process.env.DATABASE_URL || DEFAULT_DATABASE_URL;
  const databaseUrl = withDatabase(baseUrl, dbName);
  const redisUrl = process.env.REDIS_URL || DEFAULT_REDIS_URL;
  const redisPrefix = `dibench-${runId}`;
  const databases: string[] = [];

  const createMigrated = async (url: string) => {
    await ensureDatabase(url);
    countDatabaseAsOwn(new URL(url).pathname.slice(1));
    databases.push(url);
    onCleanup(`drop database ${new URL(url).pathname.slice(1)}`, async () => {
      if (opts.keep) opts.log(`kept database ${new URL(url).pathname.slice(1)} (--keep)`);
      else await dropDatabase(url);
    });
    await migrate(url);
  };

  await createMigrated(databaseUrl);
  const { db, pool } = createDb(databaseUrl, { max: 4 });
  guardPool(pool);
  onCleanup('close the bench database pool', () => db.destroy());

  const redis = new Redis(redisUrl, { maxRetriesPerRequest: null });
  redis.on('error', () => undefined);
  onCleanup('close the bench Redis connection', async () => {
    await redis.quit().catch(() => redis.disconnect());
  });
  onCleanup(`delete Redis keys ${redisPrefix}:*`, async () => {
    const n = await deleteRedisPrefix(redis, redisPrefix);
    opts.log(`deleted ${n} Redis key(s) under ${redisPrefix}`);
  });

  const workDir = mkdtempSync(path.join(tmpdir(), 'di-bench-'));
  onCleanup(`remove ${workDir}`, () => rmSync(workDir, { recursive: true, force: true }));
  const docsDir = path.join(workDir, 'documents');

  const vendor = await startSandboxVendor();
  onCleanup('close the sandbox vendor', () => vendor.close());

  const env: BenchEnv = {
    runId,
    root: opts.root,
    dbName,
    databaseUrl,
    redisUrl,
    redisPrefix,
    redis,
    db,
    workDir,
    docsDir,
    vendor,
    tokenSecret: randomBytes(32).toString('base64url'),
    api: undefined,
    apiUrl: '',
    workers: [],
    nodeFlags: [],
    async siblingDatabase(suffix) {
      const url = withDatabase(baseUrl, `${dbName}_${suffix}`);
      await createMigrated(url);
      return url;
    },
  };
  return env;
}

function commonEnv(env: BenchEnv): Record<string, string> {
  return {
    NODE_ENV: 'production',
    TOKEN_SECRET: env.tokenSecret,
    DATABASE_URL: env.databaseUrl,
    REDIS_URL: env.redisUrl,
    REDIS_PREFIX: env.redisPrefix,
    DOCUMENTS_DIR: env.docsDir,
    PAYMENT_VENDORS: JSON.stringify({ [VENDOR_CODE]: { base_url: env.vendor.baseUrl, api_key: env.vendor.apiKey } }),
    LOG_LEVEL: 'warn',
    WORKER_SHUTDOWN_GRACE_MS: '5000',
  };
}

/** The compiled API as `web` in the Procfile runs it: no workers, no migrations. */
export async function startApi(env: BenchEnv): Promise<Service> {
  const port = await freePort();
  const api = startService('api', env.root, 'dist/src/server.js', serviceEnv({ ...commonEnv(env), PORT: String(port), HOST: '127.0.0.1', RUN_WORKERS: 'false', SKIP_MIGRATIONS: '1' }), env.nodeFlags);
  onCleanup('stop the API process', () => api.stop());
  env.api = api;
  env.apiUrl = `http://127.0.0.1:${port}`;
  await waitForHttp(api, env.apiUrl);
  return api;
}

/**
 * The compiled worker process, every queue in one process (`worker` in the Procfile), `count` times
 * over as a deployment scaling past one process runs it: all on the same database and Redis prefix.
 */
export async function startWorkerProcesses(env: BenchEnv, count: number): Promise<void> {
  const started = Array.from({ length: count }, (_, slot) => spawnWorkerProcess(env, slot, count));
  await waitForWorkers(started, env.workers, env.redis, env.redisPrefix);
}

/** Replaces the worker processes at `slots`, which have exited, as a process supervisor would. */
export async function restartWorkerProcesses(env: BenchEnv, slots: readonly number[]): Promise<void> {
  const started = slots.map((slot) => spawnWorkerProcess(env, slot, env.workers.length));
  await waitForWorkers(started, env.workers, env.redis, env.redisPrefix);
}

/** Stops every worker process still running. */
export async function stopWorkerProcesses(env: BenchEnv): Promise<void> {
  await Promise.all(env.workers.map((w) => w.stop()));
}

/** How logs and problems name worker process `slot` of `count` (as they always have when there is one). */
export const workerProcessName = (slot: number, count: number): string => (count === 1 ? 'the worker process' : `worker process ${slot + 1}`);

function spawnWorkerProcess(env: BenchEnv, slot: number, count: number): Service {
  const workers = startService(count === 1 ? 'workers' : `workers ${slot + 1}`, env.root, 'dist/workers/all.js', serviceEnv(commonEnv(env)), env.nodeFlags);
  onCleanup(`stop ${workerProcessName(slot, count)}`, () => workers.stop());
  env.workers[slot] = workers;
  return workers;
}

export async function setupSupplier(env: BenchEnv, code: string, documentsRoot: string): Promise<void> {
  await createSupplier(env.db, { code, name: `Bench ${code}`, documentsRoot });
}

export async function setupTeam(env: BenchEnv): Promise<void> {
  await createTeam(env.db, TEAM);
}

/** An API key, exchanged for an access token through ObtainToken as a supplier's script does. */
export async function obtainToken(env: BenchEnv, name: string): Promise<string> {
  const key = await createApiKey(env.db, name);
  const res = await fetch(`${env.apiUrl}/v1/graphql/`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      query: 'mutation ObtainToken($input: ObtainJSONWebTokenInput!) { obtainKrakenToken(input: $input) { token } }',
      variables: { input: { APIKey: key.key } },
    }),
  });
  const body = (await res.json()) as { data?: { obtainKrakenToken?: { token?: string } | null } };
  const token = body.data?.obtainKrakenToken?.token;
  if (!token) throw new Error(`ObtainToken answered ${res.status}: ${JSON.stringify(body).slice(0, 500)}`);
  return token;
}

/** Flushes dirty buffers so one scenario's writes are not checkpointed during the next one's timing. */
export async function checkpoint(url: string): Promise<void> {
  const client = pgClient({ connectionString: url });
  await client.connect();
  try {
    await client.query('CHECKPOINT');
  } catch {
    // CHECKPOINT needs superuser (or pg_checkpoint): without it the bench just runs on.
  } finally {
    await client.end();
  }
}
