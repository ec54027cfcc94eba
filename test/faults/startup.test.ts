import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createTestDatabase, deleteRedisPrefix, TEST_TOKEN_SECRET } from '../helpers/context.js';
import { pollUntil } from '../helpers/poll.js';
import { freePort, startSilentServer } from './helpers.js';

/**
 * Start-up and shutdown of the real processes, as an operator meets them: a database or Redis that
 * does not answer is one line on stderr naming the variable (never a password, never a stack trace)
 * and exit 1; a missing token secret outside development stops start-up; and SIGTERM, or Ctrl-C,
 * to `npm start` / `npm run dev` stops the server with exit 0, nothing left running or listening.
 *
 * The server is started with the package's own script, run as npm runs it (`sh -c '<script>'`
 * with node_modules/.bin on PATH), so a script that leaves a shell between the signal and node
 * fails here. Each start gets its own process group, killed at the end whatever happened.
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SCRIPTS = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
const EXIT_DEADLINE_MS = 30_000;
/** Each start compiles the service with tsx (seconds of CPU): more at once only makes each slower. */
const MAX_PARALLEL_STARTS = 3;

interface Started {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const groups: number[] = [];
let starting = 0;
const waiting: Array<() => void> = [];

/** Runs `fn` once fewer than MAX_PARALLEL_STARTS others are running. */
async function limited<T>(fn: () => Promise<T>): Promise<T> {
  if (starting >= MAX_PARALLEL_STARTS) await new Promise<void>((resolve) => waiting.push(resolve));
  starting++;
  try {
    return await fn();
  } finally {
    starting--;
    waiting.shift()?.();
  }
}

/** Runs a command line with a minimal environment (nothing from the test runner leaks in). */
function start(command: string, env: Record<string, string>): Started {
  const child = spawn('/bin/sh', ['-c', command], {
    cwd: ROOT,
    env: { PATH: `${path.join(ROOT, 'node_modules/.bin')}${path.delimiter}${process.env.PATH ?? ''}`, HOME: process.env.HOME ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true, // a process group of its own, as a terminal gives `npm start`
  });
  groups.push(child.pid!);
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  return { child, stdout: () => stdout, stderr: () => stderr, exited };
}

const npmScript = (name: string, env: Record<string, string>) => start(SCRIPTS[name]!, env);
const WORKER = 'exec node --import tsx workers/all.ts';

async function exitWithin(p: Started, ms = EXIT_DEADLINE_MS): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`still running after ${ms} ms; stdout: ${p.stdout()} stderr: ${p.stderr()}`)), ms);
  });
  try {
    return await Promise.race([p.exited, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Starts a command that is expected to stop by itself, and waits (within the deadline) for it to. */
async function runToExit(command: string, env: Record<string, string>): Promise<{ p: Started; exit: Awaited<Started['exited']> }> {
  return limited(async () => {
    const p = start(command, env);
    return { p, exit: await exitWithin(p) };
  });
}

/** True while any process of the group started as `pgid` is alive (zombies included until reaped). */
function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}


/** Whether something accepts TCP connections on 127.0.0.1:port. */
async function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

async function healthz(port: number): Promise<boolean> {
  try {
    return (await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(1_000) })).status === 200;
  } catch {
    return false;
  }
}

/** The one-line contract of a start-up failure. */
function expectOneLine(p: Started, pattern: RegExp, secrets: string[] = []): void {
  const stderr = p.stderr();
  expect(stderr, stderr).toMatch(/^[^\n]+\n$/);
  expect(stderr).toMatch(pattern);
  expect(stderr).not.toMatch(/^\s*at /m);
  for (const s of secrets) expect(stderr).not.toContain(s);
}


let database: { url: string; drop: () => Promise<void> };
const redisUrl = inject('redisUrl');
const prefix = `t${randomBytes(5).toString('hex')}`;
const UNREACHABLE_DB = 'postgres://postgres:db-password-never-printed@127.0.0.1:1/x';
const UNREACHABLE_REDIS = 'redis://:redis-password-never-printed@127.0.0.1:1';

beforeAll(async () => {
  database = await createTestDatabase();
});

afterAll(async () => {
  // Whatever a failed test left behind: every process it started, by process group.
  for (const pgid of groups) {
    try {
      process.kill(-pgid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  await deleteRedisPrefix(redisUrl, prefix);
  await database?.drop();
});

describe.concurrent('start-up failures are one line and exit 1', { timeout: 60_000 }, () => {
  const configured = { NODE_ENV: 'test', TOKEN_SECRET: TEST_TOKEN_SECRET, LOG_LEVEL: 'warn' };

  it('npm start with a database that does not answer names DATABASE_URL and the host:port, never the password', async () => {
    const { p, exit } = await runToExit(SCRIPTS.start!, { ...configured, DATABASE_URL: UNREACHABLE_DB, REDIS_URL: UNREACHABLE_REDIS });
    expect(exit).toEqual({ code: 1, signal: null });
    expectOneLine(p, /^DATABASE_URL: .*127\.0\.0\.1:1\b/, ['db-password-never-printed']);
  });

  it('npm start with a Redis that refuses connections names REDIS_URL and the host:port, never the password', async () => {
    const { p, exit } = await runToExit(SCRIPTS.start!, { ...configured, DATABASE_URL: database.url, REDIS_URL: UNREACHABLE_REDIS, SKIP_MIGRATIONS: '1' });
    expect(exit).toEqual({ code: 1, signal: null });
    expectOneLine(p, /^REDIS_URL: .*127\.0\.0\.1:1\b/, ['redis-password-never-printed']);
  });

  it('npm start with a Redis that accepts and never answers gives up after a bounded wait', async () => {
    const silent = await startSilentServer();
    try {
      const { p, exit } = await runToExit(SCRIPTS.start!, { ...configured, DATABASE_URL: database.url, REDIS_URL: `redis://127.0.0.1:${silent.port}`, SKIP_MIGRATIONS: '1' });
      expect(exit).toEqual({ code: 1, signal: null });
      expectOneLine(p, new RegExp(`^REDIS_URL: .*127\\.0\\.0\\.1:${silent.port}: no answer within 2\\.5 s$`, 'm'));
    } finally {
      await silent.close();
    }
  });

  it('npm start with NODE_ENV unset and no TOKEN_SECRET refuses to start, naming TOKEN_SECRET', async () => {
    const { p, exit } = await runToExit(SCRIPTS.start!, { DATABASE_URL: database.url, REDIS_URL: redisUrl, LOG_LEVEL: 'warn' });
    expect(exit).toEqual({ code: 1, signal: null });
    expectOneLine(p, /^invalid configuration: TOKEN_SECRET is required unless NODE_ENV is development or test \(NODE_ENV is unset, which means production\)$/m);
  });

  it('npm start with an unknown NODE_ENV refuses to start, naming NODE_ENV', async () => {
    const { p, exit } = await runToExit(SCRIPTS.start!, { NODE_ENV: 'staging', TOKEN_SECRET: TEST_TOKEN_SECRET, DATABASE_URL: database.url, REDIS_URL: redisUrl });
    expect(exit).toEqual({ code: 1, signal: null });
    expectOneLine(p, /^invalid configuration: NODE_ENV must be development, test or production/);
  });

  it('a worker process with a database that does not answer says so in one line and exits 1', async () => {
    const { p, exit } = await runToExit(WORKER, { ...configured, DATABASE_URL: UNREACHABLE_DB, REDIS_URL: UNREACHABLE_REDIS });
    expect(exit).toEqual({ code: 1, signal: null });
    expectOneLine(p, /^DATABASE_URL: .*127\.0\.0\.1:1\b/, ['db-password-never-printed']);
  });

  it('a worker process with a Redis that does not answer says so in one line and exits 1 (and needs no TOKEN_SECRET)', async () => {
    const { p, exit } = await runToExit(WORKER, { DATABASE_URL: database.url, REDIS_URL: UNREACHABLE_REDIS, LOG_LEVEL: 'warn' });
    expect(exit).toEqual({ code: 1, signal: null });
    expectOneLine(p, /^REDIS_URL: .*127\.0\.0\.1:1\b/, ['redis-password-never-printed']);
  });
});

describe('stopping the server', { timeout: 90_000 }, () => {
  async function running(script: string, env: Record<string, string>): Promise<{ p: Started; port: number }> {
    const port = await freePort();
    const p = npmScript(script, { DATABASE_URL: database.url, REDIS_URL: redisUrl, REDIS_PREFIX: prefix, PORT: String(port), ...env });
    await pollUntil(async () => (await healthz(port)) || p.child.exitCode !== null, { timeoutMs: 45_000, intervalMs: 100, what: `/healthz on ${port}` });
    expect(p.child.exitCode, `exited at start-up: ${p.stderr()}`).toBeNull();
    return { p, port };
  }

  async function expectStoppedCleanly(p: Started, port: number): Promise<void> {
    expect(await exitWithin(p)).toEqual({ code: 0, signal: null });
    expect(await accepts(port)).toBe(false);
    // Nothing of the group is left: no orphaned node behind a shell that died.
    await pollUntil(async () => !groupAlive(p.child.pid!), { timeoutMs: 5_000, what: 'every process of the group to be gone' });
  }

  it('SIGTERM to npm start closes gracefully: exit 0, nothing left listening or running', async () => {
    const { p, port } = await running('start', { NODE_ENV: 'test', TOKEN_SECRET: TEST_TOKEN_SECRET, LOG_LEVEL: 'info' });
    p.child.kill('SIGTERM');
    await expectStoppedCleanly(p, port);
    expect(p.stdout()).toContain('"signal":"SIGTERM","msg":"shutting down"');
  });

  it('Ctrl-C to npm run dev (SIGINT to the group, then once more as npm forwards it) closes gracefully with exit 0; dev warns about its secret', async () => {
    // No NODE_ENV and no TOKEN_SECRET: the dev script says development itself, and warns.
    const { p, port } = await running('dev', { LOG_LEVEL: 'info' });
    expect(p.stdout()).toMatch(/TOKEN_SECRET is not set: using the development secret \(NODE_ENV=development\)/);
    process.kill(-p.child.pid!, 'SIGINT'); // the terminal signals the whole foreground group
    p.child.kill('SIGINT'); // and npm forwards the same Ctrl-C to its child
    await expectStoppedCleanly(p, port);
    expect(p.stdout().match(/"msg":"shutting down"/g)).toHaveLength(1);
  });
});
