import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createExtrasHarness, expectEnvelope, pairs, S, URLS, VENDOR, type ExtrasHarness } from './setup.js';

/**
 * What every extras endpoint shares (decisions §3, §4): 404 account_not_found unless the pair has a
 * created account, 400 import_supplier_migration_not_ongoing for Paused and Complete suppliers,
 * 401 without a token, and the invalid_request envelope for a malformed outer shape.
 */

let h: ExtrasHarness;
const PAUSED = 'PAUSED_LATER_CO';
const DONE = 'COMPLETE_LATER_CO';

beforeAll(async () => {
  h = await createExtrasHarness();
  await h.importAccount('ACC-1');
  await h.stageAccount('STAGED-ONLY');
  for (const code of [PAUSED, DONE]) {
    await h.ctx.createSupplier(code);
    await h.importAccount('ACC-P', {}, code);
  }
  // The accounts exist; the operators then pause or complete the migrations.
  await h.setSupplierStatus(PAUSED, 'PAUSED');
  await h.setSupplierStatus(DONE, 'COMPLETE');
  h.vendor.setDefault({ kind: 'found', details: { type: 'CARD' } });
});
afterAll(async () => h?.close());

type Endpoint = 'notes' | 'transactions' | 'statements' | 'paymentInstruction';

/** A valid body for each endpoint and pair, so only the pair decides the outcome. */
function validBody(endpoint: Endpoint, supplier: string, ext: string): Record<string, unknown> {
  const pair = { import_supplier: supplier, external_account_number: ext };
  switch (endpoint) {
    case 'notes':
      return { ...pair, notes: [{ body: 'A note' }] };
    case 'transactions':
      return {
        ...pair,
        transactions: [{ transaction_id: 'T-1', transaction_date: '2026-01-10', amount: '10.00', type: 'CHARGE', reason: 'IMPORTED_CHARGE' }],
      };
    case 'statements':
      return {
        ...pair,
        statements: [
          { statement_id: 'ST-1', bill_period_from_date: '2025-01-01', bill_period_to_date: '2025-01-31', issued_date: '2025-02-03', number: 'N-1', gross_amount: '10.00' },
        ],
      };
    case 'paymentInstruction':
      return { ...pair, vendor: VENDOR, reference: 'CARD-ACCESS-1', type: 'CARD' };
  }
}

/** The field each endpoint's request must carry besides the pair (for the "missing" case). */
const ITEMS_FIELD: Record<Endpoint, string> = {
  notes: 'notes',
  transactions: 'transactions',
  statements: 'statements',
  paymentInstruction: 'reference',
};

const ENDPOINTS: Endpoint[] = ['notes', 'transactions', 'statements', 'paymentInstruction'];

describe.each(ENDPOINTS)('%s endpoint', (endpoint) => {
  const url = URLS[endpoint];

  it.each([
    ['an unknown pair (known supplier, unknown account)', S, 'NO-SUCH-ACCOUNT'],
    ['an unknown supplier', 'NO_SUCH_SUPPLIER', 'ACC-1'],
    ['an account staged but not processed', S, 'STAGED-ONLY'],
  ])('answers 404 account_not_found for %s and writes nothing', async (_what, supplier, ext) => {
    const before = await h.ctx.tableCounts();
    const calls = h.vendor.requests.length;
    const res = await h.post(url, validBody(endpoint, supplier, ext));
    expect(res.statusCode, res.body).toBe(404);
    expect(res.json()).toEqual({ detail: expect.any(String), code: 'account_not_found', errors: [] });
    expect(await h.ctx.tableCounts()).toEqual(before);
    expect(h.vendor.requests.length).toBe(calls);
  });

  it.each([
    ['Paused', PAUSED],
    ['Complete', DONE],
  ])('answers 400 import_supplier_migration_not_ongoing for a %s supplier and writes nothing', async (_status, supplier) => {
    const before = await h.ctx.tableCounts();
    const calls = h.vendor.requests.length;
    const res = await h.post(url, validBody(endpoint, supplier, 'ACC-P'));
    expectEnvelope(res, 400, 'import_supplier_migration_not_ongoing');
    expect(await h.ctx.tableCounts()).toEqual(before);
    // The vendor is not asked about an instruction that cannot be imported anyway.
    expect(h.vendor.requests.length).toBe(calls);
  });

  it('answers 401 not_authenticated without a token and writes nothing', async () => {
    const before = await h.ctx.tableCounts();
    const res = await h.post(url, validBody(endpoint, S, 'ACC-1'), { noAuth: true });
    expect(expectEnvelope(res, 401, 'not_authenticated')).toEqual([]);
    expect(await h.ctx.tableCounts()).toEqual(before);
  });

  it('answers 401 authentication_failed for a bad token', async () => {
    const res = await h.ctx.app.inject({
      method: 'POST',
      url,
      payload: validBody(endpoint, S, 'ACC-1'),
      headers: { authorization: 'Token not-a-real-token' },
    });
    expectEnvelope(res, 401, 'authentication_failed');
  });

  it('answers the invalid_request envelope with unknown_field for an unknown top-level field', async () => {
    const before = await h.ctx.tableCounts();
    const res = await h.post(url, { ...validBody(endpoint, S, 'ACC-1'), surprise: 1 });
    const errors = expectEnvelope(res, 400, 'invalid_request');
    expect(pairs(errors)).toEqual(['unknown_field@surprise']);
    expect(await h.ctx.tableCounts()).toEqual(before);
  });

  it('answers the invalid_request envelope listing every outer-shape problem with its attr', async () => {
    const body = validBody(endpoint, S, 'ACC-1');
    delete body[ITEMS_FIELD[endpoint]];
    body.external_account_number = 42;
    body.extra_field = 'x';
    const res = await h.post(url, body);
    const errors = expectEnvelope(res, 400, 'invalid_request');
    // A payment instruction is named by reference or instruction_reference: without either, that is the problem.
    const missing = endpoint === 'paymentInstruction' ? `mutually_exclusive_field_required@${ITEMS_FIELD[endpoint]}` : `required@${ITEMS_FIELD[endpoint]}`;
    expect(pairs(errors).sort()).toEqual([missing, 'invalid_type@external_account_number', 'unknown_field@extra_field'].sort());
  });

  it('answers the invalid_request envelope for a body that is not an object', async () => {
    const res = await h.post(url, [validBody(endpoint, S, 'ACC-1')]);
    expectEnvelope(res, 400, 'invalid_request');
  });

  it('works for the created account (the 404s are about the pair, not the body)', async () => {
    const res = await h.post(url, validBody(endpoint, S, 'ACC-1'));
    expect(res.statusCode, res.body).toBe(201);
  });
});

describe('array fields of the outer shape', () => {
  it.each([
    ['notes', URLS.notes],
    ['transactions', URLS.transactions],
    ['statements', URLS.statements],
  ])('%s must be an array: invalid_type at its name', async (field, url) => {
    const res = await h.post(url, { import_supplier: S, external_account_number: 'ACC-1', [field]: 'not an array' });
    const errors = expectEnvelope(res, 400, 'invalid_request');
    expect(pairs(errors)).toEqual([`invalid_type@${field}`]);
  });
});
