import { userInfo } from 'node:os';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { LONG } from '../queue/helpers.js';
import { createPipelineContext, type PipelineContext } from '../queue/setup.js';
import { startImportctl, type RunResult } from './run-cli.js';

// The audit log (issue 13): every change importctl makes is a line as the user who ran it, the API's
// batch actions are lines as the API key, and what changed nothing (a refusal, an ended batch's
// cancel) is no line.

let ctx: PipelineContext;
let env: Record<string, string>;
const importctl = async (args: string[]): Promise<RunResult> => (await startImportctl(args, env, 60_000)).done;
const USER = userInfo().username;

interface Line {
  at: string;
  actor_kind: string;
  actor: string;
  action: string;
  target_kind: string;
  target: string;
  detail: Record<string, unknown>;
}
const audit = async (...args: string[]): Promise<Line[]> => {
  const r = await importctl(['audit', 'list', '--json', ...args]);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as Line[];
};

beforeAll(async () => {
  ctx = await createPipelineContext();
  env = { DATABASE_URL: ctx.config.databaseUrl };
});
afterAll(async () => ctx?.close());

it('records what importctl changed, as the user who ran it, newest first; a refused command records nothing', { timeout: LONG }, async () => {
  for (const args of [
    ['supplier', 'create', 'AUDCO', '--name', 'Audit Co', '--documents-root', 'aud'],
    ['supplier', 'set-status', 'AUDCO', 'paused'],
    ['supplier', 'set-status', 'AUDCO', 'ongoing'],
    ['team', 'create', 'Audit Team'],
    ['supplier', 'set-team', 'AUDCO', 'Audit Team'],
    ['api-key', 'create', 'aud-key', '--supplier', 'AUDCO'],
    ['account', 'skip', 'AUDCO', 'AUD-SKIP-1'],
    ['api-key', 'revoke', 'aud-key'],
  ]) {
    const r = await importctl(args);
    expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(0);
  }
  // Refused: nothing changed, no line.
  for (const args of [
    ['supplier', 'set-status', 'NOPE', 'paused'],
    ['api-key', 'revoke', 'no-such-key'],
    ['team', 'create', 'Audit Team'],
  ]) {
    expect((await importctl(args)).code, args.join(' ')).toBe(1);
  }

  const lines = await audit();
  expect(lines.map((l) => [l.actor_kind, l.actor, l.action, l.target_kind, l.target])).toEqual([
    ['cli', USER, 'api_key.revoke', 'api_key', 'aud-key'],
    ['cli', USER, 'account.skip', 'account', 'AUDCO/AUD-SKIP-1'],
    ['cli', USER, 'api_key.create', 'api_key', 'aud-key'],
    ['cli', USER, 'supplier.set_team', 'supplier', 'AUDCO'],
    ['cli', USER, 'team.create', 'team', 'Audit Team'],
    ['cli', USER, 'supplier.set_status', 'supplier', 'AUDCO'],
    ['cli', USER, 'supplier.set_status', 'supplier', 'AUDCO'],
    ['cli', USER, 'supplier.create', 'supplier', 'AUDCO'],
  ]);
  expect(lines.find((l) => l.action === 'api_key.create')!.detail).toEqual({ suppliers: ['AUDCO'] });
  // The key itself is never written down.
  expect(JSON.stringify(lines)).not.toMatch(/dik_/);
  expect(lines.filter((l) => l.action === 'supplier.set_status').map((l) => l.detail)).toEqual([{ status: 'ONGOING' }, { status: 'PAUSED' }]);
  expect((await audit('--supplier', 'AUDCO', '--limit', '2')).map((l) => l.action)).toEqual(['supplier.set_team', 'supplier.set_status']);
});

it("records the API's batch actions as the API key that made them; an ended batch's cancel changes nothing and records nothing", async () => {
  await ctx.createSupplier('AUDAPI', { documentsRoot: 'audapi' });
  await ctx.createTeam('Audit API Team');
  const auth = await ctx.authHeaders();
  const keyName = (await ctx.deps.pool.query<{ name: string }>('SELECT name FROM api_keys ORDER BY id DESC LIMIT 1')).rows[0]!.name;
  const workers = ctx.startWorkers();
  try {
    const { ndjson } = await ctx.cohort({ count: 2, supplier: 'AUDAPI', prefix: 'AUDA', seed: 3 });
    const { batch_id } = await ctx.upload(ndjson, { supplier: 'AUDAPI', team: 'Audit API Team' }, auth);
    expect(await ctx.waitForEnd(batch_id, LONG)).toMatchObject({ state: 'COMPLETED', succeeded: 2 });
    const retry = await ctx.app.inject({ method: 'POST', url: `/v1/data-import/batches/${batch_id}/retry/`, payload: {}, headers: auth });
    expect(retry.json()).toEqual({ requeued: 0 });
    const cancel = await ctx.app.inject({ method: 'POST', url: `/v1/data-import/batches/${batch_id}/cancel/`, headers: auth });
    expect(cancel.statusCode).toBe(200);

    const lines = await audit('--batch', batch_id);
    expect(lines.map((l) => [l.actor_kind, l.actor, l.action])).toEqual([
      ['api_key', keyName, 'batch.retry'],
      ['api_key', keyName, 'batch.upload'],
    ]);
    expect(lines[1]!.detail).toEqual({ import_supplier: 'AUDAPI', operations_team_name: 'Audit API Team', dry_run: false, register: false, total_items: 2 });
    expect(lines[0]!.detail).toEqual({ requeued: 0 });
  } finally {
    await workers.close(5_000);
  }
}, LONG);

it('refuses bad options in one line', { timeout: 60_000 }, async () => {
  const [both, badLimit] = await Promise.all([importctl(['audit', 'list', '--batch', 'x', '--supplier', 'y']), importctl(['audit', 'list', '--limit', '0'])]);
  expect([both.code, both.stderr.trim()]).toEqual([2, 'importctl: give --batch or --supplier, not both']);
  expect(badLimit.code).toBe(2);
  expect(badLimit.stderr).toMatch(/--limit.*whole number from 1 to 10,000/);
});
