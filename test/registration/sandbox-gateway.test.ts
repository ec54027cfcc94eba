import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import {
  GATEWAY_EVENT_TYPES,
  GATEWAY_MAX_BODY_BYTES,
  startSandboxGateway,
  type GatewayEvent,
  type GatewayEventsPage,
  type RegistrationRequest,
  type SandboxGateway,
} from '../../src/registration/sandbox-gateway.js';
import { pollUntil } from '../helpers/poll.js';

const KEY = 'sandbox-gateway-test-key';
/** The sandbox's "today" in these tests: 2030-01-10 (UTC), moved by setting `now`. */
let now = new Date('2030-01-10T12:00:00Z');
const clock = () => now;
const started: SandboxGateway[] = [];

afterEach(async () => {
  await Promise.all(started.splice(0).map((g) => g.close()));
  now = new Date('2030-01-10T12:00:00Z');
});

async function sandbox(opts: { maxEvents?: number } = {}): Promise<SandboxGateway> {
  const gateway = await startSandboxGateway({ key: KEY, clock, ...opts });
  started.push(gateway);
  return gateway;
}

interface Reply {
  status: number;
  headers: Headers;
  body: unknown;
}

async function call(url: string, init: { method?: string; key?: string | null; body?: unknown; headers?: Record<string, string> } = {}): Promise<Reply> {
  const headers: Record<string, string> = { ...init.headers };
  if (init.key !== null) headers.authorization = `Bearer ${init.key ?? KEY}`;
  let body: string | undefined;
  if (init.body !== undefined) {
    body = typeof init.body === 'string' ? init.body : JSON.stringify(init.body);
    headers['content-type'] = 'application/json';
  }
  const res = await fetch(url, { method: init.method ?? (body === undefined ? 'GET' : 'POST'), headers, body, signal: AbortSignal.timeout(5_000) });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text === '' ? undefined : (JSON.parse(text) as unknown) };
}

function registration(overrides: Partial<RegistrationRequest> = {}): RegistrationRequest {
  return {
    request_id: randomUUID(),
    mpxn: '1200012345678',
    supply_type: 'ELECTRICITY',
    mpid: 'EELC',
    supply_start_date: '2030-01-01',
    import_supplier: 'SUPPLIER_A',
    external_account_number: 'EXT-1',
    service_account_number: 'A-0001',
    ...overrides,
  };
}

const register = (g: SandboxGateway, body: RegistrationRequest, key?: string) =>
  call(`${g.url}/registrations`, { body, key, headers: { 'idempotency-key': body.request_id } });

const withdraw = (g: SandboxGateway, requestId: string) =>
  call(`${g.url}/registrations/${encodeURIComponent(requestId)}/withdrawal`, { method: 'POST', headers: { 'idempotency-key': requestId } });

async function page(g: SandboxGateway, query: { after?: string; limit?: number | string } = {}): Promise<GatewayEventsPage> {
  const params = new URLSearchParams();
  if (query.after !== undefined) params.set('after', query.after);
  if (query.limit !== undefined) params.set('limit', String(query.limit));
  const reply = await call(`${g.url}/events${params.size > 0 ? `?${params}` : ''}`);
  expect(reply.status).toBe(200);
  return reply.body as GatewayEventsPage;
}

/** Every event, read page by page from the start as the service's poller does. */
async function allEvents(g: SandboxGateway, limit = 1000): Promise<GatewayEvent[]> {
  const events: GatewayEvent[] = [];
  let after: string | undefined;
  for (;;) {
    const p = await page(g, { after, limit });
    events.push(...p.events);
    if (p.events.length === 0) return events;
    after = p.cursor;
  }
}

const kinds = (events: readonly GatewayEvent[], requestId?: string) => events.filter((e) => requestId === undefined || e.request_id === requestId).map((e) => e.type);

describe('sandbox gateway: requests and events', () => {
  it('takes a registration with 202 and reports ACCEPTED then SUPPLY_STARTED at once when the date has passed', async () => {
    const g = await sandbox();
    expect(g.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(g.key).toBe(KEY);
    const body = registration({ supply_start_date: '2030-01-09' });

    const reply = await register(g, body);
    expect(reply.status).toBe(202);
    expect(reply.body).toEqual({ request_id: body.request_id });

    const p = await page(g);
    expect(p.events.map((e) => e.type)).toEqual(['ACCEPTED', 'SUPPLY_STARTED']);
    for (const e of p.events) {
      expect(Object.keys(e).sort()).toEqual(['event_id', 'mpxn', 'occurred_at', 'request_id', 'type']);
      expect(e).toMatchObject({ request_id: body.request_id, mpxn: body.mpxn, occurred_at: now.toISOString() });
      expect(GATEWAY_EVENT_TYPES).toContain(e.type);
    }
    expect(new Set(p.events.map((e) => e.event_id)).size).toBe(2);
    expect(typeof p.cursor).toBe('string');
  });

  it('starts supply on the supply start date itself (UTC), not only after it', async () => {
    const g = await sandbox();
    now = new Date('2030-01-10T00:00:00.000Z');
    const body = registration({ supply_start_date: '2030-01-10' });
    expect((await register(g, body)).status).toBe(202);
    expect(kinds(await allEvents(g))).toEqual(['ACCEPTED', 'SUPPLY_STARTED']);
  });

  it('reports only ACCEPTED for a future date, then SUPPLY_STARTED once the clock reaches it', async () => {
    const g = await sandbox();
    const body = registration({ supply_start_date: '2030-01-12' });
    expect((await register(g, body)).status).toBe(202);
    const first = await page(g);
    expect(kinds(first.events)).toEqual(['ACCEPTED']);

    now = new Date('2030-01-11T23:59:59.999Z');
    expect((await page(g, { after: first.cursor })).events).toEqual([]);

    now = new Date('2030-01-12T00:00:00.000Z');
    const later = await pollUntil(async () => {
      const p = await page(g, { after: first.cursor });
      return p.events.length > 0 ? p : undefined;
    }, { what: 'SUPPLY_STARTED' });
    expect(later.events).toEqual([expect.objectContaining({ type: 'SUPPLY_STARTED', request_id: body.request_id, mpxn: body.mpxn, occurred_at: now.toISOString() })]);
    // Once only, however often it is read after.
    now = new Date('2030-02-01T00:00:00Z');
    expect(kinds(await allEvents(g))).toEqual(['ACCEPTED', 'SUPPLY_STARTED']);
  });

  it('starts supplies in date order, each once, whatever the order they were registered in', async () => {
    const g = await sandbox();
    const late = registration({ supply_start_date: '2030-03-01', mpxn: 'LATE' });
    const early = registration({ supply_start_date: '2030-02-01', mpxn: 'EARLY' });
    const middle = registration({ supply_start_date: '2030-02-15', mpxn: 'MIDDLE' });
    for (const body of [late, early, middle]) expect((await register(g, body)).status).toBe(202);
    now = new Date('2030-02-20T00:00:00Z');
    const started = (await allEvents(g)).filter((e) => e.type === 'SUPPLY_STARTED').map((e) => e.mpxn);
    expect(started).toEqual(['EARLY', 'MIDDLE']);
    now = new Date('2030-03-01T00:00:00Z');
    expect((await allEvents(g)).filter((e) => e.type === 'SUPPLY_STARTED').map((e) => e.mpxn)).toEqual(['EARLY', 'MIDDLE', 'LATE']);
  });

  it('answers 409 to the same request_id again, with no new event', async () => {
    const g = await sandbox();
    const body = registration({ supply_start_date: '2030-06-01' });
    expect((await register(g, body)).status).toBe(202);
    const again = await register(g, { ...body, mpxn: 'DIFFERENT' });
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ request_id: body.request_id });
    expect(kinds(await allEvents(g))).toEqual(['ACCEPTED']);
    now = new Date('2030-06-01T00:00:00Z');
    expect(await allEvents(g)).toEqual([expect.objectContaining({ type: 'ACCEPTED', mpxn: body.mpxn }), expect.objectContaining({ type: 'SUPPLY_STARTED', mpxn: body.mpxn })]);
  });

  it('withdraws: 202 and WITHDRAWN, then 409; the supply start never comes; refuses unknown and on-supply ones', async () => {
    const g = await sandbox();
    const body = registration({ supply_start_date: '2030-01-20' });
    expect((await register(g, body)).status).toBe(202);

    const reply = await withdraw(g, body.request_id);
    expect(reply.status).toBe(202);
    expect(reply.body).toEqual({ request_id: body.request_id });
    expect(kinds(await allEvents(g))).toEqual(['ACCEPTED', 'WITHDRAWN']);
    expect((await withdraw(g, body.request_id)).status).toBe(409);

    now = new Date('2030-01-21T00:00:00Z');
    expect(kinds(await allEvents(g))).toEqual(['ACCEPTED', 'WITHDRAWN']);

    const unknown = await withdraw(g, 'no-such-request');
    expect(unknown.status).toBe(422);
    expect(unknown.body).toEqual({ reason: expect.any(String) });

    const onSupply = registration({ supply_start_date: '2030-01-01' });
    expect((await register(g, onSupply)).status).toBe(202);
    const tooLate = await withdraw(g, onSupply.request_id);
    expect(tooLate.status).toBe(422);
    expect(tooLate.body).toEqual({ reason: expect.stringContaining('on supply') });
  });

  it('takes gas registrations with a shipper_mpid and refuses them without one (422)', async () => {
    const g = await sandbox();
    expect((await register(g, registration({ supply_type: 'GAS', mpid: 'GAS1', shipper_mpid: 'TCL' }))).status).toBe(202);
    const refused = await register(g, registration({ supply_type: 'GAS', mpid: 'GAS1' }));
    expect(refused.status).toBe(422);
    expect(refused.body).toEqual({ reason: expect.stringContaining('shipper_mpid') });
  });
});

describe('sandbox gateway: paging', () => {
  it('pages oldest first with after and limit; the cursor after the last page stays put', async () => {
    const g = await sandbox();
    const bodies = Array.from({ length: 5 }, (_, i) => registration({ mpxn: `MP${i}`, supply_start_date: '2030-01-01' }));
    for (const body of bodies) expect((await register(g, body)).status).toBe(202);

    const seen: GatewayEvent[] = [];
    let after: string | undefined;
    const sizes: number[] = [];
    for (;;) {
      const p = await page(g, { after, limit: 3 });
      sizes.push(p.events.length);
      seen.push(...p.events);
      if (p.events.length === 0) {
        expect(p.cursor).toBe(after);
        break;
      }
      after = p.cursor;
    }
    expect(sizes).toEqual([3, 3, 3, 1, 0]);
    expect(seen.map((e) => `${e.mpxn}:${e.type}`)).toEqual(bodies.flatMap((b) => [`${b.mpxn}:ACCEPTED`, `${b.mpxn}:SUPPLY_STARTED`]));
    expect(new Set(seen.map((e) => e.event_id)).size).toBe(10);

    // A cursor read again gives the same page: reading is not consuming.
    const first = await page(g, { limit: 4 });
    expect((await page(g, { after: first.cursor, limit: 2 })).events).toEqual(seen.slice(4, 6));
    expect((await page(g, { after: first.cursor, limit: 2 })).events).toEqual(seen.slice(4, 6));

    // New events appear after the saved cursor.
    const last = await page(g, { after });
    const more = registration({ supply_start_date: '2031-01-01' });
    await register(g, more);
    expect((await page(g, { after: last.cursor })).events).toEqual([expect.objectContaining({ request_id: more.request_id, type: 'ACCEPTED' })]);
  });

  it('gives 100 events without a limit and at most 1000 with a larger one', async () => {
    const g = await sandbox();
    const bodies = Array.from({ length: 501 }, (_, i) => registration({ mpxn: `MP${i}`, supply_start_date: '2030-01-01' }));
    for (let i = 0; i < bodies.length; i += 50) {
      const replies = await Promise.all(bodies.slice(i, i + 50).map((b) => register(g, b)));
      expect(replies.map((r) => r.status)).toEqual(replies.map(() => 202));
    }
    expect((await page(g)).events).toHaveLength(100);
    const big = await page(g, { limit: 5000 });
    expect(big.events).toHaveLength(1000);
    expect((await page(g, { after: big.cursor, limit: 1000 })).events).toHaveLength(2);
  });

  it('refuses a limit or cursor that is not the protocol’s with 400 { reason }', async () => {
    const g = await sandbox();
    for (const query of ['limit=0', 'limit=-1', 'limit=abc', 'limit=1.5', 'after=', 'after=not-a-cursor', 'after=7']) {
      const reply = await call(`${g.url}/events?${query}`);
      expect(reply.status, query).toBe(400);
      expect(reply.body, query).toEqual({ reason: expect.any(String) });
    }
    // A cursor of this gateway beyond the end of its feed was never given.
    const { cursor } = await page(g);
    const beyond = cursor.replace(/\.\d+$/, '.5');
    expect((await call(`${g.url}/events?after=${encodeURIComponent(beyond)}`)).status).toBe(400);
  });

  it('reads a cursor of an earlier run from the start of its own feed, with event ids the earlier run never used', async () => {
    const before = await sandbox();
    await register(before, registration());
    const old = await allEvents(before);
    const { cursor } = await page(before, { after: undefined });
    await before.close();

    const after = await sandbox();
    const body = registration();
    await register(after, body);
    const p = await page(after, { after: cursor });
    expect(kinds(p.events)).toEqual(['ACCEPTED', 'SUPPLY_STARTED']);
    expect(p.events.map((e) => e.event_id).filter((id) => old.some((o) => o.event_id === id))).toEqual([]);
  });
});

describe('sandbox gateway: refusals and limits', () => {
  it('answers 401 to a wrong or missing bearer key on every route, and takes nothing', async () => {
    const g = await sandbox();
    const body = registration();
    for (const key of ['wrong-key', `${KEY}x`, KEY.slice(1), null]) {
      const reg = await call(`${g.url}/registrations`, { body, key, headers: { 'idempotency-key': body.request_id } });
      expect(reg.status, String(key)).toBe(401);
      expect(reg.headers.get('www-authenticate')).toBe('Bearer');
      expect(reg.body).toEqual({ reason: expect.any(String) });
      expect((await call(`${g.url}/events`, { key })).status).toBe(401);
      expect((await call(`${g.url}/registrations/${body.request_id}/withdrawal`, { method: 'POST', key })).status).toBe(401);
    }
    expect(await allEvents(g)).toEqual([]);
    expect((await register(g, body)).status).toBe(202);
  });

  it('refuses a body that is not a registration with 400 { reason }', async () => {
    const g = await sandbox();
    const good = registration();
    const { request_id: _omitted, ...noId } = good;
    const cases: Array<[string, unknown, Record<string, string>]> = [
      ['not JSON', '{"request_id":', { 'idempotency-key': good.request_id }],
      ['an array', [good], { 'idempotency-key': good.request_id }],
      ['no request_id', noId, { 'idempotency-key': good.request_id }],
      ['empty mpxn', { ...good, mpxn: '' }, { 'idempotency-key': good.request_id }],
      ['unknown supply_type', { ...good, supply_type: 'WATER' }, { 'idempotency-key': good.request_id }],
      ['bad date', { ...good, supply_start_date: '2030-02-30' }, { 'idempotency-key': good.request_id }],
      ['no Idempotency-Key', good, {}],
      ['another Idempotency-Key', good, { 'idempotency-key': 'something-else' }],
    ];
    for (const [what, body, headers] of cases) {
      const reply = await call(`${g.url}/registrations`, { body, headers });
      expect(reply.status, what).toBe(400);
      expect(reply.body, what).toEqual({ reason: expect.any(String) });
    }
    expect(await allEvents(g)).toEqual([]);
  });

  it('refuses a body above 64 KB with 413 (and drops one above 1 MB) and goes on serving', async () => {
    const g = await sandbox();
    const body = registration({ external_account_number: 'x'.repeat(GATEWAY_MAX_BODY_BYTES) });
    const reply = await register(g, body);
    expect(reply.status).toBe(413);
    expect(reply.body).toEqual({ reason: expect.stringContaining('bytes') });
    expect(await allEvents(g)).toEqual([]);

    // Far larger (above 1 MB): the connection is dropped rather than read to its end.
    await expect(register(g, registration({ external_account_number: 'x'.repeat(2 * 1024 * 1024) }))).rejects.toThrow();

    const fits = registration({ external_account_number: 'x'.repeat(GATEWAY_MAX_BODY_BYTES - 1024) });
    expect((await register(g, fits)).status).toBe(202);
  });

  it('refuses with 503 and Retry-After once its events would exceed the maximum', async () => {
    const g = await sandbox({ maxEvents: 5 });
    // Two events each (the supply start is counted while it is still to come).
    const future = registration({ supply_start_date: '2031-01-01' });
    expect((await register(g, future)).status).toBe(202);
    const past = registration();
    expect((await register(g, past)).status).toBe(202);
    const full = await register(g, registration());
    expect(full.status).toBe(503);
    expect(full.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(full.body).toEqual({ reason: expect.any(String) });
    // A repeat is still a repeat, and one more event (a withdrawal) still fits.
    expect((await register(g, past)).status).toBe(409);
    expect((await withdraw(g, future.request_id)).status).toBe(202);
    expect(kinds(await allEvents(g))).toEqual(['ACCEPTED', 'ACCEPTED', 'SUPPLY_STARTED', 'WITHDRAWN']);
  });

  it('answers 404 for other routes and 405 for other methods', async () => {
    const g = await sandbox();
    expect((await call(`${g.url}/nothing`)).status).toBe(404);
    const wrong = await call(`${g.url}/events`, { method: 'POST', body: {} });
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get('allow')).toBe('GET');
    expect((await call(`${g.url}/registrations`)).status).toBe(405);
  });

  it('closes idempotently, and refuses connections after', async () => {
    const g = await sandbox();
    await g.close();
    await g.close();
    await expect(fetch(`${g.url}/events`, { headers: { authorization: `Bearer ${KEY}` } })).rejects.toThrow();
  });
});
