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

export async function spawnWorker(config: Config, env: Record<string, string>): Promise<WorkerProcess> {
  let output = '';
  const child = spawn(process.execPath, ['--import', 'tsx', 'workers/all.ts'], {
    env: {
      ...process.env,
      NODE_ENV: 'test',
      DATABASE_URL: config.databaseUrl,
      REDIS_URL: config.redisUrl,
      REDIS_PREFIX: config.redisPrefix,
      TOKEN_SECRET: config.tokenSecret,
      LOG_LEVEL: 'info',
      DATABASE_POOL_SIZE: '8',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  await pollUntil(async () => output.includes('workers started') || child.exitCode !== null, { timeoutMs: 30_000, what: 'the worker to start' });
  if (child.exitCode !== null) throw new Error(`worker exited at start-up: ${output}`);
  return {
    child,
    output: () => output,
    async kill(signal) {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = once(child, 'exit');
      child.kill(signal);
      await exited;
    },
  };
}
