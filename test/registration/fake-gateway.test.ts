import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import type { GatewayEventsPage, RegistrationRequest } from '../../src/registration/sandbox-gateway.js';
import { FAKE_GATEWAY_KEY, startFakeGateway, type FakeGateway, type FakeGatewayOptions } from '../helpers/fake-gateway.js';
import { pollUntil } from '../helpers/poll.js';

const started: FakeGateway[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((g) => g.close()));
});

async function fake(opts?: FakeGatewayOptions): Promise<FakeGateway> {
  const g = await startFakeGateway(opts);
  started.push(g);
  return g;
}

interface Reply {
  status: number;
  headers: Headers;
  body: unknown;
  ms: number;
}

async function call(g: FakeGateway, path: string, init: { method?: string; key?: string | null; body?: unknown; headers?: Record<string, string>; timeoutMs?: number } = {}): Promise<Reply> {
  const headers: Record<string, string> = { ...init.headers };
  if (init.key !== null) headers.authorization = `Bearer ${init.key ?? g.key}`;
  let body: string | undefined;
  if (init.body !== undefined) {
    body = typeof init.body === 'string' ? init.body : JSON.stringify(init.body);
    headers['content-type'] = 'application/json';
  }
  const t0 = performance.now();
  const res = await fetch(`${g.url}${path}`, { method: init.method ?? (body === undefined ? 'GET' : 'POST'), headers, body, signal: AbortSignal.timeout(init.timeoutMs ?? 5_000) });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text === '' ? undefined : (JSON.parse(text) as unknown), ms: performance.now() - t0 };
}

function registration(overrides: Partial<RegistrationRequest> = {}): RegistrationRequest {
  return {
    request_id: randomUUID(),
    mpxn: `MP-${randomUUID().slice(0, 8)}`,
    supply_type: 'GAS',
    mpid: 'GAS1',
    shipper_mpid: 'TCL',
    supply_start_date: '2030-01-01',
    import_supplier: 'SUPPLIER_A',
    external_account_number: 'EXT-1',
    service_account_number: 'A-0001',
    ...overrides,
  };
}

const register = (g: FakeGateway, body: RegistrationRequest, init: { timeoutMs?: number } = {}) =>
  call(g, '/registrations', { body, headers: { 'idempotency-key': body.request_id }, ...init });

const withdraw = (g: FakeGateway, requestId: string) => call(g, `/registrations/${encodeURIComponent(requestId)}/withdrawal`, { method: 'POST', headers: { 'idempotency-key': requestId } });

async function page(g: FakeGateway, query = ''): Promise<GatewayEventsPage> {
  const reply = await call(g, `/events${query}`);
  expect(reply.status).toBe(200);
  return reply.body as GatewayEventsPage;
}

describe('fake gateway: posts', () => {
  it('takes a new request_id with 202, a repeat with 409, and records every request', async () => {
    const g = await fake();
    expect(g.key).toBe(FAKE_GATEWAY_KEY);
    const body = registration();

    const first = await register(g, body);
    expect(first.status).toBe(202);
    expect(first.body).toEqual({ request_id: body.request_id });
    const again = await register(g, { ...body, mpxn: 'OTHER' });
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ request_id: body.request_id });

    expect([...g.registrations]).toEqual([[body.request_id, body]]);
    expect(g.posts(body.request_id)).toBe(2);
    expect(g.posts('never-sent')).toBe(0);
    expect(g.requests).toHaveLength(2);
    expect(g.requests[0]).toMatchObject({
      method: 'POST',
      path: '/registrations',
      body,
      status: 202,
      headers: expect.objectContaining({ 'idempotency-key': body.request_id, authorization: `Bearer ${g.key}`, 'content-type': 'application/json' }),
    });
    expect(g.requests[1]?.status).toBe(409);
  });

  it('answers scripted statuses in order, then falls back to the default', async () => {
    const g = await fake();
    const body = registration();
    g.answerNext(1, 500);
    g.answerNext(1, { status: 429, retryAfter: 7 });
    g.answerNext(1, 408);
    g.answerNext(1, 503);
    g.answerNext(1, { status: 429, retryAfter: null });
    g.answerNext(1, { status: 422, body: { reason: 'mpxn not found in the registry' } });
    g.answerNext(1, 400);

    const replies: Reply[] = [];
    for (let i = 0; i < 8; i++) replies.push(await register(g, body));
    expect(replies.map((r) => r.status)).toEqual([500, 429, 408, 503, 429, 422, 400, 202]);
    expect(replies.map((r) => r.headers.get('retry-after'))).toEqual([null, '7', null, '1', null, null, null, null]);
    expect(replies[5]?.body).toEqual({ reason: 'mpxn not found in the registry' });
    expect(replies[6]?.body).toEqual({ reason: expect.any(String) });
    expect(g.posts(body.request_id)).toBe(8);
    // Only the 202 took it.
    expect(g.registrations.size).toBe(1);
    expect(g.script).toEqual([]);
  });

  it('a refusal takes nothing: the same request_id later gets 202, not 409', async () => {
    const g = await fake();
    const body = registration();
    g.answerNext(1, 422);
    expect((await register(g, body)).status).toBe(422);
    expect(g.registrations.has(body.request_id)).toBe(false);
    expect((await register(g, body)).status).toBe(202);
  });

  it('scripts for one request_id or one route only; the script can be pushed to directly', async () => {
    const g = await fake();
    const a = registration();
    const b = registration();
    g.answerNext(2, 500, { request_id: b.request_id });
    g.answerNext(1, 422, { route: 'withdrawal' });
    g.script.push({ status: 202, headers: { 'x-scripted': 'yes' } });

    const ra = await register(g, a);
    expect(ra.status).toBe(202);
    expect(ra.headers.get('x-scripted')).toBe('yes');
    expect((await register(g, b)).status).toBe(500);
    expect((await register(g, b)).status).toBe(500);
    expect((await register(g, b)).status).toBe(202);
    expect((await withdraw(g, a.request_id)).status).toBe(422);
    expect((await withdraw(g, a.request_id)).status).toBe(202);
    expect(g.script).toEqual([]);
  });

  it('answers slowly, hangs, or drops the connection when told', async () => {
    const g = await fake();
    const body = registration();
    g.answerNext(1, { status: 202, delayMs: 300 });
    const slow = await register(g, body);
    expect(slow.status).toBe(202);
    expect(slow.ms).toBeGreaterThanOrEqual(280);

    g.answerNext(1, { status: 202, hang: true });
    await expect(register(g, registration(), { timeoutMs: 200 })).rejects.toMatchObject({ name: 'TimeoutError' });

    g.answerNext(1, { status: 202, drop: true });
    await expect(register(g, registration())).rejects.toThrow(TypeError);

    // Still serving after both.
    expect((await register(g, registration())).status).toBe(202);
  });

  it('can take a request and still fail to say so (takes: true), so a retry gets 409', async () => {
    const g = await fake();
    const body = registration();
    g.answerNext(1, { status: 500, takes: true });
    expect((await register(g, body)).status).toBe(500);
    expect(g.registrations.get(body.request_id)).toEqual(body);
    expect((await register(g, body)).status).toBe(409);

    const lost = registration();
    g.answerNext(1, { status: 202, hang: true, takes: true });
    await expect(register(g, lost, { timeoutMs: 200 })).rejects.toMatchObject({ name: 'TimeoutError' });
    expect(g.registrations.has(lost.request_id)).toBe(true);
    expect((await register(g, lost)).status).toBe(409);
    expect(g.posts(lost.request_id)).toBe(2);
  });

  it('withdraws with 202, then 409, and counts withdrawal posts apart from registrations', async () => {
    const g = await fake();
    const body = registration();
    await register(g, body);
    const first = await withdraw(g, body.request_id);
    expect(first.status).toBe(202);
    expect(first.body).toEqual({ request_id: body.request_id });
    expect((await withdraw(g, body.request_id)).status).toBe(409);
    expect([...g.withdrawals]).toEqual([body.request_id]);
    expect(g.posts(body.request_id, 'withdrawal')).toBe(2);
    expect(g.posts(body.request_id)).toBe(1);
    // The fake reports nothing by itself.
    expect((await page(g)).events).toEqual([]);
  });

  it('refuses a wrong key (401), a body above 64 KB (413) and a body that is not a registration (400), and records them', async () => {
    const g = await fake({ key: 'my-key' });
    const body = registration();
    const denied = await call(g, '/registrations', { body, key: 'not-my-key', headers: { 'idempotency-key': body.request_id } });
    expect(denied.status).toBe(401);
    expect(denied.body).toEqual({ reason: expect.any(String) });
    expect((await call(g, '/events', { key: 'not-my-key' })).status).toBe(401);
    expect((await call(g, '/events', { key: null })).status).toBe(401);

    for (const size of [64 * 1024, 512 * 1024]) {
      const big = registration({ service_account_number: 'x'.repeat(size) });
      const reply = await register(g, big);
      expect(reply.status).toBe(413);
      expect(reply.body).toEqual({ reason: expect.any(String) });
    }

    const { mpxn: _mpxn, ...noMpxn } = body;
    const bad = await call(g, '/registrations', { body: noMpxn, headers: { 'idempotency-key': body.request_id } });
    expect(bad.status).toBe(400);
    expect(bad.body).toEqual({ reason: expect.stringContaining('mpxn') });

    expect(g.registrations.size).toBe(0);
    expect(g.requests.map((r) => r.status)).toEqual([401, 401, 401, 413, 413, 400]);
    expect(g.requests[3]?.body).toBeUndefined();
    expect(g.posts(body.request_id)).toBe(2);
    // Scripts are not spent on refused requests.
    g.answerNext(1, 500);
    await call(g, '/registrations', { body, key: 'not-my-key', headers: { 'idempotency-key': body.request_id } });
    expect(g.script).toHaveLength(1);
  });
});

describe('fake gateway: events', () => {
  it('pushes each kind of event with the mpxn of its request, oldest first', async () => {
    const g = await fake({ clock: () => new Date('2030-05-01T09:00:00Z') });
    const body = registration();
    await register(g, body);
    const id = body.request_id;
    g.accept(id);
    g.object(id, 'the losing supplier objects: debt');
    g.withdrawObjection(id);
    g.object(id);
    g.upholdObjection(id, 'debt outstanding');
    g.reject(id, 'mpxn not recognised');
    g.withdrawn(id);
    g.supplyStarted(id);

    const p = await page(g);
    expect(p.events.map((e) => [e.type, e.detail])).toEqual([
      ['ACCEPTED', undefined],
      ['OBJECTION_RECEIVED', 'the losing supplier objects: debt'],
      ['OBJECTION_WITHDRAWN', undefined],
      ['OBJECTION_RECEIVED', undefined],
      ['OBJECTION_UPHELD', 'debt outstanding'],
      ['REJECTED', 'mpxn not recognised'],
      ['WITHDRAWN', undefined],
      ['SUPPLY_STARTED', undefined],
    ]);
    for (const e of p.events) expect(e).toMatchObject({ request_id: id, mpxn: body.mpxn, occurred_at: '2030-05-01T09:00:00.000Z' });
    // No detail key at all when there is none: the wire shape is `detail?`.
    expect(Object.keys(p.events[0] ?? {}).sort()).toEqual(['event_id', 'mpxn', 'occurred_at', 'request_id', 'type']);
    expect(new Set(p.events.map((e) => e.event_id)).size).toBe(8);
    expect(g.events).toEqual(p.events);
  });

  it('serves duplicates (same event_id) and out-of-order events exactly as pushed', async () => {
    const g = await fake();
    const body = registration();
    await register(g, body);
    const accepted = g.accept(body.request_id);
    g.push([
      { request_id: body.request_id, type: 'SUPPLY_STARTED', occurred_at: '2030-02-01T00:00:00Z' },
      { ...accepted },
      { request_id: body.request_id, type: 'OBJECTION_RECEIVED', occurred_at: '2030-01-15T00:00:00Z', event_id: 'late-1' },
      { request_id: 'unknown-request', type: 'ACCEPTED', mpxn: '999' },
    ]);
    const { events } = await page(g);
    expect(events.map((e) => [e.event_id, e.type])).toEqual([
      [accepted.event_id, 'ACCEPTED'],
      [expect.any(String), 'SUPPLY_STARTED'],
      [accepted.event_id, 'ACCEPTED'],
      ['late-1', 'OBJECTION_RECEIVED'],
      [expect.any(String), 'ACCEPTED'],
    ]);
    expect(events[2]).toEqual(events[0]);
    expect(events[4]).toMatchObject({ request_id: 'unknown-request', mpxn: '999' });
    // An event for a request it never saw needs its mpxn given.
    expect(() => g.push([{ request_id: 'nobody', type: 'ACCEPTED' }])).toThrow(/mpxn/);
  });

  it('pages with after and limit; the cursor is opaque and later pushes appear after it', async () => {
    const g = await fake();
    const bodies = Array.from({ length: 7 }, () => registration());
    for (const b of bodies) {
      await register(g, b);
      g.accept(b.request_id);
    }
    const first = await page(g, '?limit=3');
    expect(first.events.map((e) => e.request_id)).toEqual(bodies.slice(0, 3).map((b) => b.request_id));
    expect(typeof first.cursor).toBe('string');
    const second = await page(g, `?after=${encodeURIComponent(first.cursor)}&limit=3`);
    expect(second.events.map((e) => e.request_id)).toEqual(bodies.slice(3, 6).map((b) => b.request_id));
    const third = await page(g, `?after=${encodeURIComponent(second.cursor)}`);
    expect(third.events).toHaveLength(1);
    const empty = await page(g, `?after=${encodeURIComponent(third.cursor)}`);
    expect(empty).toEqual({ events: [], cursor: third.cursor });

    g.supplyStarted(bodies[0]!.request_id);
    const more = await page(g, `?after=${encodeURIComponent(third.cursor)}`);
    expect(more.events).toEqual([expect.objectContaining({ type: 'SUPPLY_STARTED', request_id: bodies[0]!.request_id })]);
  });

  it('refuses a cursor it never gave (garbage, or another gateway’s) and a bad limit with 400', async () => {
    const g = await fake();
    const other = await fake();
    const foreign = (await page(other)).cursor;
    for (const query of [`?after=${encodeURIComponent(foreign)}`, '?after=garbage', '?after=', '?limit=0', '?limit=ten']) {
      const reply = await call(g, `/events${query}`);
      expect(reply.status, query).toBe(400);
      expect(reply.body, query).toEqual({ reason: expect.any(String) });
    }
  });

  it('fails GET /events for the next n calls, or while down', async () => {
    const g = await fake();
    const body = registration();
    await register(g, body);
    g.accept(body.request_id);

    g.failEvents(2);
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) statuses.push((await call(g, '/events')).status);
    expect(statuses).toEqual([500, 500, 200]);

    g.failEvents('down');
    for (let i = 0; i < 5; i++) expect((await call(g, '/events')).status).toBe(500);
    // Posts are not affected by the events feed being down.
    expect((await register(g, registration())).status).toBe(202);
    g.failEvents('up');
    expect((await page(g)).events).toHaveLength(1);
  });

  it('delays every events page by eventsPageDelayMs', async () => {
    const g = await fake();
    expect(g.eventsPageDelayMs).toBe(0);
    g.eventsPageDelayMs = 250;
    const slow = await call(g, '/events');
    expect(slow.status).toBe(200);
    expect(slow.ms).toBeGreaterThanOrEqual(230);
    await expect(call(g, '/events', { timeoutMs: 50 })).rejects.toMatchObject({ name: 'TimeoutError' });
    g.eventsPageDelayMs = 0;
    expect((await call(g, '/events')).status).toBe(200);
  });

  it('lets a poller see events pushed while it polls', async () => {
    const g = await fake();
    const body = registration();
    await register(g, body);
    const { cursor } = await page(g);
    setTimeout(() => g.accept(body.request_id), 50);
    const seen = await pollUntil(async () => (await page(g, `?after=${encodeURIComponent(cursor)}`)).events[0], { what: 'the ACCEPTED event' });
    expect(seen).toMatchObject({ type: 'ACCEPTED', request_id: body.request_id });
  });
});
