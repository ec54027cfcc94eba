import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeGateway, type FakeGateway } from '../helpers/fake-gateway.js';
import { pollUntil } from '../helpers/poll.js';
import { LONG } from '../queue/helpers.js';
import { createPipelineContext, type PipelineContext } from '../queue/setup.js';

// Registration in bulk and by hand (issue 15, parts 4 and 5): a batch's accounts at once, a batch
// uploaded with register=true, a supplier that registers automatically, a withdrawal, and the
// read-back of an account showing each meter point's status and history.

const TEAM = 'Bulk Team';
let ctx: PipelineContext;
let gateway: FakeGateway;

type Point = { mpxn: string; status: string };
const statusesOf = async (supplier: string, ext: string): Promise<Point[]> =>
  (await ctx.app.inject({ method: 'GET', url: `/v1/data-import/meterpoint-statuses-for-account/${supplier}/${ext}/`, headers: ctx.auth })).json<Point[]>();
const allAt = (supplier: string, exts: readonly string[], status: string) =>
  pollUntil(async () => ((await Promise.all(exts.map((e) => statusesOf(supplier, e)))).flat().every((p) => p.status === status) ? true : undefined), {
    timeoutMs: LONG,
    what: `every meter point to be ${status}`,
  });

async function migrate(supplier: string, prefix: string, count: number, query: Record<string, string> = {}): Promise<{ batchId: string; exts: string[] }> {
  const { ndjson, accounts } = await ctx.cohort({ count, supplier, prefix, seed: prefix.length * 7 + count });
  const res = await ctx.app.inject({
    method: 'POST',
    url: `/v1/data-import/batches/?${new URLSearchParams({ import_supplier: supplier, operations_team_name: TEAM, ...query })}`,
    payload: ndjson,
    headers: { ...ctx.auth, 'content-type': 'application/x-ndjson' },
  });
  expect(res.statusCode, res.body).toBe(202);
  const batchId = res.json<{ batch_id: string }>().batch_id;
  await ctx.waitForEnd(batchId, LONG);
  return { batchId, exts: accounts.map((a) => a.bundle.account.external_account_number as string) };
}

beforeAll(async () => {
  gateway = await startFakeGateway();
  ctx = await createPipelineContext({ env: { REGISTRATION_GATEWAY_URL: gateway.url, REGISTRATION_GATEWAY_KEY: gateway.key, REGISTRATION_POLL_MS: '200' } });
  for (const code of ['BULKA', 'BULKB', 'BULKC']) await ctx.createSupplier(code, { documentsRoot: code.toLowerCase() });
  await ctx.createTeam(TEAM);
  ctx.startWorkers();
}, LONG);
afterAll(async () => {
  await ctx?.close();
  await gateway?.close();
});

describe('a batch', () => {
  it("registers every account it created in one call, once; a second call leaves them as they are", { timeout: LONG }, async () => {
    const { batchId, exts } = await migrate('BULKA', 'BA', 5);
    const res = await ctx.app.inject({ method: 'POST', url: `/v1/data-import/batches/${batchId}/registration-flows/`, headers: ctx.auth });
    expect(res.statusCode, res.body).toBe(200);
    const points = (await Promise.all(exts.map((e) => statusesOf('BULKA', e)))).flat().length;
    expect(res.json()).toEqual({ batch_id: batchId, accounts: 5, meter_points_marked: points, meter_points_not_marked: 0 });
    await allAt('BULKA', exts, 'REGISTRATION_REQUESTED');
    const again = await ctx.app.inject({ method: 'POST', url: `/v1/data-import/batches/${batchId}/registration-flows/`, headers: ctx.auth });
    expect(again.json()).toMatchObject({ meter_points_marked: 0, meter_points_not_marked: points });
    expect(gateway.registrations.size).toBe(points);
    const line = await ctx.deps.db.selectFrom('audit_log').select(['action', 'detail']).where('target', '=', batchId).where('action', '=', 'batch.register').orderBy('id').executeTakeFirstOrThrow();
    expect(line.detail).toEqual({ marked: points, not_marked: 0 });
  });

  it('uploaded with register=true, registers its accounts by itself', { timeout: LONG }, async () => {
    const { exts } = await migrate('BULKB', 'BB', 3, { register: 'true' });
    await allAt('BULKB', exts, 'REGISTRATION_REQUESTED');
  });

  it('refuses a dry run and an unknown batch', async () => {
    const { batchId } = await migrate('BULKB', 'BD', 1, { dry_run: 'true' });
    const dry = await ctx.app.inject({ method: 'POST', url: `/v1/data-import/batches/${batchId}/registration-flows/`, headers: ctx.auth });
    expect(dry.statusCode).toBe(400);
    expect(dry.json()).toMatchObject({ code: 'batch_is_dry_run' });
    const unknown = await ctx.app.inject({ method: 'POST', url: '/v1/data-import/batches/00000000-0000-4000-8000-000000000000/registration-flows/', headers: ctx.auth });
    expect(unknown.statusCode).toBe(404);
  });
});

describe('a supplier that registers automatically', () => {
  it('registers the accounts created after it was turned on, not those before', { timeout: LONG }, async () => {
    const before = await migrate('BULKC', 'CB', 2);
    // Accounts are stamped by the service's clock (a test clock here): turned on after the first two, before the next two.
    ctx.clock.advance(1_000);
    await ctx.deps.db.updateTable('import_suppliers').set({ auto_register_since: ctx.clock.now() }).where('code', '=', 'BULKC').execute();
    ctx.clock.advance(1_000);
    const after = await migrate('BULKC', 'CA', 2);
    await allAt('BULKC', after.exts, 'REGISTRATION_REQUESTED');
    for (const ext of before.exts) for (const p of await statusesOf('BULKC', ext)) expect(p.status).toBe('PRE_REGISTRATION');
  });
});

describe('withdrawal and the read-back', () => {
  it('withdraws one meter point through the gateway, and the account read-back shows its status and history', { timeout: LONG }, async () => {
    const { exts } = await migrate('BULKA', 'WD', 1);
    const ext = exts[0]!;
    await ctx.app.inject({ method: 'POST', url: `/v1/data-import/send-registration-flows/BULKA/${ext}/`, headers: ctx.auth });
    await allAt('BULKA', [ext], 'REGISTRATION_REQUESTED');
    const [point, ...others] = await statusesOf('BULKA', ext);
    const res = await ctx.app.inject({ method: 'POST', url: `/v1/data-import/registration-withdrawals/BULKA/${ext}/`, payload: { mpxn: point!.mpxn }, headers: ctx.auth });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ external_account_number: ext, import_supplier_code: 'BULKA', meter_points: [{ mpxn: point!.mpxn, status: 'WITHDRAWAL_FLOW_SUCCESS' }] });
    await pollUntil(async () => ((await statusesOf('BULKA', ext)).find((p) => p.mpxn === point!.mpxn)!.status === 'WITHDRAWAL_REQUESTED' ? true : undefined), { timeoutMs: LONG, what: 'the withdrawal to be taken' });
    const requestId = (await ctx.deps.db.selectFrom('meter_points').select('registration_request_id').where('identifier', '=', point!.mpxn).executeTakeFirstOrThrow()).registration_request_id!;
    expect(gateway.withdrawals.has(requestId)).toBe(true);
    gateway.withdrawn(requestId);
    await pollUntil(async () => ((await statusesOf('BULKA', ext)).find((p) => p.mpxn === point!.mpxn)!.status === 'REGISTRATION_WITHDRAWN' ? true : undefined), { timeoutMs: LONG, what: 'WITHDRAWN to be applied' });
    for (const p of others) expect((await statusesOf('BULKA', ext)).find((x) => x.mpxn === p.mpxn)!.status).toBe('REGISTRATION_REQUESTED');

    // Nothing to withdraw any more: said so, and nothing sent.
    const nothing = await ctx.app.inject({ method: 'POST', url: `/v1/data-import/registration-withdrawals/BULKA/${ext}/`, payload: { mpxn: point!.mpxn }, headers: ctx.auth });
    expect(nothing.json()).toMatchObject({ meter_points: [{ mpxn: point!.mpxn, status: 'WITHDRAWAL_FLOW_ERROR', error_detail: 'Nothing to withdraw: the meter point is REGISTRATION_WITHDRAWN.' }] });

    const account = await ctx.app.inject({ method: 'GET', url: `/v1/data-import/imported-accounts/BULKA/${ext}/`, headers: ctx.auth });
    const mp = account
      .json<{ supply_addresses: Array<{ meter_points: Array<{ identifier: string; registration: { status: string; request_id: string; history: Array<Record<string, unknown>> } }> }> }>()
      .supply_addresses.flatMap((a) => a.meter_points)
      .find((m) => m.identifier === point!.mpxn)!;
    expect(mp.registration.status).toBe('REGISTRATION_WITHDRAWN');
    expect(mp.registration.request_id).toBe(requestId);
    expect(mp.registration.history.map((h) => [h.cause, h.from_status ?? null, h.to_status ?? null, h.applied])).toEqual([
      ['marked', 'PRE_REGISTRATION', 'UNDERGOING_REGISTRATION', true],
      ['taken', 'UNDERGOING_REGISTRATION', 'REGISTRATION_REQUESTED', true],
      ['withdrawal', 'REGISTRATION_REQUESTED', 'WITHDRAWAL_REQUESTED', true],
      ['event', 'WITHDRAWAL_REQUESTED', 'REGISTRATION_WITHDRAWN', true],
    ]);
  });
});

describe('the console', () => {
  it("shows a batch's funnel and its rejected meter points with the reason, and re-sends them behind a confirmation, as the operator", { timeout: LONG }, async () => {
    const { operatorSession } = await import('../helpers/console.js');
    const op = await operatorSession(ctx.app, ctx.deps.db, 'operator');
    const viewer = await operatorSession(ctx.app, ctx.deps.db, 'viewer');
    const { batchId, exts } = await migrate('BULKC', 'CN', 2);
    // Registered from the console's own action, confirmed.
    expect((await op.get(`/admin/batches/${batchId}/registration/register`)).body).toContain(`Register the meter points of every account batch ${batchId} created?`);
    expect((await op.post(`/admin/batches/${batchId}/registration/register`, {})).statusCode).toBe(303);
    await allAt('BULKC', exts, 'REGISTRATION_REQUESTED');
    const [rejected] = await statusesOf('BULKC', exts[0]!);
    const requestId = (await ctx.deps.db.selectFrom('meter_points').select('registration_request_id').where('identifier', '=', rejected!.mpxn).executeTakeFirstOrThrow()).registration_request_id!;
    gateway.reject(requestId, 'Erroneous transfer: customer did not consent');
    await pollUntil(async () => ((await statusesOf('BULKC', exts[0]!)).find((p) => p.mpxn === rejected!.mpxn)!.status === 'REGISTRATION_REJECTED' ? true : undefined), { timeoutMs: LONG, what: 'the rejection' });

    const page = (await op.get(`/admin/batches/${batchId}`)).body;
    expect(page).toMatch(/<tr data-status="REGISTRATION_REQUESTED">[\s\S]*?<td class="num">\d+<\/td>/);
    expect(page).toMatch(/<tr data-status="REGISTRATION_REJECTED">[\s\S]*?<td class="num">1<\/td>/);
    expect(page).toContain('Erroneous transfer: customer did not consent');
    expect(page).toContain('data-testid="registration-resend"');
    expect((await viewer.get(`/admin/batches/${batchId}`)).body).not.toContain('data-testid="registration-resend"');
    expect((await viewer.post(`/admin/batches/${batchId}/registration/resend`, {})).statusCode).toBe(403);
    expect((await op.get('/admin/suppliers/BULKC')).body).toContain('Erroneous transfer: customer did not consent');

    expect((await op.get(`/admin/batches/${batchId}/registration/resend`)).body).toContain(`Re-send the 1 failed registration(s) of batch ${batchId}?`);
    expect((await op.post(`/admin/batches/${batchId}/registration/resend`, {})).statusCode).toBe(303);
    await pollUntil(async () => ((await statusesOf('BULKC', exts[0]!)).find((p) => p.mpxn === rejected!.mpxn)!.status === 'REGISTRATION_REQUESTED' ? true : undefined), { timeoutMs: LONG, what: 'the re-sent request to be taken' });
    const fresh = (await ctx.deps.db.selectFrom('meter_points').select('registration_request_id').where('identifier', '=', rejected!.mpxn).executeTakeFirstOrThrow()).registration_request_id!;
    expect(fresh).not.toBe(requestId);
    const lines = await ctx.deps.db.selectFrom('audit_log').select(['actor_kind', 'actor', 'action', 'detail']).where('target', '=', batchId).orderBy('id').execute();
    expect(lines.filter((l) => l.action.startsWith('batch.register') || l.action.startsWith('registration.'))).toEqual([
      expect.objectContaining({ actor_kind: 'operator', actor: op.name, action: 'batch.register' }),
      expect.objectContaining({ actor_kind: 'operator', actor: op.name, action: 'registration.resend', detail: { marked: 1, not_marked: (await statusesOf('BULKC', exts[0]!)).length - 1 } }),
    ]);
  });
});

describe('the rest of §8 by hand', () => {
  it('withdraws from REGISTRATION_ACCEPTED and OBJECTION_RECEIVED too, and a withdrawn meter point is re-sent as a new attempt', { timeout: LONG }, async () => {
    const { exts } = await migrate('BULKA', 'WX', 2);
    const two = [];
    for (const ext of exts) {
      await ctx.app.inject({ method: 'POST', url: `/v1/data-import/send-registration-flows/BULKA/${ext}/`, headers: ctx.auth });
      two.push(...(await statusesOf('BULKA', ext)).map((p) => ({ ext, mpxn: p.mpxn })));
    }
    await allAt('BULKA', exts, 'REGISTRATION_REQUESTED');
    const [accepted, objected] = two;
    const idOf = async (mpxn: string) => (await ctx.deps.db.selectFrom('meter_points').select('registration_request_id').where('identifier', '=', mpxn).executeTakeFirstOrThrow()).registration_request_id!;
    const statusOf = async (p: { ext: string; mpxn: string }) => (await statusesOf('BULKA', p.ext)).find((x) => x.mpxn === p.mpxn)!.status;
    const waitFor = (p: { ext: string; mpxn: string }, status: string) => pollUntil(async () => ((await statusOf(p)) === status ? true : undefined), { timeoutMs: LONG, what: `${p.mpxn} to be ${status}` });
    gateway.accept(await idOf(accepted!.mpxn));
    gateway.object(await idOf(objected!.mpxn));
    await waitFor(accepted!, 'REGISTRATION_ACCEPTED');
    await waitFor(objected!, 'OBJECTION_RECEIVED');
    for (const p of [accepted!, objected!]) {
      const res = await ctx.app.inject({ method: 'POST', url: `/v1/data-import/registration-withdrawals/BULKA/${p.ext}/`, payload: { mpxn: p.mpxn }, headers: ctx.auth });
      expect(res.json()).toMatchObject({ meter_points: [{ mpxn: p.mpxn, status: 'WITHDRAWAL_FLOW_SUCCESS' }] });
      await waitFor(p, 'WITHDRAWAL_REQUESTED');
    }
    const old = await idOf(accepted!.mpxn);
    gateway.withdrawn(old);
    await waitFor(accepted!, 'REGISTRATION_WITHDRAWN');
    // Re-sent from REGISTRATION_WITHDRAWN: a new attempt, a new request id, taken.
    const again = await ctx.app.inject({ method: 'POST', url: `/v1/data-import/send-registration-flows/BULKA/${accepted!.ext}/`, headers: ctx.auth });
    expect(again.json<{ meter_points: Array<{ mpxn: string; status: string }> }>().meter_points.find((p) => p.mpxn === accepted!.mpxn)!.status).toBe('REGISTRATION_FLOW_SUCCESS');
    await waitFor(accepted!, 'REGISTRATION_REQUESTED');
    expect(await idOf(accepted!.mpxn)).not.toBe(old);
  });

  it('a request refused with 400 (not only 422) leaves UNABLE_TO_REGISTER with the reason', { timeout: LONG }, async () => {
    const { exts } = await migrate('BULKB', 'RF', 1);
    const points = await statusesOf('BULKB', exts[0]!);
    gateway.answerNext(points.length, { status: 400, body: { reason: 'supply_start_date is in the past' } });
    await ctx.app.inject({ method: 'POST', url: `/v1/data-import/send-registration-flows/BULKB/${exts[0]}/`, headers: ctx.auth });
    await allAt('BULKB', exts, 'UNABLE_TO_REGISTER');
    const errors = await ctx.deps.db.selectFrom('meter_points').select('registration_error').where('identifier', 'in', points.map((p) => p.mpxn)).execute();
    expect(errors.map((e) => e.registration_error)).toEqual(points.map(() => 'supply_start_date is in the past'));
  });
});
