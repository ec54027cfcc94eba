import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { STAGES } from '../../src/queue/contract.js';

/** A service process (compiled API or worker) started by the bench, with its recent output. */
export interface Service {
  readonly name: string;
  readonly child: ChildProcess;
  readonly pid: number;
  /** The last 64 KB of stdout and stderr. */
  output(): string;
  running(): boolean;
  /** SIGTERM, then SIGKILL after `graceMs`. Resolves once the process has exited. */
  stop(graceMs?: number): Promise<void>;
}

const OUTPUT_KEEP = 64 * 1024;

/**
 * Configuration this bench sets itself. Anything else the caller exported that the service reads
 * (S3, SMTP, operator credentials…) is removed, so a developer's shell cannot change what is measured;
 * WORKER_CONCURRENCY_* and PROCESS_CONCURRENCY_LIMIT pass through on purpose (tuning experiments).
 */
const STRIPPED = /^(S3_|SMTP_URL$|EMAIL_FROM$|OPERATOR_|PAYMENT_VENDOR|DOCUMENTS_DIR$|DATABASE_URL$|REDIS_|TOKEN_SECRET$|PORT$|HOST$|RUN_WORKERS$|SKIP_MIGRATIONS$|LOG_LEVEL$|NODE_ENV$|BATCH_MAX_|WORKER_METRICS_PORT$)/;

export function serviceEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!STRIPPED.test(k)) env[k] = v;
  return { ...env, ...extra };
}

export function startService(name: string, root: string, script: string, env: NodeJS.ProcessEnv, nodeFlags: readonly string[] = []): Service {
  const file = path.join(root, script);
  if (!existsSync(file)) throw new Error(`${file} does not exist: run npm run build (or drop --no-build)`);
  const child = spawn(process.execPath, [...nodeFlags, file], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
  if (child.pid === undefined) throw new Error(`could not start ${name}`);
  let output = '';
  const keep = (d: Buffer) => {
    output += d.toString();
    if (output.length > OUTPUT_KEEP) output = output.slice(-OUTPUT_KEEP);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = once(child, 'exit').then(() => undefined);
  const running = () => child.exitCode === null && child.signalCode === null;
  return {
    name,
    child,
    pid: child.pid,
    output: () => output,
    running,
    async stop(graceMs = 15_000) {
      if (!running()) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => {
        if (running()) child.kill('SIGKILL');
      }, graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** A TCP port free on 127.0.0.1 right now. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

const died = (s: Service) => new Error(`${s.name} exited during start-up (code ${s.child.exitCode ?? s.child.signalCode}):\n${s.output().slice(-4000)}`);

/** Waits until GET /healthz answers 200. */
export async function waitForHttp(service: Service, baseUrl: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (!service.running()) throw died(service);
    try {
      const res = await fetch(`${baseUrl}/healthz`);
      await res.arrayBuffer();
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
  throw new Error(`${service.name} did not answer ${baseUrl}/healthz within ${timeoutMs} ms:\n${service.output().slice(-4000)}`);
}

/**
 * Waits until each of `starting` has a worker connected to every stage queue, failing as soon as one
 * of them exits. BullMQ names a worker's connection after its queue and a worker process runs one
 * worker per queue, so that is when every queue counts one worker per running process of `all`
 * (which includes `starting`; one of the others that dies meanwhile is the caller's to notice).
 */
export async function waitForWorkers(starting: readonly Service[], all: readonly Service[], redis: Redis, prefix: string, timeoutMs = 30_000): Promise<void> {
  const queues = STAGES.map((name) => new Queue(name, { connection: redis, prefix }));
  try {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      for (const service of starting) if (!service.running()) throw died(service);
      const processes = all.filter((s) => s.running()).length;
      const counts = await Promise.all(queues.map((q) => q.getWorkersCount()));
      if (counts.every((n) => n >= processes)) return;
      await sleep(100);
    }
    const names = starting.map((s) => s.name).join(', ');
    const output = starting.map((s) => s.output().slice(-4000)).join('\n');
    throw new Error(`${names}: ${all.length === 1 ? 'no worker' : `fewer than ${all.length} workers`} on every stage queue within ${timeoutMs} ms:\n${output}`);
  } finally {
    // The connection is shared: close the Queue objects without closing it.
    await Promise.all(queues.map((q) => q.close().catch(() => undefined)));
  }
}
