import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { ExpectStatic } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CLI = 'src/cli/importctl.ts';
/** Every start costs about a second of CPU: more at once would only make each slower and risk timeouts. */
const MAX_PARALLEL_RUNS = 4;

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
  /** stdout split into lines, without the empty string after the final newline. */
  lines: string[];
}

let running = 0;
const waiting: Array<() => void> = [];

/**
 * Starts importctl as a real process; `child` lets a test signal it while it runs. The CLI must exit
 * by itself: a leaked handle shows up as a SIGKILL after `timeoutMs`.
 */
export async function startImportctl(args: string[], env: Record<string, string>, timeoutMs: number): Promise<{ child: ChildProcess; done: Promise<RunResult> }> {
  if (running >= MAX_PARALLEL_RUNS) await new Promise<void>((resolve) => waiting.push(resolve));
  running++;
  // A minimal environment: nothing from the test runner leaks in, and Redis points nowhere, so a
  // command that touched Redis would hang or fail here.
  const child = spawn(process.execPath, ['--import', 'tsx', CLI, ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', NODE_ENV: 'test', REDIS_URL: 'redis://127.0.0.1:1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const done = new Promise<RunResult>((resolve, reject) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, lines: stdout.split('\n').slice(0, -1) });
    });
  }).finally(() => {
    running--;
    waiting.shift()?.();
  });
  return { child, done };
}

/** The CLI's error contract: nothing on stdout, exactly one `importctl: ` line on stderr. */
export function expectOneErrorLine(expect: ExpectStatic, r: RunResult, code: number, pattern: RegExp): void {
  expect({ code: r.code, stdout: r.stdout }).toEqual({ code, stdout: '' });
  expect(r.stderr).toMatch(/^importctl: [^\n]+\n$/);
  expect(r.stderr).toMatch(pattern);
}
