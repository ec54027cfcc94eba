import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { published } from '../../contract/harness.js';
import { pollUntil } from '../../helpers/poll.js';
import { addReferenceValue, retireReferenceValue } from '../../../src/imports/reference/reference.repository.js';
import { createExtrasHarness, expectEnvelope, expectTransactionError, pairs, S, URLS, VENDOR, type ExtrasHarness } from './setup.js';

/**
 * The document's own example payloads for the extras endpoints, sent as they are apart from the
 * supplier, the account, identifiers that must be unique and dates that must fall in the open period
 * (issue 11); every documented field they carry is stored. "Today" is 2026-06-15.
 */

let h: ExtrasHarness;
const EXT = 'PUB-1';

beforeAll(async () => {
  h = await createExtrasHarness();
  await h.importAccount(EXT);
});
afterAll(async () => h?.close());

const retarget = <T extends Record<string, unknown>>(example: T, ext = EXT): T => ({ ...example, import_supplier: S, external_account_number: ext });

describe('the published examples, as sent', () => {
  it('notes: 201, with external_id and is_archived kept', async () => {
    await h.putDocument('some/path/to/a/document.pdf', '%PDF-1.4\n');
    const example = retarget(published('notes'));
    example.notes[0].external_id = 'NOTE-EXT-1';
    // The example's unpin_at (2020) is before a note created now would be: moved to the future, as dates may be.
    example.notes[0].unpin_at = '2026-12-01T12:00:00Z';
    example.notes[1].is_archived = true;
    const res = await h.post(URLS.notes, example);
    expect(res.statusCode, res.body).toBe(201);
    const rows = await h.rows<{ body: string; external_id: string | null; is_archived: boolean; is_pinned: boolean }>(
      `SELECT body, external_id, is_archived, is_pinned FROM account_notes WHERE account_id = $1 ORDER BY id`,
      [await h.accountId(EXT)],
    );
    expect(rows).toEqual([
      { body: 'Some important pinned note.', external_id: 'NOTE-EXT-1', is_archived: false, is_pinned: true },
      { body: 'Some important note with an attachment.', external_id: null, is_archived: true, is_pinned: false },
    ]);
  });

  it('notes: a repeated external_id is the same note, whatever its text', async () => {
    const res = await h.post(URLS.notes, retarget({ notes: [{ body: 'Reworded pinned note.', external_id: 'NOTE-EXT-1' }] }));
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json()[0]).toMatchObject({ status: 'NOTE_ALREADY_EXISTS', body: 'Some important pinned note.' });
  });

  it('transactions: 201, every documented field stored, including to_prepay_meter_serial_number and params', async () => {
    const example = retarget(published('transactions'));
    for (const t of example.transactions) {
      t.transaction_id = `PUB-T-${String(t.transaction_id)}`;
      t.transaction_date = '2026-01-10';
    }
    const supply = example.transactions[5];
    supply.billing_document_identifier = 'BILL-77';
    supply.supply_point_identifier = '1200060176720';
    supply.line_items[0] = { ...supply.line_items[0], start_date: '2025-12-01', end_date: '2026-01-01', external_rate_identifier: 'RATE-9', params: { meter_legacy_id: 'M-1' } };
    supply.tax_items[0].params = { note: 'standard rate' };
    const res = await h.post(URLS.transactions, example);
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json().results.map((r: { status: string }) => r.status)).toEqual(example.transactions.map(() => 'TRANSACTION_ADDED_TO_ACCOUNT'));
    const [prepay] = await h.rows<{ to_prepay_meter_serial_number: string; amount: string }>(
      `SELECT to_prepay_meter_serial_number, amount::text FROM account_transactions WHERE transaction_id = 'PUB-T-2'`,
    );
    expect(prepay).toEqual({ to_prepay_meter_serial_number: 'Z16N389556', amount: '10' });
    const [charge] = await h.rows<Record<string, unknown>>(
      `SELECT t.billing_document_identifier, t.supply_point_identifier, l.external_rate_identifier, l.params AS line_params, x.params AS tax_params, t.reference
         FROM account_transactions t JOIN transaction_line_items l ON l.transaction_row_id = t.id JOIN transaction_tax_items x ON x.transaction_row_id = t.id
        WHERE t.transaction_id = 'PUB-T-6'`,
    );
    expect(charge).toEqual({
      billing_document_identifier: 'BILL-77',
      supply_point_identifier: '1200060176720',
      external_rate_identifier: 'RATE-9',
      line_params: { meter_legacy_id: 'M-1' },
      tax_params: { note: 'standard rate' },
      reference: 'supply-charge-reference-1',
    });
  });

  it('transactions: dry_run true answers what would happen and writes nothing', async () => {
    const before = await h.ctx.tableCounts();
    const res = await h.post(URLS.transactions, retarget({ dry_run: true, transactions: [{ transaction_id: 'DRY-1', transaction_date: '2026-01-10', amount: '1.00', type: 'CHARGE', reason: 'IMPORTED_CHARGE' }] }));
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json().results[0]).toMatchObject({ status: 'TRANSACTION_ADDED_TO_ACCOUNT' });
    expect(await h.ctx.tableCounts()).toEqual(before);
  });

  it('historical statements: 201 with only the three required fields, and with the example as sent', async () => {
    await h.putDocument('path/to/statement-1.pdf', '%PDF-1.4\n');
    const example = retarget(published('historical-statements'));
    const res = await h.post(URLS.statements, example);
    expect(res.statusCode, res.body).toBe(201);
    const bare = await h.post(URLS.statements, retarget({ statements: [{ bill_period_from_date: '2022-02-01', bill_period_to_date: '2022-02-28', statement_id: 'BARE-1' }] }));
    expect(bare.statusCode, bare.body).toBe(201);
    const rows = await h.rows<Record<string, unknown>>(
      `SELECT statement_id, issued_date, number, gross_amount::text, statement_path FROM historical_statements WHERE account_id = $1 ORDER BY statement_id`,
      [await h.accountId(EXT)],
    );
    expect(rows).toEqual([
      { statement_id: '1', issued_date: '2022-02-02', number: '1', gross_amount: '100', statement_path: 'path/to/statement-1.pdf' },
      { statement_id: 'BARE-1', issued_date: null, number: null, gross_amount: null, statement_path: null },
    ]);
  });

  it('historical statements: a statement_path with a leading / is read from the supplier\'s documents root', async () => {
    await h.putDocument('EXTERNAL-1234/2019-06-01-to-2019-07-01.pdf', '%PDF-1.7\n');
    const res = await h.post(
      URLS.statements,
      retarget({ statements: [{ bill_period_from_date: '2019-06-01', bill_period_to_date: '2019-07-01', statement_id: 'ROOTED-1', statement_path: '/EXTERNAL-1234/2019-06-01-to-2019-07-01.pdf' }] }),
    );
    expect(res.statusCode, res.body).toBe(201);
  });

  it('payment instruction: 201 with the published fields kept, and the older instruction_reference in place of reference', async () => {
    h.vendor.set('THIS-IS-A-FAKE-REFERENCE', { kind: 'found', details: { type: 'CARD', last4: '4242' } });
    const example = { ...retarget(published('payment-instruction')), vendor: VENDOR, ledger_code: 'MAIN', use_for_scheduled_payments: true, valid_from: '2026-01-01', customer_reference: 'CUST-1', instruction_identifier: 'PI-1' };
    const res = await h.post(URLS.paymentInstruction, example);
    expect(res.statusCode, res.body).toBe(201);
    const [row] = await h.rows<Record<string, unknown>>(
      `SELECT reference, type, ledger_code, use_for_scheduled_payments, valid_from, customer_reference, instruction_identifier FROM payment_instructions WHERE reference = 'THIS-IS-A-FAKE-REFERENCE'`,
    );
    expect(row).toEqual({ reference: 'THIS-IS-A-FAKE-REFERENCE', type: 'CARD', ledger_code: 'MAIN', use_for_scheduled_payments: true, valid_from: '2026-01-01', customer_reference: 'CUST-1', instruction_identifier: 'PI-1' });

    h.vendor.set('OLD-STYLE-REF', { kind: 'found', details: { type: 'DIRECT_DEBIT', mandate_id: 'M-9' } });
    const old = await h.post(URLS.paymentInstruction, retarget({ vendor: VENDOR, instruction_reference: 'OLD-STYLE-REF', type: 'DIRECT_DEBIT' }));
    expect(old.statusCode, old.body).toBe(201);
    expect(old.json()).toMatchObject({ reference: 'OLD-STYLE-REF' });
  });

  it('payment instruction: both reference and instruction_reference, or neither, is mutually_exclusive_field_required', async () => {
    const both = await h.post(URLS.paymentInstruction, retarget({ vendor: VENDOR, reference: 'A', instruction_reference: 'B', type: 'CARD' }));
    expect(pairs(expectEnvelope(both, 400, 'invalid_request'))).toEqual(['mutually_exclusive_field_required@instruction_reference']);
    const neither = await h.post(URLS.paymentInstruction, retarget({ vendor: VENDOR, type: 'CARD' }));
    expect(pairs(expectEnvelope(neither, 400, 'invalid_request'))).toEqual(['mutually_exclusive_field_required@reference']);
  });
});

describe('the published, deprecated account_number of the notes and transactions bodies', () => {
  it("is accepted when it is the pair's own account, and answers 404 account_not_found when it names another", async () => {
    const number = (await h.rows<{ number: string }>('SELECT number FROM accounts WHERE id = $1', [await h.accountId(EXT)]))[0]!.number;
    const own = await h.post(URLS.notes, retarget({ account_number: number, notes: [{ body: 'Named twice, consistently' }] }));
    expect(own.statusCode, own.body).toBe(201);
    const other = await h.post(URLS.notes, retarget({ account_number: 'A-00000000', notes: [{ body: 'Named inconsistently' }] }));
    expect(expectEnvelope(other, 404, 'account_not_found')).toEqual([]);
    const tx = await h.post(URLS.transactions, retarget({ account_number: 'A-00000000', transactions: [{ transaction_id: 'AN-1', transaction_date: '2026-01-10', amount: '1', type: 'PAYMENT' }] }));
    expect(expectEnvelope(tx, 404, 'account_not_found')).toEqual([]);
    expect(await h.rows(`SELECT 1 FROM account_transactions WHERE transaction_id = 'AN-1'`)).toEqual([]);
  });
});

describe('reference lists (decisions §6)', () => {
  const charge = (id: string, reason: string) => ({ transaction_id: id, transaction_date: '2026-01-10', amount: '3.00', type: 'CHARGE', reason });

  it("takes a platform's own reason once an operator adds it, and refuses it again once retired", async () => {
    const before = await h.post(URLS.transactions, retarget({ transactions: [charge('REF-0', 'SPRING_CAMPAIGN_26')] }));
    expectTransactionError(before, 'invalid_choice', 'transactions.0.reason');

    await addReferenceValue(h.ctx.deps.db, 'CHARGE_REASON', 'SPRING_CAMPAIGN_26');
    // Servers reload the lists when their version moves, within a second: poll, do not sleep.
    let n = 0;
    const added = await pollUntil(async () => {
      const res = await h.post(URLS.transactions, retarget({ transactions: [charge(`REF-A-${++n}`, 'SPRING_CAMPAIGN_26')] }));
      return res.statusCode === 201 ? res : undefined;
    }, { timeoutMs: 10_000 });
    expect(added.json().results[0]).toMatchObject({ status: 'TRANSACTION_ADDED_TO_ACCOUNT' });

    await retireReferenceValue(h.ctx.deps.db, 'CHARGE_REASON', 'SPRING_CAMPAIGN_26');
    const refused = await pollUntil(async () => {
      const res = await h.post(URLS.transactions, retarget({ transactions: [charge('REF-R', 'SPRING_CAMPAIGN_26')] }));
      return res.statusCode === 400 ? res : undefined;
    }, { timeoutMs: 10_000 });
    expectTransactionError(refused, 'invalid_choice', 'transactions.0.reason');
    // What was imported with it keeps it.
    const kept = await h.rows<{ reason: string }>(`SELECT reason FROM account_transactions WHERE transaction_id LIKE 'REF-A-%'`);
    expect(kept.length).toBeGreaterThan(0);
    expect(kept.every((r) => r.reason === 'SPRING_CAMPAIGN_26')).toBe(true);
  });

  it('takes CARD and DIRECT_DEBIT payment instructions by default, and another published type only once enabled', async () => {
    h.vendor.set('SLIP-1', { kind: 'found', details: { type: 'PAYMENT_SLIP' } });
    const first = await h.post(URLS.paymentInstruction, retarget({ vendor: VENDOR, reference: 'SLIP-1', type: 'PAYMENT_SLIP' }));
    expect(pairs(expectEnvelope(first, 400, 'invalid_request'))).toEqual(['invalid_choice@type']);
    await addReferenceValue(h.ctx.deps.db, 'PAYMENT_INSTRUCTION_TYPE', 'PAYMENT_SLIP');
    const later = await pollUntil(async () => {
      const res = await h.post(URLS.paymentInstruction, retarget({ vendor: VENDOR, reference: 'SLIP-1', type: 'PAYMENT_SLIP' }));
      return res.statusCode === 201 ? res : undefined;
    }, { timeoutMs: 10_000 });
    expect(later.json()).toMatchObject({ reference: 'SLIP-1' });
  });
});
