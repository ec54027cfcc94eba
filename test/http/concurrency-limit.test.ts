import { spawn } from 'node:child_process';
import { once } from 'node:events';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/context.js';
import { accountPayload } from '../helpers/fixtures.js';
import { pollUntil } from '../helpers/poll.js';

let ctx: TestContext;
let auth: { authorization: string };
const S = 'LIMITED';
const TEAM = 'Team';

beforeAll(async () => {
  ctx = await createTestContext({ env: { PROCESS_CONCURRENCY_LIMIT: '1', PROCESS_PERMIT_TTL_MS: '1000' } });
  await ctx.createSupplier(S);
  await ctx.createTeam(TEAM);
  auth = await ctx.authHeaders();
});
afterAll(async () => ctx?.close());

const stage = async (ext: string) =>
  ctx.app.inject({ method: 'POST', url: '/v1/data-import/account-import-process/create-or-update/', payload: accountPayload(S, ext), headers: auth });
const processAccount = async (ext: string) =>
  ctx.app.inject({
    method: 'POST',
    url: '/v1/data-import/account-import-process/process/',
    payload: { external_account_number: ext, import_supplier_code: S, operations_team_name: TEAM },
    headers: auth,
  });

/** Holds a row lock on a pair's import process so a process call for it blocks mid-way (holding its permit). */
async function lockProcessRow(ext: string): Promise<{ release: () => Promise<void> }> {
  const client = new pg.Client({ connectionString: ctx.config.databaseUrl });
  await client.connect();
  await client.query('BEGIN');
  await client.query('SELECT id FROM account_import_processes WHERE external_account_number = $1 FOR UPDATE', [ext]);
  return {
    release: async () => {
      await client.query('COMMIT');
      await client.end();
    },
  };
}

describe('PROCESS_CONCURRENCY_LIMIT=1', () => {
  it('answers 429 with Retry-After to a second simultaneous process, which succeeds once the first is done', async () => {
    expect((await stage('C-1')).statusCode).toBe(201);
    expect((await stage('C-2')).statusCode).toBe(201);
    const lock = await lockProcessRow('C-1');
    const first = processAccount('C-1');
    await pollUntil(async () => (await ctx.deps.permits.inUse()) === 1, { what: 'the first call to hold the permit' });

    // While the first call runs, its status is IN_PROGRESS.
    const status = await ctx.app.inject({ method: 'GET', url: `/v1/data-import/account-transfer-status/${S}/C-1/`, headers: auth });
    expect(status.json()).toEqual({ status: 'IN_PROGRESS', service_account_number: '', kraken_account_number: '' });

    const second = await processAccount('C-2');
    expect(second.statusCode).toBe(429);
    expect(second.headers['retry-after']).toBe('1');
    expect(second.json()).toMatchObject({ code: 'concurrency_limit_exceeded', errors: [] });

    await lock.release();
    expect((await first).statusCode).toBe(201);
    expect(await ctx.deps.permits.inUse()).toBe(0);
    expect((await processAccount('C-2')).statusCode).toBe(201);
  });

  it('two concurrent calls for the same account: one account, the other call gets 429 or already-imported', async () => {
    expect((await stage('C-SAME')).statusCode).toBe(201);
    const results = await Promise.all([processAccount('C-SAME'), processAccount('C-SAME')]);
    const codes = results.map((r) => r.statusCode).sort();
    expect(codes[0]).toBe(201);
    const other = results.find((r) => r.statusCode !== 201)!;
    expect([400, 429]).toContain(other.statusCode);
    if (other.statusCode === 400) expect(other.json().code).toBe('account_import_process_already_imported');
    else expect(other.json().code).toBe('concurrency_limit_exceeded');
    const rows = await ctx.deps.db.selectFrom('accounts').select('id').where('external_account_number', '=', 'C-SAME').execute();
    expect(rows).toHaveLength(1);
  });

  it('a holder killed with SIGKILL does not keep its permit past the lease TTL', async () => {
    expect((await stage('C-CRASH')).statusCode).toBe(201);
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/helpers/hold-permit.ts'], {
      env: {
        ...process.env,
        REDIS_URL: ctx.config.redisUrl,
        REDIS_PREFIX: ctx.config.redisPrefix,
        PROCESS_CONCURRENCY_LIMIT: '1',
        PROCESS_PERMIT_TTL_MS: '1000',
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    try {
      const [line] = (await once(child.stdout!, 'data')) as [Buffer];
      expect(line.toString().trim()).toBe('held');
    } finally {
      // Killed whatever happened above, so a failing test never leaves the holder running.
      const exited = once(child, 'exit');
      child.kill('SIGKILL');
      await exited;
    }

    const blocked = await processAccount('C-CRASH');
    expect(blocked.statusCode).toBe(429);
    const ok = await pollUntil(async () => {
      const r = await processAccount('C-CRASH');
      return r.statusCode === 201 ? r : null;
    }, { timeoutMs: 10_000, intervalMs: 100, what: 'the dead holder’s lease to expire' });
    expect(ok.json().service_account_number).toMatch(/^A-[0-9A-F]{8}$/);
  });
});
