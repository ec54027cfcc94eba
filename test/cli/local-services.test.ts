import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { startEmbeddedPostgres, startLocalRedis, stopLeftovers } from '../../src/dev/local-services.js';
import { pollUntil } from '../helpers/poll.js';

/**
 * Zero set-up (docs/local-services.md): with DATABASE_URL and REDIS_URL unset, the demo and the
 * tests start an embedded PostgreSQL and a redis-server of their own, on 127.0.0.1, and stop them;
 * a run killed outright leaves nothing that the next run does not stop.
 */
const ROOT = path.resolve(import.meta.dirname, '../..');
const work = mkdtempSync(path.join(tmpdir(), 'di-local-'));
// As root the clusters run as the postgres user, which must be able to reach their folders.
chmodSync(work, 0o755);
afterAll(() => rmSync(work, { recursive: true, force: true }));

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** The servers recorded as owned by `owner` (see stopLeftovers). */
function ownedBy(owner: number): Array<{ kind: string; pid: number; dir: string }> {
  const dir = path.join(tmpdir(), `di-local-services-${String(process.getuid?.() ?? 'user')}`);
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .map((f) => {
      try {
        return JSON.parse(readFileSync(path.join(dir, f), 'utf8')) as { kind: string; pid: number; owner: number; dir: string };
      } catch {
        return undefined;
      }
    })
    .filter((r): r is { kind: string; pid: number; owner: number; dir: string } => r !== undefined && r.owner === owner);
}

const databases = async (): Promise<string[]> => {
  const admin = new pg.Client({ connectionString: inject('adminDatabaseUrl') });
  await admin.connect();
  try {
    return (await admin.query<{ datname: string }>('SELECT datname FROM pg_database ORDER BY 1')).rows.map((r) => r.datname);
  } finally {
    await admin.end();
  }
};

describe('the embedded PostgreSQL', () => {
  it('listens on 127.0.0.1 only, wants its password, keeps a kept cluster across restarts, and stops', async () => {
    const dir = path.join(work, 'kept');
    const first = await startEmbeddedPostgres({ dir, keep: true, database: 'demo_db' });
    const url = new URL(first.url);
    expect(url.hostname).toBe('127.0.0.1');
    const client = new pg.Client({ connectionString: first.url });
    await client.connect();
    expect((await client.query('SHOW listen_addresses')).rows[0]).toEqual({ listen_addresses: '127.0.0.1' });
    expect((await client.query('SELECT current_database() AS db')).rows[0]).toEqual({ db: 'demo_db' });
    await client.query('CREATE TABLE kept (n int); INSERT INTO kept VALUES (42)');
    await client.end();
    // Without the password: refused.
    const intruder = new pg.Client({ host: '127.0.0.1', port: Number(url.port), user: 'postgres', password: 'wrong', database: 'postgres' });
    await expect(intruder.connect()).rejects.toThrow(/password authentication failed/);
    await first.stop();
    await expect(new pg.Client({ connectionString: first.url, connectionTimeoutMillis: 2_000 }).connect()).rejects.toThrow();
    expect(existsSync(path.join(dir, 'PG_VERSION'))).toBe(true);

    const second = await startEmbeddedPostgres({ dir, keep: true, database: 'demo_db' });
    const again = new pg.Client({ connectionString: second.url });
    await again.connect();
    expect((await again.query('SELECT n FROM kept')).rows).toEqual([{ n: 42 }]);
    await again.end();
    await second.stop();
  }, 120_000);

  it('a throwaway cluster is removed at stop', async () => {
    const dir = path.join(work, 'throwaway');
    const server = await startEmbeddedPostgres({ dir, keep: false });
    expect(existsSync(path.join(dir, 'PG_VERSION'))).toBe(true);
    await server.stop();
    expect(existsSync(dir)).toBe(false);
    expect(existsSync(`${dir}.password`)).toBe(false);
  }, 120_000);
});

describe('the local redis-server', () => {
  it('runs without persistence, never evicts, wants its password, and stops', async () => {
    const server = await startLocalRedis();
    const redis = new Redis(server.url, { maxRetriesPerRequest: 1 });
    try {
      expect(await redis.ping()).toBe('PONG');
      expect(await redis.config('GET', 'maxmemory-policy')).toEqual(['maxmemory-policy', 'noeviction']);
      expect(await redis.config('GET', 'save')).toEqual(['save', '']);
      expect(await redis.config('GET', 'appendonly')).toEqual(['appendonly', 'no']);
      expect(await redis.config('GET', 'bind')).toEqual(['bind', '127.0.0.1']);
    } finally {
      redis.disconnect();
    }
    const port = Number(new URL(server.url).port);
    const anonymous = new Redis({ host: '127.0.0.1', port, maxRetriesPerRequest: 0, retryStrategy: () => null, lazyConnect: true, enableReadyCheck: false });
    anonymous.on('error', () => undefined);
    await anonymous.connect();
    await expect(anonymous.ping()).rejects.toThrow(/NOAUTH/);
    anonymous.disconnect();
    await server.stop();
    const gone = new Redis({ host: '127.0.0.1', port, maxRetriesPerRequest: 0, retryStrategy: () => null, lazyConnect: true, connectTimeout: 2_000 });
    gone.on('error', () => undefined);
    await expect(gone.connect()).rejects.toThrow();
    gone.disconnect();
  }, 60_000);
});

describe('a run killed with SIGKILL', () => {
  it('leaves servers that the next start stops', async () => {
    // A process that starts both and is then killed outright, before it can stop them.
    const script = `
      import { startEmbeddedPostgres, startLocalRedis } from './src/dev/local-services.ts';
      await startEmbeddedPostgres({ dir: ${JSON.stringify(path.join(work, 'orphan'))}, keep: false });
      await startLocalRedis();
      console.log('started');
      setInterval(() => {}, 1000);
    `;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    await pollUntil(async () => out.includes('started') || child.exitCode !== null, { timeoutMs: 90_000, what: 'the child to start its servers' });
    expect(out).toContain('started');
    const servers = ownedBy(child.pid!);
    expect(servers.map((s) => s.kind).sort()).toEqual(['postgres', 'redis']);
    const exited = once(child, 'exit');
    child.kill('SIGKILL');
    await exited;
    // Still running: nothing stopped them.
    for (const s of servers) expect(alive(s.pid), s.kind).toBe(true);

    expect(await stopLeftovers()).toBeGreaterThanOrEqual(2);
    for (const s of servers) expect(alive(s.pid), s.kind).toBe(false);
    expect(ownedBy(child.pid!)).toEqual([]);
    expect(existsSync(path.join(work, 'orphan'))).toBe(false);
  }, 120_000);
});

describe('npm run demo with nothing configured', () => {
  const demoEnv = (extra: Record<string, string> = {}) => ({
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    DEMO_VENDOR_PORT: '0',
    DEMO_ACCOUNTS: '20',
    DEMO_POSTGRES_DIR: path.join(work, 'demo-postgres'),
    PORT: '0',
    ...extra,
  });

  it('starts its own PostgreSQL and Redis, migrates its cohort, exits 0, and leaves the default database alone', async () => {
    // Other test files create and drop databases meanwhile: only the one the demo would use is compared (.ci/run compares them all).
    const before = (await databases()).includes('data_import');
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/demo.ts'], { cwd: ROOT, env: demoEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    let servers: Array<{ kind: string; pid: number }> = [];
    await pollUntil(async () => ((servers = ownedBy(child.pid!)).length === 2 ? true : child.exitCode !== null), { timeoutMs: 90_000, what: 'the demo to start its servers' });
    const [code] = (await once(child, 'exit')) as [number | null];
    expect(code, out).toBe(0);
    expect(out).toMatch(/DATABASE_URL is unset: embedded PostgreSQL started/);
    expect(out).toMatch(/REDIS_URL is unset: redis-server started/);
    expect(out).toMatch(/total 20, succeeded 20, failed 0/);
    expect(servers.map((s) => s.kind).sort()).toEqual(['postgres', 'redis']);
    for (const s of servers) expect(alive(s.pid), s.kind).toBe(false);
    expect(ownedBy(child.pid!)).toEqual([]);
    expect((await databases()).includes('data_import')).toBe(before);
    // The demo's cluster is kept for the next run.
    expect(existsSync(path.join(work, 'demo-postgres', 'PG_VERSION'))).toBe(true);
  }, 240_000);

  it('SIGTERM while it runs stops the servers it started, exit 143', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/demo.ts'], { cwd: ROOT, env: demoEnv({ DEMO_ACCOUNTS: '2000' }), stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    await pollUntil(async () => /service \(API and workers\) started/.test(out) || child.exitCode !== null, { timeoutMs: 90_000, what: 'the demo to start the service' });
    const servers = ownedBy(child.pid!);
    expect(servers).toHaveLength(2);
    const exited = once(child, 'exit');
    child.kill('SIGTERM');
    const [code] = (await exited) as [number | null];
    expect(code, out).toBe(143);
    for (const s of servers) expect(alive(s.pid), s.kind).toBe(false);
    expect(ownedBy(child.pid!)).toEqual([]);
  }, 180_000);

  it('without redis-server on PATH: one line saying how to get it, exit 1', () => {
    // PATH holds node only (where node lives, redis-server often lives too).
    const bin = path.join(work, 'bin');
    mkdirSync(bin);
    symlinkSync(process.execPath, path.join(bin, 'node'));
    const run = spawnSync(process.execPath, ['--import', 'tsx', 'src/cli/demo.ts'], {
      cwd: ROOT,
      env: demoEnv({ PATH: bin, DATABASE_URL: inject('adminDatabaseUrl') }),
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(run.status, run.stderr).toBe(1);
    const lines = run.stderr.split('\n').filter((l) => l.trim() !== '');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^REDIS_URL is unset and no redis-server is on PATH: install it \(`apt-get install redis-server`, `brew install redis`\)/);
  });
});
