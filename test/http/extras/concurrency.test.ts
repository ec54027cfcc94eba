import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createExtrasHarness, many, mixedTransactions, S, URLS, VENDOR, type ExtrasHarness } from './setup.js';

/**
 * The same request arriving many times at once (a client retrying, several workers): the dedupe
 * rules must hold under concurrency, not only one request after another.
 */

let h: ExtrasHarness;

beforeAll(async () => {
  h = await createExtrasHarness();
  await h.putDocument('letters/concurrent.txt', 'hello');
});
afterAll(async () => h?.close());

describe('concurrency', () => {
  it('the same notes request posted 20 times at once creates exactly one copy of each note', async () => {
    await h.importAccount('C-NOTES');
    const notes = [
      { body: 'Concurrent A' },
      { body: 'Concurrent B', created_at: '2025-01-01T00:00:00Z' },
      { document_paths: [{ document_path: 'letters/concurrent.txt' }] },
      { body: 'Concurrent D', is_pinned: true },
    ];
    const responses = await many(20, () => h.post(URLS.notes, { import_supplier: S, external_account_number: 'C-NOTES', notes }));
    for (const r of responses) expect(r.statusCode, r.body).toBe(201);
    const statuses = responses.map((r) => (r.json() as Array<{ status: string }>).map((n) => n.status));
    notes.forEach((_, i) => {
      expect(statuses.filter((s) => s[i] === 'NOTE_CREATION_SUCCESS')).toHaveLength(1);
      expect(statuses.filter((s) => s[i] === 'NOTE_ALREADY_EXISTS')).toHaveLength(19);
    });
    const rows = await h.ctx.deps.db
      .selectFrom('account_notes')
      .select(['body', 'document_paths'])
      .where('account_id', '=', await h.accountId('C-NOTES'))
      .orderBy('id')
      .execute();
    expect(rows.map((r) => r.body ?? r.document_paths.join(',')).sort()).toEqual(['Concurrent A', 'Concurrent B', 'Concurrent D', 'letters/concurrent.txt']);
  });

  it('the same transactions request posted 20 times at once: every response 201, one row per transaction_id', async () => {
    await h.importAccount('C-TX');
    const transactions = mixedTransactions('CT');
    const responses = await many(20, () => h.post(URLS.transactions, { import_supplier: S, external_account_number: 'C-TX', transactions }));
    for (const r of responses) expect(r.statusCode, r.body).toBe(201);
    const statuses = responses.map((r) => (r.json() as { results: Array<{ status: string }> }).results.map((x) => x.status));
    transactions.forEach((_, i) => {
      expect(statuses.filter((s) => s[i] === 'TRANSACTION_ADDED_TO_ACCOUNT')).toHaveLength(1);
      expect(statuses.filter((s) => s[i] === 'TRANSACTION_ALREADY_EXISTS')).toHaveLength(19);
    });
    const accountId = await h.accountId('C-TX');
    const rows = await h.rows<{ transaction_id: string; n: string }>(
      'SELECT transaction_id, count(*)::text AS n FROM account_transactions WHERE account_id = $1 GROUP BY transaction_id ORDER BY transaction_id',
      [accountId],
    );
    expect(rows).toEqual([
      { transaction_id: 'CT-1', n: '1' },
      { transaction_id: 'CT-2', n: '1' },
      { transaction_id: 'CT-3', n: '1' },
    ]);
    const [items] = await h.rows<{ lines: string; taxes: string }>(
      `SELECT (SELECT count(*) FROM transaction_line_items i JOIN account_transactions t ON t.id = i.transaction_row_id WHERE t.account_id = $1)::text AS lines,
              (SELECT count(*) FROM transaction_tax_items i JOIN account_transactions t ON t.id = i.transaction_row_id WHERE t.account_id = $1)::text AS taxes`,
      [accountId],
    );
    expect(items).toEqual({ lines: '2', taxes: '1' });
    const moved = await h.ctx.deps.db
      .selectFrom('account_notes')
      .select('id')
      .where('account_id', '=', accountId)
      .where('origin', '=', 'TRANSACTIONS_MOVED')
      .execute();
    expect(moved).toHaveLength(1);
  });

  it('with check_previously_added=false, 20 concurrent copies: one 201, the rest duplicate_transaction_id, never a second row', async () => {
    await h.importAccount('C-TX-NOCHECK');
    const transactions = [
      { transaction_id: 'CN-1', transaction_date: '2026-01-10', amount: '1', type: 'CHARGE', reason: 'IMPORTED_CHARGE' },
      { transaction_id: 'CN-2', transaction_date: '2026-01-11', amount: '2', type: 'PAYMENT' },
    ];
    const responses = await many(20, () =>
      h.post(URLS.transactions, { import_supplier: S, external_account_number: 'C-TX-NOCHECK', transactions }, { query: 'check_previously_added=false' }),
    );
    expect(responses.filter((r) => r.statusCode === 201)).toHaveLength(1);
    const refused = responses.filter((r) => r.statusCode !== 201);
    expect(refused).toHaveLength(19);
    for (const r of refused) {
      expect(r.statusCode, r.body).toBe(400);
      expect(r.json()).toMatchObject({ status: 'TRANSACTION_IMPORT_ERROR', code: 'duplicate_transaction_id', attr: 'transactions.0.transaction_id' });
    }
    const rows = await h.rows<{ transaction_id: string }>('SELECT transaction_id FROM account_transactions WHERE account_id = $1 ORDER BY transaction_id', [
      await h.accountId('C-TX-NOCHECK'),
    ]);
    expect(rows.map((r) => r.transaction_id)).toEqual(['CN-1', 'CN-2']);
  });

  it('the same historical statements posted 10 times at once: every response 201, one row per statement', async () => {
    await h.importAccount('C-ST');
    const statements = [
      { statement_id: 'CS-1', bill_period_from_date: '2025-01-01', bill_period_to_date: '2025-01-31', issued_date: '2025-02-02', number: '1', gross_amount: '10' },
      { statement_id: 'CS-2', bill_period_from_date: '2025-02-01', bill_period_to_date: '2025-02-28', issued_date: '2025-03-02', number: '2', gross_amount: '20' },
    ];
    const responses = await many(10, () => h.post(URLS.statements, { import_supplier: S, external_account_number: 'C-ST', statements }));
    for (const r of responses) expect(r.statusCode, r.body).toBe(201);
    const statuses = responses.map((r) => (r.json() as { statements: Array<{ status: string }> }).statements.map((s) => s.status));
    statements.forEach((_, i) => expect(statuses.filter((s) => s[i] === 'STATEMENT_CREATED')).toHaveLength(1));
    const rows = await h.rows<{ statement_id: string }>('SELECT statement_id FROM historical_statements WHERE account_id = $1 ORDER BY statement_id', [
      await h.accountId('C-ST'),
    ]);
    expect(rows.map((r) => r.statement_id)).toEqual(['CS-1', 'CS-2']);
  });

  it('the same payment instruction posted 10 times at once: every response 201, one row', async () => {
    const number = await h.importAccount('C-PI');
    h.vendor.set('CARD-CONCURRENT', { kind: 'found', details: { type: 'CARD', last4: '9999' } });
    const responses = await many(10, () =>
      h.post(URLS.paymentInstruction, { import_supplier: S, external_account_number: 'C-PI', vendor: VENDOR, reference: 'CARD-CONCURRENT', type: 'CARD' }),
    );
    for (const r of responses) {
      expect(r.statusCode, r.body).toBe(201);
      expect(r.json()).toEqual({ service_account_number: number, reference: 'CARD-CONCURRENT', kraken_account_number: number });
    }
    const rows = await h.ctx.deps.db
      .selectFrom('payment_instructions')
      .select(['reference', 'details'])
      .where('account_id', '=', await h.accountId('C-PI'))
      .execute();
    expect(rows).toHaveLength(1);
    expect((rows[0]!.details as { last4: string }).last4).toBe('9999');
    expect(h.vendor.countFor('CARD-CONCURRENT')).toBeGreaterThanOrEqual(1);
    // At most every request's attempts (3 each); the vendor is asked, never the stored copy duplicated.
    expect(h.vendor.countFor('CARD-CONCURRENT')).toBeLessThanOrEqual(30);
  });
});
