import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { createTestDatabase, deleteRedisPrefix } from '../helpers/context.js';
import { pollUntil } from '../helpers/poll.js';
import { freePort } from '../faults/helpers.js';

/**
 * The README's own examples, run as a new user runs them: `npm run dev`'s server (NODE_ENV=development,
 * the sandbox payment vendor in-process), then every command of "The main job" and of the
 * "Walk-through with curl", taken from README.md itself, so the README cannot drift from the code.
 * Only what a test must change is changed: the port, the cohort's size (5,000 → 20), the key
 * placeholder, and the cohort file's folder.
 */
const ROOT = path.resolve(import.meta.dirname, '../..');

function shellBlock(readme: string, heading: string): string {
  const at = readme.indexOf(`\n## ${heading}\n`);
  if (at < 0) throw new Error(`README.md has no section '${heading}'`);
  const block = /```sh\n([\s\S]*?)```/.exec(readme.slice(at));
  if (!block) throw new Error(`README.md section '${heading}' has no sh block`);
  return block[1]!;
}


let server: ChildProcess | undefined;
let serverOutput = '';
let database: Awaited<ReturnType<typeof createTestDatabase>>;
let work: string;
let env: NodeJS.ProcessEnv;
let port: number;
const prefix = `readme${randomBytes(4).toString('hex')}`;

beforeAll(async () => {
  database = await createTestDatabase();
  work = mkdtempSync(path.join(tmpdir(), 'di-readme-'));
  port = await freePort();
  env = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    NODE_ENV: 'development',
    PORT: String(port),
    HOST: '127.0.0.1',
    DATABASE_URL: database.url,
    REDIS_URL: inject('redisUrl'),
    REDIS_PREFIX: prefix,
    DOCUMENTS_DIR: path.join(work, 'documents'),
    LOG_LEVEL: 'warn',
  };
  // What `npm run dev` runs (package.json), with this test's database, Redis prefix and port.
  const dev = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts.dev!;
  expect(dev).toMatch(/NODE_ENV=development exec node --import tsx src\/server\.ts/);
  server = spawn(process.execPath, ['--import', 'tsx', 'src/server.ts'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  server.stdout!.on('data', (d: Buffer) => (serverOutput += d.toString()));
  server.stderr!.on('data', (d: Buffer) => (serverOutput += d.toString()));
  await pollUntil(
    async () => {
      if (server!.exitCode !== null) throw new Error(`the server exited: ${serverOutput}`);
      return fetch(`http://127.0.0.1:${port}/healthz`).then((r) => r.ok, () => false);
    },
    { timeoutMs: 60_000, intervalMs: 200, what: 'the dev server to answer /healthz' },
  );
}, 90_000);

afterAll(async () => {
  if (server && server.exitCode === null) {
    const exited = once(server, 'exit');
    server.kill('SIGTERM');
    await exited;
  }
  await deleteRedisPrefix(inject('redisUrl'), prefix).catch(() => undefined);
  await database?.drop();
  if (work) rmSync(work, { recursive: true, force: true });
});

it("runs the README's walk-through and cohort example against the development server, every command succeeding", () => {
  const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const walkthrough = shellBlock(readme, 'Walk-through with curl').replaceAll('localhost:3000', `localhost:${port}`);
  const cohort = shellBlock(readme, 'The main job: cohorts as batches')
    .replace('--count 5000', '--count 20')
    .replaceAll('IMPORT_API_KEY=dik_…', 'IMPORT_API_KEY=$KEY')
    .replaceAll('cohort.ndjson', path.join(work, 'cohort.ndjson'));
  expect(cohort).not.toContain('…');
  // curl -s hides HTTP errors: answers are checked below, and --fail-with-body stops the script at a 4xx/5xx.
  const script = ['set -euo pipefail', walkthrough.replaceAll('curl -s ', 'curl -s --fail-with-body '), cohort].join('\n');
  const run = spawnSync('bash', ['-c', script], { cwd: ROOT, env: { ...env, IMPORT_API_URL: `http://127.0.0.1:${port}` }, encoding: 'utf8', timeout: 240_000 });
  const output = `${run.stdout}\n${run.stderr}\n--- server ---\n${serverOutput}`;
  expect(run.status, output).toBe(0);
  expect(run.stdout).toMatch(/"status":"COMPLETED","service_account_number":"A-[0-9A-F]{8}"/);
  expect(run.stdout).toMatch(/"service_account_number":"A-[0-9A-F]{8}"/);
  expect(run.stdout).toMatch(/HTTP\/1\.1 200/);
  expect(run.stdout).toMatch(/"status":"IMPORTED"|"status":"TRANSACTION_IMPORTED"|"results"/);
}, 300_000);
