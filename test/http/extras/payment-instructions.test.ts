import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FAKE_VENDOR_API_KEY } from '../../helpers/fake-vendor.js';
import { createExtrasHarness, expectEnvelope, pairs, S, URLS, VENDOR, type ExtrasHarness } from './setup.js';

/**
 * Payment instructions against the sandbox vendor over real HTTP. The service is configured with a
 * 300 ms per-attempt timeout and 2 retries (3 attempts), with 10-50 ms backoff.
 */

let h: ExtrasHarness;
let accountNumber: string;
const EXT = 'PI-1';

beforeAll(async () => {
  h = await createExtrasHarness();
  accountNumber = await h.importAccount(EXT);
});
afterAll(async () => h?.close());

const postInstruction = async (reference: string, o: Record<string, unknown> = {}) =>
  h.post(URLS.paymentInstruction, { import_supplier: S, external_account_number: EXT, vendor: VENDOR, reference, type: 'CARD', ...o });

async function instructionRows(reference?: string) {
  let q = h.ctx.deps.db
    .selectFrom('payment_instructions')
    .select(['account_id', 'vendor', 'reference', 'type', 'details'])
    .where('account_id', '=', await h.accountId(EXT));
  if (reference !== undefined) q = q.where('reference', '=', reference);
  return q.orderBy('id').execute();
}

describe('payment instruction: the vendor has it', () => {
  it('answers 201 {service_account_number, reference} and stores one row with the vendor details', async () => {
    h.vendor.set('CARD-FOUND-1', { kind: 'found', details: { type: 'CARD', last4: '4242', expiry: '12/28' } });
    const res = await postInstruction('CARD-FOUND-1');
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json()).toEqual({ service_account_number: accountNumber, reference: 'CARD-FOUND-1', kraken_account_number: accountNumber });
    const rows = await instructionRows('CARD-FOUND-1');
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ vendor: VENDOR, reference: 'CARD-FOUND-1', type: 'CARD' });
    expect(rows[0]!.details).toEqual({ reference: 'CARD-FOUND-1', type: 'CARD', status: 'ACTIVE', last4: '4242', expiry: '12/28' });
    expect(h.vendor.countFor('CARD-FOUND-1')).toBe(1);
    const call = h.vendor.requests.find((r) => r.reference === 'CARD-FOUND-1')!;
    expect(call.authorization).toBe(`Bearer ${FAKE_VENDOR_API_KEY}`);
  });

  it('stores a DIRECT_DEBIT instruction', async () => {
    h.vendor.set('DD-FOUND-1', { kind: 'found', details: { type: 'DIRECT_DEBIT', mandate_id: 'MD-1' } });
    const res = await postInstruction('DD-FOUND-1', { type: 'DIRECT_DEBIT' });
    expect(res.statusCode, res.body).toBe(201);
    const rows = await instructionRows('DD-FOUND-1');
    expect(rows.map((r) => [r.type, (r.details as { mandate_id: string }).mandate_id])).toEqual([['DIRECT_DEBIT', 'MD-1']]);
  });

  it('a repeated reference answers 201 again from storage: one row, and the vendor is not asked again', async () => {
    h.vendor.set('CARD-REPEAT', { kind: 'found', details: { type: 'CARD', last4: '1111' } });
    const first = await postInstruction('CARD-REPEAT');
    expect(first.statusCode, first.body).toBe(201);
    expect(h.vendor.countFor('CARD-REPEAT')).toBe(1);
    // Even if the vendor would now answer otherwise, the stored instruction is the answer.
    h.vendor.set('CARD-REPEAT', { kind: 'not_found' });
    const second = await postInstruction('CARD-REPEAT');
    expect(second.statusCode, second.body).toBe(201);
    expect(second.json()).toEqual({ service_account_number: accountNumber, reference: 'CARD-REPEAT', kraken_account_number: accountNumber });
    expect(h.vendor.countFor('CARD-REPEAT')).toBe(1);
    const rows = await instructionRows('CARD-REPEAT');
    expect(rows).toHaveLength(1);
    expect((rows[0]!.details as { last4: string }).last4).toBe('1111');
  });

  it('retries an intermittent vendor failure: 500 then found → 201', async () => {
    h.vendor.set('CARD-FLAKY', { kind: 'fail', status: 500, times: 1, then: { kind: 'found', details: { type: 'CARD' } } });
    const res = await postInstruction('CARD-FLAKY');
    expect(res.statusCode, res.body).toBe(201);
    expect(h.vendor.countFor('CARD-FLAKY')).toBe(2);
    expect(await instructionRows('CARD-FLAKY')).toHaveLength(1);
  });

  it('uses every configured retry: two failures then found → 201', async () => {
    h.vendor.set('CARD-FLAKY-2', { kind: 'fail', status: 503, times: 2, then: { kind: 'found', details: { type: 'CARD' } } });
    const res = await postInstruction('CARD-FLAKY-2');
    expect(res.statusCode, res.body).toBe(201);
    expect(h.vendor.countFor('CARD-FLAKY-2')).toBe(3);
  });

  it('an answer slower than usual but within the timeout is fine', async () => {
    h.vendor.set('CARD-SLOWISH', { kind: 'slow', delayMs: 50, then: { kind: 'found', details: { type: 'CARD' } } });
    const res = await postInstruction('CARD-SLOWISH');
    expect(res.statusCode, res.body).toBe(201);
  });
});

describe('payment instruction: the vendor does not confirm it (400, do not retry unchanged)', () => {
  it('not found at the vendor: 400 payment_instruction_not_found_at_vendor, nothing stored', async () => {
    h.vendor.set('CARD-MISSING', { kind: 'not_found' });
    const before = await h.ctx.tableCounts();
    const res = await postInstruction('CARD-MISSING');
    expectEnvelope(res, 400, 'payment_instruction_not_found_at_vendor');
    expect(await h.ctx.tableCounts()).toEqual(before);
    // A verdict is not retried.
    expect(h.vendor.countFor('CARD-MISSING')).toBe(1);
  });

  it.each([[422], [400], [409], [410]])('rejected by the vendor (HTTP %i): the same 400', async (status) => {
    const ref = `CARD-REJECTED-${status}`;
    h.vendor.set(ref, { kind: 'rejected', status, reason: 'mandate revoked by payer' });
    const before = await h.ctx.tableCounts();
    const res = await postInstruction(ref);
    expectEnvelope(res, 400, 'payment_instruction_not_found_at_vendor');
    expect(await h.ctx.tableCounts()).toEqual(before);
    expect(h.vendor.countFor(ref)).toBe(1);
  });

  it('a type that differs from the vendor answer: 400 payment_instruction_type_mismatch, nothing stored', async () => {
    h.vendor.set('DD-AS-CARD', { kind: 'found', details: { type: 'DIRECT_DEBIT' } });
    const before = await h.ctx.tableCounts();
    const res = await postInstruction('DD-AS-CARD', { type: 'CARD' });
    const errors = expectEnvelope(res, 400, 'payment_instruction_type_mismatch');
    expect(errors.map((e) => e.attr)).toEqual(['type']);
    expect(await h.ctx.tableCounts()).toEqual(before);
  });

  it('an unknown vendor code: 400 payment_vendor_not_found, no vendor called', async () => {
    const calls = h.vendor.requests.length;
    const before = await h.ctx.tableCounts();
    const res = await postInstruction('CARD-ANY', { vendor: 'acme' });
    const errors = expectEnvelope(res, 400, 'payment_vendor_not_found');
    expect(errors.map((e) => e.attr)).toEqual(['vendor']);
    expect(await h.ctx.tableCounts()).toEqual(before);
    expect(h.vendor.requests.length).toBe(calls);
  });

  it.each([['constructor'], ['__proto__'], ['toString']])('a vendor code %j that only exists on Object.prototype is unknown', async (vendor) => {
    const res = await postInstruction('CARD-ANY', { vendor });
    expectEnvelope(res, 400, 'payment_vendor_not_found');
  });

  it('a type outside CARD / DIRECT_DEBIT: invalid_request with invalid_choice at type, no vendor called', async () => {
    const calls = h.vendor.requests.length;
    const res = await postInstruction('CARD-ANY', { type: 'CHEQUE' });
    expect(pairs(expectEnvelope(res, 400, 'invalid_request'))).toEqual(['invalid_choice@type']);
    expect(h.vendor.requests.length).toBe(calls);
  });

  it('every missing field is reported', async () => {
    const res = await h.post(URLS.paymentInstruction, { import_supplier: S, external_account_number: EXT });
    // reference may be given as the older instruction_reference instead: neither is mutually_exclusive_field_required.
    expect(pairs(expectEnvelope(res, 400, 'invalid_request')).sort()).toEqual(['mutually_exclusive_field_required@reference', 'required@type', 'required@vendor']);
  });
});

describe('payment instruction: the vendor is unavailable (500, retry as-is)', () => {
  it('a vendor failing every attempt: 500 payment_vendor_unavailable after the bounded retries; the retried request then succeeds', async () => {
    h.vendor.set('CARD-DOWN', { kind: 'fail', status: 500 });
    const before = await h.ctx.tableCounts();
    const res = await postInstruction('CARD-DOWN');
    expect(expectEnvelope(res, 500, 'payment_vendor_unavailable')).toEqual([]);
    expect(h.vendor.countFor('CARD-DOWN')).toBe(3);
    expect(await h.ctx.tableCounts()).toEqual(before);

    h.vendor.set('CARD-DOWN', { kind: 'found', details: { type: 'CARD' } });
    const retried = await postInstruction('CARD-DOWN');
    expect(retried.statusCode, retried.body).toBe(201);
    expect(await instructionRows('CARD-DOWN')).toHaveLength(1);
  });

  it('a vendor too slow to answer: 500 payment_vendor_unavailable within a bounded time', async () => {
    h.vendor.set('CARD-SLOW', { kind: 'slow', delayMs: 10_000 });
    const before = await h.ctx.tableCounts();
    const started = Date.now();
    const res = await postInstruction('CARD-SLOW');
    const elapsed = Date.now() - started;
    expectEnvelope(res, 500, 'payment_vendor_unavailable');
    // 3 attempts of 300 ms plus short backoffs; far below the vendor's 10 s.
    expect(elapsed).toBeLessThan(3_000);
    expect(h.vendor.countFor('CARD-SLOW')).toBe(3);
    expect(await h.ctx.tableCounts()).toEqual(before);
  });
});
