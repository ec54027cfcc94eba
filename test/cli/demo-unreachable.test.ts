import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, inject, it } from 'vitest';

/**
 * `npm run demo` on a machine where PostgreSQL or Redis is not running: it says which one, and how
 * to start it, instead of blaming the service with a stack trace.
 */
const ROOT = path.resolve(import.meta.dirname, '../..');

const demo = (env: Record<string, string>) =>
  spawnSync(process.execPath, ['--import', 'tsx', 'src/cli/demo.ts'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, DEMO_VENDOR_PORT: '0', ...env },
    encoding: 'utf8',
    timeout: 60_000,
  });

describe('npm run demo without its services', () => {
  it.each([
    ['PostgreSQL', { DATABASE_URL: 'postgres://postgres:s3cret@127.0.0.1:1/demo', REDIS_URL: inject('redisUrl') }, /^DATABASE_URL: cannot use PostgreSQL at 127\.0\.0\.1:1/],
    ['Redis', { DATABASE_URL: `${inject('adminDatabaseUrl')}`, REDIS_URL: 'redis://127.0.0.1:1' }, /^REDIS_URL: cannot use Redis at 127\.0\.0\.1:1/],
  ])('names %s, says how to start it, exits 1', (_name, env, first) => {
    const run = demo(env);
    expect(run.status, run.stderr).toBe(1);
    const lines = run.stderr.split('\n').filter((l) => l.trim() !== '' && !/npm warn/i.test(l));
    expect(lines[0]).toMatch(first);
    expect(lines[1]).toMatch(/docker compose up -d/);
    expect(lines).toHaveLength(2);
    expect(run.stderr).not.toContain('s3cret');
    expect(run.stderr).not.toMatch(/^\s+at /m);
  });
});
