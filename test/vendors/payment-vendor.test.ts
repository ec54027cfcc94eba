import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import {
  createPaymentVendorClient,
  parseRetryAfter,
  PaymentVendorUnavailable,
  type PaymentVendorClient,
  type PaymentVendorClientOptions,
} from '../../src/vendors/payment-vendor.js';
import { startFakeVendor, type FakeVendor } from '../helpers/fake-vendor.js';
import { pollUntil } from '../helpers/poll.js';

const API_KEY = 'vendor-secret-key-0123456789';
let vendor: FakeVendor;
let logLines: string[] = [];

beforeAll(async () => {
  vendor = await startFakeVendor({ apiKey: API_KEY });
});
afterAll(async () => vendor?.close());
afterEach(() => {
  vendor.reset();
  logLines = [];
});

const logs = () => logLines.map((l) => JSON.parse(l) as Record<string, unknown>);

function client(overrides: Partial<PaymentVendorClientOptions> = {}): PaymentVendorClient {
  return createPaymentVendorClient({
    vendors: { acme: { baseUrl: vendor.baseUrl, apiKey: API_KEY } },
    timeoutMs: 2_000,
    retries: 2,
    log: createLogger('debug', { write: (line: string) => void logLines.push(line) }),
    minBackoffMs: 5,
    maxBackoffMs: 20,
    ...overrides,
  });
}

async function unavailable(p: Promise<unknown>): Promise<PaymentVendorUnavailable> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(PaymentVendorUnavailable);
  return err as PaymentVendorUnavailable;
}

describe('payment vendor client', () => {
  it('returns the details of a found instruction, sending the Bearer key', async () => {
    vendor.set('DD-1', { kind: 'found', details: { type: 'DIRECT_DEBIT', status: 'ACTIVE', mandate_id: 'MD-9', amount: 12.5 } });
    const result = await client().lookup('acme', 'DD-1');
    expect(result).toEqual({
      kind: 'found',
      details: {
        reference: 'DD-1',
        type: 'DIRECT_DEBIT',
        status: 'ACTIVE',
        raw: { reference: 'DD-1', type: 'DIRECT_DEBIT', status: 'ACTIVE', mandate_id: 'MD-9', amount: 12.5 },
      },
    });
    expect(vendor.requests).toEqual([expect.objectContaining({ reference: 'DD-1', authorization: `Bearer ${API_KEY}`, path: '/payment-instructions/DD-1' })]);
  });

  it('answers not_found on 404 after exactly one request', async () => {
    vendor.set('NOPE', { kind: 'not_found' });
    expect(await client().lookup('acme', 'NOPE')).toEqual({ kind: 'not_found' });
    expect(vendor.countFor('NOPE')).toBe(1);
  });

  it.each([400, 409, 410, 422])('answers rejected on %i with the vendor reason, without retrying', async (status) => {
    const ref = `REJ-${status}`;
    vendor.set(ref, { kind: 'rejected', status, reason: 'mandate cancelled by payer' });
    expect(await client().lookup('acme', ref)).toEqual({ kind: 'rejected', reason: 'mandate cancelled by payer' });
    expect(vendor.countFor(ref)).toBe(1);
  });

  it('retries a 500 and returns what the next attempt finds', async () => {
    vendor.set('FLAKY', { kind: 'fail', status: 500, times: 1, then: { kind: 'found' } });
    const result = await client().lookup('acme', 'FLAKY');
    expect(result.kind).toBe('found');
    expect(vendor.countFor('FLAKY')).toBe(2);
    expect(logs().some((l) => l.msg === 'payment vendor attempt failed' && l.status === 500)).toBe(true);
  });

  it('throws PaymentVendorUnavailable after retries + 1 requests when the vendor keeps failing', async () => {
    vendor.set('DOWN', { kind: 'fail', status: 503 });
    const err = await unavailable(client({ retries: 3 }).lookup('acme', 'DOWN'));
    expect(err).toMatchObject({ vendor: 'acme', attempts: 4, reason: 'server_error', status: 503 });
    expect(err.cause).toBeInstanceOf(Error);
    expect(vendor.countFor('DOWN')).toBe(4);
  });

  it('makes a single request when retries is 0', async () => {
    vendor.set('ONCE', { kind: 'fail', status: 502 });
    const err = await unavailable(client({ retries: 0 }).lookup('acme', 'ONCE'));
    expect(err.attempts).toBe(1);
    expect(vendor.countFor('ONCE')).toBe(1);
  });

  it('times out each attempt and gives up within the bound', async () => {
    vendor.set('SLOW', { kind: 'slow', delayMs: 2_000 });
    const started = Date.now();
    const err = await unavailable(client({ timeoutMs: 200, retries: 1 }).lookup('acme', 'SLOW'));
    const elapsed = Date.now() - started;
    expect(err).toMatchObject({ reason: 'timeout', attempts: 2, status: undefined });
    expect(vendor.countFor('SLOW')).toBe(2);
    // Two 200 ms attempts and a ≤20 ms pause: far below one 2 s answer.
    expect(elapsed).toBeLessThan(1_500);
  });

  it('treats a refused connection as unavailable after retrying', async () => {
    const gone = await startFakeVendor({ apiKey: API_KEY });
    const baseUrl = gone.baseUrl;
    await gone.close();
    const err = await unavailable(client({ vendors: { acme: { baseUrl, apiKey: API_KEY } }, retries: 2 }).lookup('acme', 'ANY'));
    expect(err).toMatchObject({ reason: 'network', attempts: 3, status: undefined });
  });

  it('does not retry when the vendor refuses our key, logs it loudly and never logs the key', async () => {
    const err = await unavailable(client({ vendors: { acme: { baseUrl: vendor.baseUrl, apiKey: 'wrong-key-abcdef' } } }).lookup('acme', 'X-1'));
    expect(err).toMatchObject({ reason: 'unauthorized', attempts: 1, status: 401 });
    expect(vendor.countFor('X-1')).toBe(1);
    expect(logs().some((l) => l.level === 50 && String(l.msg).includes('credentials'))).toBe(true);
    expect(logLines.join('\n')).not.toContain('wrong-key-abcdef');
  });

  it('never writes the api key to the log, whatever happens', async () => {
    vendor.set('K-1', { kind: 'fail', status: 500 });
    await unavailable(client().lookup('acme', 'K-1'));
    vendor.set('K-2', { kind: 'found' });
    await client().lookup('acme', 'K-2');
    expect(logLines.length).toBeGreaterThan(0);
    expect(logLines.join('\n')).not.toContain(API_KEY);
  });

  it('answers unknown_vendor for an unconfigured code without any request', async () => {
    expect(await client().lookup('nobody', 'R-1')).toEqual({ kind: 'unknown_vendor' });
    expect(await client().lookup('constructor', 'R-1')).toEqual({ kind: 'unknown_vendor' });
    expect(vendor.requests).toHaveLength(0);
  });

  it('URL-encodes a reference holding slashes, spaces and reserved characters', async () => {
    const ref = 'AB/12 34?x=1#frag%';
    const result = await client().lookup('acme', ref);
    expect(result).toMatchObject({ kind: 'found', details: { reference: ref } });
    expect(vendor.requests).toHaveLength(1);
    expect(vendor.requests[0]).toMatchObject({ reference: ref, path: `/payment-instructions/${encodeURIComponent(ref)}` });
  });

  it('keeps a path in base_url and tolerates its trailing slash', async () => {
    const c = client({ vendors: { acme: { baseUrl: `${vendor.baseUrl}/api/v2/`, apiKey: API_KEY } } });
    expect((await c.lookup('acme', 'P-1')).kind).toBe('found');
    expect(vendor.requests[0]?.path).toBe('/api/v2/payment-instructions/P-1');
  });

  describe('a 200 that does not fit the protocol is unavailable at once, not retried', () => {
    it.each([
      ['not JSON', '<html>oops</html>'],
      ['a JSON array', '[]'],
      ['no type', JSON.stringify({ reference: 'M-1', status: 'ACTIVE' })],
      ['an unknown type', JSON.stringify({ reference: 'M-1', type: 'CHEQUE', status: 'ACTIVE' })],
      ['an unknown status', JSON.stringify({ reference: 'M-1', type: 'CARD', status: 'MAYBE' })],
      ['another reference', JSON.stringify({ reference: 'M-2', type: 'CARD', status: 'ACTIVE' })],
    ])('%s', async (_label, body) => {
      vendor.set('M-1', { kind: 'raw', status: 200, body, headers: { 'content-type': 'application/json' } });
      const err = await unavailable(client().lookup('acme', 'M-1'));
      expect(err).toMatchObject({ reason: 'malformed_response', attempts: 1, status: 200 });
      expect(vendor.countFor('M-1')).toBe(1);
    });
  });

  it('does not follow a redirect (the key must not travel) and does not retry it', async () => {
    vendor.set('R-1', { kind: 'raw', status: 302, body: '', headers: { location: '/payment-instructions/R-2' } });
    const err = await unavailable(client().lookup('acme', 'R-1'));
    expect(err).toMatchObject({ reason: 'unexpected_status', attempts: 1, status: 302 });
    expect(vendor.requests.map((r) => r.reference)).toEqual(['R-1']);
  });

  it('waits out a short Retry-After on 429 even with tiny backoffs', async () => {
    vendor.set('RL-1', { kind: 'fail', status: 429, times: 1, retryAfter: '1', then: { kind: 'found' } });
    expect((await client().lookup('acme', 'RL-1')).kind).toBe('found');
    const [first, second] = vendor.requests;
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(950);
  });

  it('gives up at once when Retry-After is beyond the cap', async () => {
    vendor.set('RL-2', { kind: 'fail', status: 503, retryAfter: '120' });
    const err = await unavailable(client({ maxRetryAfterMs: 2_000 }).lookup('acme', 'RL-2'));
    expect(err).toMatchObject({ reason: 'server_error', attempts: 1, status: 503 });
    expect(vendor.countFor('RL-2')).toBe(1);
  });

  it("rejects with the caller's abort reason, not as vendor unavailability", async () => {
    vendor.set('AB-1', { kind: 'slow', delayMs: 5_000 });
    const controller = new AbortController();
    const pending = client({ timeoutMs: 10_000 }).lookup('acme', 'AB-1', controller.signal);
    await pollUntil(async () => vendor.countFor('AB-1') === 1, { what: 'the vendor to receive the lookup' });
    const reason = new Error('request closed');
    controller.abort(reason);
    await expect(pending).rejects.toBe(reason);
    expect(vendor.countFor('AB-1')).toBe(1);
  });

  it('recovers through a flapping vendor given enough retries', async () => {
    vendor.set('FL-1', { kind: 'flap', failureRate: 0.5, seed: 42 });
    expect((await client({ retries: 10 }).lookup('acme', 'FL-1')).kind).toBe('found');
  });
});

describe('sandbox vendor', () => {
  it('closes at once while a slow answer is pending', async () => {
    const v = await startFakeVendor();
    v.set('S-1', { kind: 'slow', delayMs: 60_000 });
    const pending = fetch(`${v.baseUrl}/payment-instructions/S-1`, { headers: { authorization: `Bearer ${v.apiKey}` } }).catch((e: unknown) => e);
    await pollUntil(async () => v.countFor('S-1') === 1, { what: 'the request to arrive' });
    const started = Date.now();
    await v.close();
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(await pending).toBeInstanceOf(Error);
  });

  it('repeats a seeded flap exactly', async () => {
    const v = await startFakeVendor();
    try {
      const run = async (ref: string) => {
        v.set(ref, { kind: 'flap', failureRate: 0.5, seed: 7 });
        const statuses: number[] = [];
        for (let i = 0; i < 12; i += 1) {
          const res = await fetch(`${v.baseUrl}/payment-instructions/${ref}`, { headers: { authorization: `Bearer ${v.apiKey}` } });
          await res.arrayBuffer();
          statuses.push(res.status);
        }
        return statuses;
      };
      const a = await run('F-A');
      expect(await run('F-B')).toEqual(a);
      expect(a).toContain(500);
      expect(a).toContain(200);
    } finally {
      await v.close();
    }
  });

  it('guesses CARD for references starting CARD when not scripted', async () => {
    const v = await startFakeVendor();
    try {
      const res = await fetch(`${v.baseUrl}/payment-instructions/CARD-77`, { headers: { authorization: `Bearer ${v.apiKey}` } });
      expect(await res.json()).toEqual({ reference: 'CARD-77', type: 'CARD', status: 'ACTIVE' });
    } finally {
      await v.close();
    }
  });
});

describe('parseRetryAfter', () => {
  it('reads seconds and HTTP dates, and ignores junk', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(parseRetryAfter('3', now)).toBe(3_000);
    expect(parseRetryAfter('Thu, 01 Jan 2026 00:00:05 GMT', now)).toBe(5_000);
    expect(parseRetryAfter('Wed, 31 Dec 2025 00:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter(null, now)).toBeUndefined();
  });
});
