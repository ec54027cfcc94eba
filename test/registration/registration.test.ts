import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeGateway, type FakeGateway } from '../helpers/fake-gateway.js';
import { pollUntil } from '../helpers/poll.js';
import { LONG } from '../queue/helpers.js';
import { createPipelineContext, type PipelineContext } from '../queue/setup.js';

// Registration (issue 15; decisions.md §8) end to end: accounts migrated by the workers, the two
// published endpoints, the registration queue sending to a scriptable gateway on loopback, and the
// events poller applying what the gateway reports.

const SUPPLIER = 'REGCO';
const TEAM = 'Registration Team';
let ctx: PipelineContext;
let gateway: FakeGateway;
let accounts: string[];

const send = (ext: string, headers = ctx.auth) => ctx.app.inject({ method: 'POST', url: `/v1/data-import/send-registration-flows/${SUPPLIER}/${ext}/`, headers });
const statuses = async (ext: string) => {
  const res = await ctx.app.inject({ method: 'GET', url: `/v1/data-import/meterpoint-statuses-for-account/${SUPPLIER}/${ext}/`, headers: ctx.auth });
  expect(res.statusCode, res.body).toBe(200);
  return res.json<Array<{ mpxn: string; status: string }>>();
};
const requestIdOf = async (mpxn: string) =>
  (await ctx.deps.db.selectFrom('meter_points').select('registration_request_id').where('identifier', '=', mpxn).executeTakeFirstOrThrow()).registration_request_id!;
const history = async (mpxn: string) =>
  ctx.deps.db
    .selectFrom('registration_history as h')
    .innerJoin('meter_points as m', 'm.id', 'h.meter_point_id')
    .select(['h.cause', 'h.event_id', 'h.event_type', 'h.from_status', 'h.to_status', 'h.applied', 'h.reason'])
    .where('m.identifier', '=', mpxn)
    .orderBy('h.id')
    .execute();
const waitStatus = (ext: string, mpxn: string, status: string) =>
  pollUntil(async () => (await statuses(ext)).find((p) => p.mpxn === mpxn)?.status === status || undefined, { timeoutMs: LONG, what: `${mpxn} to be ${status}` });

beforeAll(async () => {
  gateway = await startFakeGateway();
  ctx = await createPipelineContext({ env: { REGISTRATION_GATEWAY_URL: gateway.url, REGISTRATION_GATEWAY_KEY: gateway.key, REGISTRATION_POLL_MS: '200' } });
  await ctx.createSupplier(SUPPLIER, { documentsRoot: 'reg' });
  await ctx.createTeam(TEAM);
  ctx.startWorkers();
  const { ndjson, accounts: generated } = await ctx.cohort({ count: 6, supplier: SUPPLIER, prefix: 'RG', seed: 15 });
  const { batch_id } = await ctx.upload(ndjson, { supplier: SUPPLIER, team: TEAM });
  expect(await ctx.waitForEnd(batch_id, LONG)).toMatchObject({ state: 'COMPLETED', succeeded: 6 });
  accounts = generated.map((a) => a.bundle.account.external_account_number as string);
}, LONG);
afterAll(async () => {
  await ctx?.close();
  await gateway?.close();
});

describe('meterpoint-statuses-for-account', () => {
  it('lists every meter point of a created account at PRE_REGISTRATION, as a flat list', async () => {
    const list = await statuses(accounts[0]!);
    expect(list.length).toBeGreaterThan(0);
    for (const p of list) expect(p).toEqual({ mpxn: expect.any(String), status: 'PRE_REGISTRATION' });
  });

  it("answers the published 404 for an account that is not imported, and for another supplier's key", async () => {
    const res = await ctx.app.inject({ method: 'GET', url: `/v1/data-import/meterpoint-statuses-for-account/${SUPPLIER}/NOPE-1/`, headers: ctx.auth });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ error: 'No meterpoints found for NOPE-1.' });
    await ctx.createSupplier('OTHERREG');
    const scoped = await ctx.authHeaders({ suppliers: ['OTHERREG'] });
    const hidden = await ctx.app.inject({ method: 'GET', url: `/v1/data-import/meterpoint-statuses-for-account/${SUPPLIER}/${accounts[0]}/`, headers: scoped });
    expect(hidden.statusCode).toBe(404);
    const sent = await send(accounts[0]!, scoped);
    expect(sent.statusCode).toBe(404);
    expect(sent.json()).toEqual({ external_account_number: accounts[0], import_supplier_code: SUPPLIER, error_detail: `Account not found for ${accounts[0]}.` });
    expect(gateway.requests.length).toBe(0);
  });
});

describe('send-registration-flows', () => {
  it('marks each meter point, sends one request per attempt, and moves it to REGISTRATION_REQUESTED; marking again sends nothing', async () => {
    const ext = accounts[0]!;
    const res = await send(ext);
    expect(res.statusCode).toBe(200);
    const body = res.json<{ external_account_number: string; import_supplier_code: string; meter_points: Array<{ mpxn: string; status: string }> }>();
    expect(body.external_account_number).toBe(ext);
    expect(body.import_supplier_code).toBe(SUPPLIER);
    expect(body.meter_points.every((p) => p.status === 'REGISTRATION_FLOW_SUCCESS')).toBe(true);
    for (const { mpxn } of body.meter_points) await waitStatus(ext, mpxn, 'REGISTRATION_REQUESTED');

    const again = await send(ext);
    expect(again.json<{ meter_points: Array<{ status: string; error_detail?: string }> }>().meter_points).toEqual(
      body.meter_points.map((p) => ({ mpxn: p.mpxn, status: 'REGISTRATION_FLOW_ERROR', error_detail: 'A registration attempt is already under way (REGISTRATION_REQUESTED).' })),
    );
    for (const { mpxn } of body.meter_points) {
      const id = await requestIdOf(mpxn);
      expect(gateway.posts(id)).toBe(1);
      const request = gateway.requests.find((r) => r.headers['idempotency-key'] === id)!;
      expect(request.body).toMatchObject({ request_id: id, mpxn, import_supplier: SUPPLIER, external_account_number: ext, service_account_number: expect.stringMatching(/^A-/) });
      expect(request.headers.authorization).toBe(`Bearer ${gateway.key}`);
    }
  });

  it('follows the events: accepted, then on supply; a duplicate event applies once, and one that does not fit moves nothing', async () => {
    const ext = accounts[1]!;
    const [first] = (await send(ext)).json<{ meter_points: Array<{ mpxn: string }> }>().meter_points;
    const mpxn = first!.mpxn;
    await waitStatus(ext, mpxn, 'REGISTRATION_REQUESTED');
    const id = await requestIdOf(mpxn);
    // Out of order: supply started before the acceptance arrives. Kept, with its reason, and moves nothing.
    const early = gateway.supplyStarted(id);
    const accepted = gateway.accept(id);
    gateway.push([{ ...accepted }]); // the same event again (same event_id)
    await waitStatus(ext, mpxn, 'REGISTRATION_ACCEPTED');
    gateway.supplyStarted(id);
    await waitStatus(ext, mpxn, 'ON_SUPPLY');
    const events = (await history(mpxn)).filter((h) => h.cause === 'event');
    expect(events).toEqual([
      expect.objectContaining({ event_id: early.event_id, event_type: 'SUPPLY_STARTED', applied: false, reason: 'SUPPLY_STARTED does not apply to a meter point in REGISTRATION_REQUESTED' }),
      expect.objectContaining({ event_id: accepted.event_id, event_type: 'ACCEPTED', from_status: 'REGISTRATION_REQUESTED', to_status: 'REGISTRATION_ACCEPTED', applied: true }),
      expect.objectContaining({ event_type: 'SUPPLY_STARTED', from_status: 'REGISTRATION_ACCEPTED', to_status: 'ON_SUPPLY', applied: true }),
    ]);
    // The metrics: meter points by status, and the acceptance's time from request (this process applied it).
    const metrics = await ctx.built.metrics.registry.metrics();
    expect(metrics).toMatch(/^di_meter_points\{status="ON_SUPPLY"\} [1-9]/m);
    expect(metrics).toMatch(/^di_registration_acceptance_seconds_count [1-9]/m);
    expect(metrics).toMatch(/^di_registration_requested_oldest_seconds \d/m);
    const onSupply = (await send(ext)).json<{ meter_points: Array<{ mpxn: string; status: string; error_detail?: string }> }>().meter_points.find((p) => p.mpxn === mpxn);
    expect(onSupply).toEqual({ mpxn, status: 'REGISTRATION_FLOW_ERROR', error_detail: 'The meter point is on supply: it is registered already.' });
  });

  it('a refused request leaves UNABLE_TO_REGISTER with the reason; sending again starts a new attempt, and the old attempt\'s events move nothing', async () => {
    const ext = accounts[2]!;
    const points = (await statuses(ext)).map((p) => p.mpxn);
    gateway.answerNext(points.length, { status: 422, body: { reason: 'MPAN not found in MPAS' } });
    await send(ext);
    for (const mpxn of points) await waitStatus(ext, mpxn, 'UNABLE_TO_REGISTER');
    const row = await ctx.deps.db.selectFrom('meter_points').select(['registration_error', 'registration_request_id']).where('identifier', '=', points[0]!).executeTakeFirstOrThrow();
    expect(row.registration_error).toBe('MPAN not found in MPAS');
    const old = row.registration_request_id!;

    const again = await send(ext);
    expect(again.json<{ meter_points: Array<{ status: string }> }>().meter_points.every((p) => p.status === 'REGISTRATION_FLOW_SUCCESS')).toBe(true);
    await waitStatus(ext, points[0]!, 'REGISTRATION_REQUESTED');
    const fresh = await requestIdOf(points[0]!);
    expect(fresh).not.toBe(old);
    gateway.push([{ request_id: old, type: 'ACCEPTED', mpxn: points[0]! }]);
    gateway.reject(fresh, 'Change of tenancy');
    await waitStatus(ext, points[0]!, 'REGISTRATION_REJECTED');
    const events = (await history(points[0]!)).filter((h) => h.cause === 'event');
    expect(events.map((e) => [e.event_type, e.applied, e.reason])).toEqual([
      ['ACCEPTED', false, 'the event is for an earlier attempt'],
      ['REJECTED', true, null],
    ]);
    const rejected = await ctx.deps.db.selectFrom('meter_points').select('registration_error').where('identifier', '=', points[0]!).executeTakeFirstOrThrow();
    expect(rejected.registration_error).toBe('Change of tenancy');
  });

  it('retries a throttled or failing gateway, honouring Retry-After, until it takes the request once', async () => {
    const ext = accounts[3]!;
    const points = (await statuses(ext)).map((p) => p.mpxn);
    // The next two requests, whichever meter points they are for: throttled (Retry-After: 1 s), then failing.
    gateway.answerNext(1, { status: 429, retryAfter: 1 });
    gateway.answerNext(1, { status: 503, retryAfter: null });
    const started = Date.now();
    await send(ext);
    for (const mpxn of points) await waitStatus(ext, mpxn, 'REGISTRATION_REQUESTED');
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_000);
    const ids = await Promise.all(points.map(requestIdOf));
    // Two answers were retried; every attempt was taken once.
    expect(ids.reduce((n, id) => n + gateway.posts(id), 0)).toBe(points.length + 2);
    for (const id of ids) expect(gateway.registrations.has(id)).toBe(true);
  });
});

it('with no gateway configured, marking answers REGISTRATION_FLOW_ERROR for each meter point and changes nothing', { timeout: LONG }, async () => {
  const bare = await createPipelineContext();
  try {
    await bare.createSupplier('NOGW', { documentsRoot: 'nogw' });
    await bare.createTeam(TEAM);
    bare.startWorkers();
    const { ndjson, accounts: generated } = await bare.cohort({ count: 1, supplier: 'NOGW', prefix: 'NG', seed: 3 });
    const { batch_id } = await bare.upload(ndjson, { supplier: 'NOGW', team: TEAM });
    await bare.waitForEnd(batch_id, LONG);
    const ext = generated[0]!.bundle.account.external_account_number as string;
    const before = await bare.tableCounts();
    const res = await bare.app.inject({ method: 'POST', url: `/v1/data-import/send-registration-flows/NOGW/${ext}/`, headers: bare.auth });
    expect(res.statusCode).toBe(200);
    const body = res.json<{ meter_points: Array<{ mpxn: string; status: string; error_detail?: string }> }>();
    expect(body.meter_points.length).toBeGreaterThan(0);
    for (const p of body.meter_points) expect(p).toEqual({ mpxn: p.mpxn, status: 'REGISTRATION_FLOW_ERROR', error_detail: 'No registration gateway is configured.' });
    expect(await bare.tableCounts()).toEqual(before);
    const list = await bare.app.inject({ method: 'GET', url: `/v1/data-import/meterpoint-statuses-for-account/NOGW/${ext}/`, headers: bare.auth });
    expect(list.json<Array<{ status: string }>>().every((p) => p.status === 'PRE_REGISTRATION')).toBe(true);
  } finally {
    await bare.close();
  }
});
