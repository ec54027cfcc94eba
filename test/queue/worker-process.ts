import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import type { Config } from '../../src/config.js';
import { pollUntil } from '../helpers/poll.js';

/** A real worker process (workers/all.ts) on the test's database and Redis prefix. */
export interface WorkerProcess {
  child: ChildProcess;
  output(): string;
  kill(signal: NodeJS.Signals): Promise<void>;
}

export interface SpawnOptions {
  /** The worker is pushed here before start-up is awaited, so one that fails to start is still killed by the caller. */
  registry?: WorkerProcess[];
  startTimeoutMs?: number;
  /** The entry point (default workers/all.ts: every queue). */
  script?: string;
}

export async function spawnWorker(config: Config, env: Record<string, string>, opts: SpawnOptions = {}): Promise<WorkerProcess> {
  let output = '';
  const child = spawn(process.execPath, ['--import', 'tsx', opts.script ?? 'workers/all.ts'], {
    env: {
      ...process.env,
      NODE_ENV: 'test',
      DATABASE_URL: config.databaseUrl,
      REDIS_URL: config.redisUrl,
      REDIS_PREFIX: config.redisPrefix,
      TOKEN_SECRET: config.tokenSecret,
      DATABASE_POOL_SIZE: '8',
      ...env,
      // The start-up line awaited below is logged at info.
      LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  const worker: WorkerProcess = {
    child,
    output: () => output,
    async kill(signal) {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = once(child, 'exit');
      child.kill(signal);
      await exited;
    },
  };
  opts.registry?.push(worker);
  await pollUntil(async () => output.includes('workers started') || child.exitCode !== null, {
    timeoutMs: opts.startTimeoutMs ?? 30_000,
    what: 'the worker to start',
  });
  if (child.exitCode !== null) throw new Error(`worker exited at start-up: ${output}`);
  return worker;
}
