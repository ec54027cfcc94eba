import { afterAll, beforeAll, expect, it } from 'vitest';
import { createApiKey } from '../../src/auth/api-keys.js';
import { startFakeGateway, type FakeGateway } from '../helpers/fake-gateway.js';
import { pollUntil } from '../helpers/poll.js';
import { LONG } from '../queue/helpers.js';
import { createPipelineContext, type PipelineContext } from '../queue/setup.js';
import { startImportctl, type RunResult } from './run-cli.js';

// importctl's registration commands (issue 15, part 4): a supplier's automatic registration, a
// batch's accounts at once, and a withdrawal, each as an operator types it.

let ctx: PipelineContext;
let gateway: FakeGateway;
let apiEnv: Record<string, string>;
const importctl = async (args: string[], env = apiEnv): Promise<RunResult> => (await startImportctl(args, env, 60_000)).done;

beforeAll(async () => {
  gateway = await startFakeGateway();
  ctx = await createPipelineContext({ env: { REGISTRATION_GATEWAY_URL: gateway.url, REGISTRATION_GATEWAY_KEY: gateway.key, REGISTRATION_POLL_MS: '200' } });
  await ctx.createTeam('CLI Team');
  ctx.startWorkers();
  const url = await ctx.app.listen({ host: '127.0.0.1', port: 0 });
  const { key } = await createApiKey(ctx.deps.db, 'registration-cli');
  apiEnv = { IMPORT_API_URL: url, IMPORT_API_KEY: key };
}, LONG);
afterAll(async () => {
  await ctx?.close();
  await gateway?.close();
});

it('creates a supplier that registers automatically, and turns it off and on, each change audited', { timeout: LONG }, async () => {
  const db = { DATABASE_URL: ctx.config.databaseUrl };
  const created = await importctl(['supplier', 'create', 'AUTOREG', '--documents-root', 'autoreg', '--auto-register'], db);
  expect(created.code, created.stderr).toBe(0);
  const since = async () => (await ctx.deps.db.selectFrom('import_suppliers').select('auto_register_since').where('code', '=', 'AUTOREG').executeTakeFirstOrThrow()).auto_register_since;
  expect(await since()).toBeInstanceOf(Date);
  const off = await importctl(['supplier', 'set-auto-register', 'AUTOREG', 'off'], db);
  expect(off.stdout).toBe('supplier AUTOREG does not register automatically\n');
  expect(await since()).toBeNull();
  const on = await importctl(['supplier', 'set-auto-register', 'AUTOREG', 'on'], db);
  expect(on.stdout).toMatch(/^supplier AUTOREG registers the accounts created since \d{4}-\d\d-\d\dT/);
  const bad = await importctl(['supplier', 'set-auto-register', 'AUTOREG', 'maybe'], db);
  expect(bad.code).toBe(2);
  const lines = await ctx.deps.db.selectFrom('audit_log').select('action').where('target', '=', 'AUTOREG').orderBy('id').execute();
  expect(lines.map((l) => l.action)).toEqual(['supplier.create', 'supplier.set_auto_register', 'supplier.set_auto_register']);
});

it("registers a batch's accounts, then withdraws one account's registration", { timeout: LONG }, async () => {
  await ctx.createSupplier('CLIREG', { documentsRoot: 'clireg' });
  const { ndjson, accounts } = await ctx.cohort({ count: 2, supplier: 'CLIREG', prefix: 'CR', seed: 4 });
  const { batch_id } = await ctx.upload(ndjson, { supplier: 'CLIREG', team: 'CLI Team' });
  await ctx.waitForEnd(batch_id, LONG);
  const points = await ctx.deps.db.selectFrom('meter_points as m').innerJoin('accounts as a', 'a.id', 'm.account_id').select(['m.identifier', 'a.external_account_number']).where('a.external_account_number', 'in', accounts.map((a) => a.bundle.account.external_account_number as string)).execute();

  const reg = await importctl(['batch', 'register', batch_id]);
  expect(reg.code, reg.stderr).toBe(0);
  expect(reg.stdout).toBe(`batch ${batch_id}: ${points.length} meter point(s) of 2 account(s) marked for registration, 0 left as they were\n`);
  const status = async (mpxn: string) => (await ctx.deps.db.selectFrom('meter_points').select('registration_status').where('identifier', '=', mpxn).executeTakeFirstOrThrow()).registration_status;
  await pollUntil(async () => ((await Promise.all(points.map((p) => status(p.identifier)))).every((s) => s === 'REGISTRATION_REQUESTED') ? true : undefined), { timeoutMs: LONG, what: 'the requests to be taken' });

  const ext = points[0]!.external_account_number;
  const mine = points.filter((p) => p.external_account_number === ext);
  const withdrawn = await importctl(['registration', 'withdraw', 'CLIREG', ext]);
  expect(withdrawn.code, withdrawn.stderr).toBe(0);
  expect(withdrawn.lines.sort()).toEqual(mine.map((p) => `${p.identifier}  WITHDRAWAL_FLOW_SUCCESS`).sort());
  await pollUntil(async () => ((await Promise.all(mine.map((p) => status(p.identifier)))).every((s) => s === 'WITHDRAWAL_REQUESTED') ? true : undefined), { timeoutMs: LONG, what: 'the withdrawals to be taken' });
  const again = await importctl(['registration', 'withdraw', 'CLIREG', ext, mine[0]!.identifier]);
  expect(again.code).toBe(1);
  expect(again.stdout).toBe(`${mine[0]!.identifier}  WITHDRAWAL_FLOW_ERROR  Nothing to withdraw: the meter point is WITHDRAWAL_REQUESTED.\n`);
});
