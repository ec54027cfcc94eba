import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GeneratedAccount } from '../../src/cohort/generate.js';
import { accountPayload } from '../helpers/fixtures.js';
import { createExtrasHarness, many, mixedTransactions, S, TEAM, URLS, VENDOR, type ExtrasHarness } from '../http/extras/setup.js';
import { api, countSql } from '../queue/helpers.js';
import { createPipelineContext, type PipelineContext } from '../queue/setup.js';
import { ended, expectExactImport, pollStatus } from './helpers.js';

/**
 * Duplicate requests: 50 concurrent identical requests to every write endpoint (stage, process,
 * notes, transactions, statements, payment instruction, batch upload of the same file) end with
 * exactly one effect each. The answers may differ (201 for the first, 200 / already-imported /
 * ALREADY_EXISTS for the repeats) but the rows never duplicate.
 *
 * `app.inject()` is lazy (a thenable that starts when awaited), so every request goes through an
 * `async` helper: calling it starts the request at once and `Promise.all` really runs them together.
 */

const N = 50;
const STAGE_URL = '/v1/data-import/account-import-process/create-or-update/';
const PROCESS_URL = '/v1/data-import/account-import-process/process/';

let h: ExtrasHarness;
let p: PipelineContext;

/** Status code → how many responses carried it (for messages and annotations). */
const tally = (responses: readonly LightMyRequestResponse[]): Record<number, number> =>
  responses.reduce<Record<number, number>>((acc, r) => ({ ...acc, [r.statusCode]: (acc[r.statusCode] ?? 0) + 1 }), {});

const count = async (sql: string, params: unknown[] = []): Promise<number> => Number((await h.rows<{ n: string }>(sql, params))[0]!.n);

beforeAll(async () => {
  [h, p] = await Promise.all([createExtrasHarness(), createPipelineContext()]);
  await h.putDocument('statements/dup-1.pdf', '%PDF-1.4\n1 0 obj\n<<>>\nendobj\n');
  await h.putDocument('statements/dup-2.pdf', Buffer.concat([Buffer.from('%PDF-1.7\n'), Buffer.alloc(32, 0xff)]));
});
afterAll(async () => {
  await Promise.allSettled([h?.close(), p?.close()]);
});

describe(`${N} concurrent identical requests to each REST write endpoint`, () => {
  it('stage (create-or-update) of one new account: one 201, the rest 200; one import process, one set of meter point claims', async ({ annotate }) => {
    const payload = accountPayload(S, 'DUP-STAGE');
    const responses = await many(N, () => h.post(STAGE_URL, payload));
    const statuses = tally(responses);
    for (const r of responses) expect([200, 201], r.body).toContain(r.statusCode);
    expect(statuses, JSON.stringify(statuses)).toEqual({ 201: 1, 200: N - 1 });
    for (const r of responses) expect(r.json()).toMatchObject({ import_supplier: S, external_account_number: 'DUP-STAGE' });

    const processes = await h.rows<{ id: string; payload: unknown }>(
      `SELECT p.id::text AS id, p.payload FROM account_import_processes p JOIN import_suppliers s ON s.id = p.import_supplier_id
        WHERE s.code = $1 AND p.external_account_number = $2`,
      [S, 'DUP-STAGE'],
    );
    expect(processes).toHaveLength(1);
    const identifiers = (payload.supply_addresses as Array<{ meter_points: Array<{ identifier: string }> }>)[0]!.meter_points.map((m) => m.identifier).sort();
    const claims = await h.rows<{ identifier: string; import_process_id: string }>(
      'SELECT identifier, import_process_id::text AS import_process_id FROM meter_point_registrations WHERE identifier = ANY($1) ORDER BY identifier',
      [identifiers],
    );
    expect(claims).toEqual(identifiers.map((identifier) => ({ identifier, import_process_id: processes[0]!.id })));
    expect(await count('SELECT count(*)::text AS n FROM meter_point_registrations WHERE import_process_id = $1', [processes[0]!.id])).toBe(identifiers.length);
    expect(await count('SELECT count(*)::text AS n FROM accounts WHERE external_account_number = $1', ['DUP-STAGE'])).toBe(0);
    await annotate(`[stage] ${N} requests: ${JSON.stringify(statuses)}; import processes 1; meter point claims ${claims.length}`);
  });

  it('process of one staged account: one 201, the rest 400 already-imported with the same number; one account with one set of rows', async ({ annotate }) => {
    await h.stageAccount('DUP-PROC');
    const body = { external_account_number: 'DUP-PROC', import_supplier_code: S, operations_team_name: TEAM };
    const responses = await many(N, () => h.post(PROCESS_URL, body));
    const statuses = tally(responses);
    for (const r of responses) expect([201, 400], r.body).toContain(r.statusCode);
    expect(statuses, JSON.stringify(statuses)).toEqual({ 201: 1, 400: N - 1 });
    const created = responses.find((r) => r.statusCode === 201)!;
    const number = (created.json() as { service_account_number: string }).service_account_number;
    expect(number).toMatch(/^A-[0-9A-F]{8}$/);
    for (const r of responses.filter((x) => x.statusCode === 400)) {
      const b = r.json() as Record<string, unknown>;
      expect(b, r.body).toMatchObject({
        code: 'account_import_process_already_imported',
        errors: [],
        external_account_number: 'DUP-PROC',
        service_account_number: number,
      });
    }

    const accounts = await h.rows<{ id: string; number: string }>(
      `SELECT a.id::text AS id, a.number FROM accounts a JOIN import_suppliers s ON s.id = a.import_supplier_id
        WHERE s.code = $1 AND a.external_account_number = $2`,
      [S, 'DUP-PROC'],
    );
    expect(accounts).toEqual([{ id: accounts[0]!.id, number }]);
    const id = accounts[0]!.id;
    const [rows] = await h.rows<Record<string, string>>(
      `SELECT (SELECT count(*) FROM customers WHERE account_id = $1)::text AS customers,
              (SELECT count(*) FROM supply_addresses WHERE account_id = $1)::text AS supply_addresses,
              (SELECT count(*) FROM meter_points WHERE account_id = $1)::text AS meter_points,
              (SELECT count(*) FROM meters m JOIN meter_points mp ON mp.id = m.meter_point_id WHERE mp.account_id = $1)::text AS meters,
              (SELECT count(*) FROM agreements g JOIN meter_points mp ON mp.id = g.meter_point_id WHERE mp.account_id = $1)::text AS agreements,
              (SELECT count(*) FROM account_metadata WHERE account_id = $1)::text AS metadata,
              (SELECT count(*) FROM account_import_processes WHERE account_id = $1)::text AS processes`,
      [id],
    );
    // accountPayload: one customer, one supply address with an electricity and a gas meter point (an agreement each), one metadata entry.
    expect(rows).toEqual({ customers: '1', supply_addresses: '1', meter_points: '2', meters: '2', agreements: '2', metadata: '1', processes: '1' });
    await annotate(`[process] ${N} requests: ${JSON.stringify(statuses)}; accounts 1 (${number}); rows ${JSON.stringify(rows)}`);
  });

  it('notes (two notes): every response 201, one SUCCESS per note, one row per note', async ({ annotate }) => {
    await h.importAccount('DUP-NOTES');
    const notes = [{ body: 'Duplicate note A' }, { body: 'Duplicate note B', created_at: '2025-01-01T00:00:00Z', is_pinned: true }];
    const responses = await many(N, () => h.post(URLS.notes, { import_supplier: S, external_account_number: 'DUP-NOTES', notes }));
    const statuses = tally(responses);
    for (const r of responses) expect(r.statusCode, r.body).toBe(201);
    const per = responses.map((r) => (r.json() as Array<{ status: string }>).map((n) => n.status));
    notes.forEach((_, i) => {
      expect(per.filter((s) => s[i] === 'NOTE_CREATION_SUCCESS')).toHaveLength(1);
      expect(per.filter((s) => s[i] === 'NOTE_ALREADY_EXISTS')).toHaveLength(N - 1);
    });
    const rows = await h.rows<{ body: string; n: string }>(
      'SELECT body, count(*)::text AS n FROM account_notes WHERE account_id = $1 GROUP BY body ORDER BY body',
      [await h.accountId('DUP-NOTES')],
    );
    expect(rows).toEqual([
      { body: 'Duplicate note A', n: '1' },
      { body: 'Duplicate note B', n: '1' },
    ]);
    await annotate(`[notes] ${N} requests × 2 notes: ${JSON.stringify(statuses)}; rows ${rows.length}`);
  });

  it('transactions (three, one moved into the open period): every response 201, one row per transaction_id, one pinned moved note', async ({ annotate }) => {
    await h.importAccount('DUP-TX');
    const transactions = mixedTransactions('DT');
    const responses = await many(N, () => h.post(URLS.transactions, { import_supplier: S, external_account_number: 'DUP-TX', transactions }));
    const statuses = tally(responses);
    for (const r of responses) expect(r.statusCode, r.body).toBe(201);
    const per = responses.map((r) => (r.json() as { results: Array<{ status: string }> }).results.map((x) => x.status));
    transactions.forEach((_, i) => {
      expect(per.filter((s) => s[i] === 'TRANSACTION_ADDED_TO_ACCOUNT')).toHaveLength(1);
      expect(per.filter((s) => s[i] === 'TRANSACTION_ALREADY_EXISTS')).toHaveLength(N - 1);
    });
    const accountId = await h.accountId('DUP-TX');
    const rows = await h.rows<{ transaction_id: string; n: string }>(
      'SELECT transaction_id, count(*)::text AS n FROM account_transactions WHERE account_id = $1 GROUP BY transaction_id ORDER BY transaction_id',
      [accountId],
    );
    expect(rows).toEqual([
      { transaction_id: 'DT-1', n: '1' },
      { transaction_id: 'DT-2', n: '1' },
      { transaction_id: 'DT-3', n: '1' },
    ]);
    const [items] = await h.rows<{ lines: string; taxes: string }>(
      `SELECT (SELECT count(*) FROM transaction_line_items i JOIN account_transactions t ON t.id = i.transaction_row_id WHERE t.account_id = $1)::text AS lines,
              (SELECT count(*) FROM transaction_tax_items i JOIN account_transactions t ON t.id = i.transaction_row_id WHERE t.account_id = $1)::text AS taxes`,
      [accountId],
    );
    expect(items).toEqual({ lines: '2', taxes: '1' });
    const moved = await h.rows<{ is_pinned: boolean }>("SELECT is_pinned FROM account_notes WHERE account_id = $1 AND origin = 'TRANSACTIONS_MOVED'", [accountId]);
    expect(moved).toEqual([{ is_pinned: true }]);
    await annotate(`[transactions] ${N} requests × 3 transactions: ${JSON.stringify(statuses)}; transaction rows ${rows.length}; moved notes ${moved.length} (pinned)`);
  });

  it('historical statements (two, with PDFs): every response 201, one STATEMENT_CREATED per statement, one row per statement_id', async ({ annotate }) => {
    await h.importAccount('DUP-ST');
    const statements = [
      { statement_id: 'DS-1', bill_period_from_date: '2025-01-01', bill_period_to_date: '2025-01-31', issued_date: '2025-02-02', number: '1', gross_amount: '10', statement_path: 'statements/dup-1.pdf' },
      { statement_id: 'DS-2', bill_period_from_date: '2025-02-01', bill_period_to_date: '2025-02-28', issued_date: '2025-03-02', number: '2', gross_amount: '20', statement_path: 'statements/dup-2.pdf' },
    ];
    const responses = await many(N, () => h.post(URLS.statements, { import_supplier: S, external_account_number: 'DUP-ST', statements }));
    const statuses = tally(responses);
    for (const r of responses) expect(r.statusCode, r.body).toBe(201);
    const per = responses.map((r) => (r.json() as { statements: Array<{ status: string }> }).statements.map((s) => s.status));
    statements.forEach((_, i) => {
      expect(per.filter((s) => s[i] === 'STATEMENT_CREATED')).toHaveLength(1);
      expect(per.filter((s) => s[i] === 'STATEMENT_ALREADY_EXISTS')).toHaveLength(N - 1);
    });
    const rows = await h.rows<{ statement_id: string; n: string }>(
      'SELECT statement_id, count(*)::text AS n FROM historical_statements WHERE account_id = $1 GROUP BY statement_id ORDER BY statement_id',
      [await h.accountId('DUP-ST')],
    );
    expect(rows).toEqual([
      { statement_id: 'DS-1', n: '1' },
      { statement_id: 'DS-2', n: '1' },
    ]);
    await annotate(`[statements] ${N} requests × 2 statements: ${JSON.stringify(statuses)}; statement rows ${rows.length}`);
  });

  it('payment instruction: every response 201 with the same body, one row; concurrent requests share the vendor call', async ({ annotate }) => {
    const number = await h.importAccount('DUP-PI');
    h.vendor.set('CARD-DUP', { kind: 'found', details: { type: 'CARD', last4: '4242' } });
    const body = { import_supplier: S, external_account_number: 'DUP-PI', vendor: VENDOR, reference: 'CARD-DUP', type: 'CARD' };
    const responses = await many(N, () => h.post(URLS.paymentInstruction, body));
    const statuses = tally(responses);
    for (const r of responses) {
      expect(r.statusCode, r.body).toBe(201);
      expect(r.json()).toEqual({ service_account_number: number, reference: 'CARD-DUP', kraken_account_number: number });
    }
    const rows = await h.ctx.deps.db
      .selectFrom('payment_instructions')
      .select(['vendor', 'reference', 'type', 'details'])
      .where('account_id', '=', await h.accountId('DUP-PI'))
      .execute();
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ vendor: VENDOR, reference: 'CARD-DUP', type: 'CARD' });
    expect((rows[0]!.details as { last4: string }).last4).toBe('4242');
    const asked = h.vendor.countFor('CARD-DUP');
    expect(asked).toBeGreaterThanOrEqual(1);
    // Concurrent identical lookups share one call (single-flight in the service); a request arriving
    // after that call ended but before the row committed may start one more. Each call makes at most
    // 1 + PAYMENT_VENDOR_RETRIES (2) attempts. Without the single-flight this was one call per request.
    expect(asked).toBeLessThanOrEqual(2 * 3);
    // Once stored, a repeat is answered from storage: the vendor is not asked again.
    const again = await h.post(URLS.paymentInstruction, body);
    expect(again.statusCode, again.body).toBe(201);
    expect(h.vendor.countFor('CARD-DUP')).toBe(asked);
    await annotate(`[payment instruction] ${N} requests: ${JSON.stringify(statuses)}; rows 1; vendor asked ${asked} times`);
  });
});

describe('batch upload of the same file', () => {
  const SUP = 'DUPB';
  const BTEAM = 'Dup Team';
  let cohort: { ndjson: string; accounts: GeneratedAccount[] };

  beforeAll(async () => {
    await p.createSupplier(SUP, { documentsRoot: 'dupb' });
    await p.createTeam(BTEAM);
    cohort = await p.cohort({ count: 20, supplier: SUP, prefix: 'DB', seed: 7 });
  });

  const query = `import_supplier=${SUP}&operations_team_name=${encodeURIComponent(BTEAM)}`;
  const batchCount = async () => countSql(p, 'SELECT count(*) AS n FROM batches b JOIN import_suppliers s ON s.id = b.import_supplier_id WHERE s.code = $1', [SUP]);

  it(`${N} concurrent uploads with one Idempotency-Key: all 202 with one batch_id, one batch of 20 items, 20 accounts`, async ({ annotate }) => {
    const upload = async () => api(p).upload(cohort.ndjson, query, { 'idempotency-key': 'dup-cohort-1' });
    const responses = await many(N, upload);
    const statuses = tally(responses);
    for (const r of responses) expect(r.statusCode, r.body).toBe(202);
    const bodies = responses.map((r) => r.json() as { batch_id: string; total_items: number });
    const ids = new Set(bodies.map((b) => b.batch_id));
    expect(ids.size).toBe(1);
    const [batchId] = [...ids] as [string];
    // The one upload that read the body answers 20; a repeat answers the stored count (0 while the first was still uploading).
    const totals = bodies.map((b) => b.total_items);
    expect(totals.filter((t) => t === 20).length).toBeGreaterThanOrEqual(1);
    for (const t of totals) expect([0, 20]).toContain(t);
    expect(await batchCount()).toBe(1);
    expect(await countSql(p, 'SELECT count(*) AS n FROM batch_items WHERE batch_id = $1', [batchId])).toBe(20);

    const set = p.startWorkers();
    try {
      const end = await pollStatus(p, batchId, ended, 'the keyed batch to end', { timeoutMs: 40_000 });
      expect(end).toMatchObject({ state: 'COMPLETED', total_items: 20, succeeded: 20, failed: 0, cancelled: 0 });
      const figures = await expectExactImport(p, SUP, cohort.accounts, batchId);
      // A repeat after the end still answers the same batch.
      const late = await upload();
      expect(late.statusCode, late.body).toBe(202);
      expect(late.json()).toEqual({ batch_id: batchId, total_items: 20 });
      expect(await batchCount()).toBe(1);
      const zeroTotals = totals.filter((t) => t === 0).length;
      await annotate(`[batch keyed] ${N} uploads: ${JSON.stringify(statuses)}, 1 batch_id, total_items 20 in ${N - zeroTotals} answers and 0 in ${zeroTotals}; batches 1, items 20; end ${JSON.stringify(figures)}`);
    } finally {
      await set.close(10_000);
    }
  }, 60_000);

  it('10 concurrent uploads of the same file without a key: 10 batches, all COMPLETED, still exactly 20 accounts and one copy of every extra', async ({ annotate }) => {
    const before = await batchCount();
    const responses = await many(10, async () => api(p).upload(cohort.ndjson, query));
    for (const r of responses) expect(r.statusCode, r.body).toBe(202);
    const ids = responses.map((r) => (r.json() as { batch_id: string; total_items: number }).batch_id);
    for (const r of responses) expect((r.json() as { total_items: number }).total_items).toBe(20);
    expect(new Set(ids).size).toBe(10);
    expect(await batchCount()).toBe(before + 10);

    const set = p.startWorkers();
    try {
      for (const id of ids) {
        const end = await pollStatus(p, id, ended, `batch ${id} to end`, { timeoutMs: 50_000 });
        expect(end).toMatchObject({ state: 'COMPLETED', total_items: 20, succeeded: 20, failed: 0, cancelled: 0 });
      }
      // Every batch reports every account as migrated with its one account number; the account holds exactly its extras once.
      let figures;
      for (const id of ids) figures = await expectExactImport(p, SUP, cohort.accounts, id);
      await annotate(`[batch unkeyed] 10 uploads: 10×202, 10 batches COMPLETED (20/20 each); end ${JSON.stringify(figures)}`);
    } finally {
      await set.close(10_000);
    }
  }, 60_000);

  it('10 concurrent uploads of a fresh 10-account file while workers run: every account created once, extras once', async ({ annotate }) => {
    const SUP2 = 'DUPC';
    await p.createSupplier(SUP2, { documentsRoot: 'dupc' });
    const fresh = await p.cohort({ count: 10, supplier: SUP2, prefix: 'DC', seed: 8 });
    const set = p.startWorkers();
    try {
      const q2 = `import_supplier=${SUP2}&operations_team_name=${encodeURIComponent(BTEAM)}`;
      const responses = await many(10, async () => api(p).upload(fresh.ndjson, q2));
      for (const r of responses) expect(r.statusCode, r.body).toBe(202);
      const ids = responses.map((r) => (r.json() as { batch_id: string }).batch_id);
      expect(new Set(ids).size).toBe(10);
      for (const id of ids) {
        const end = await pollStatus(p, id, ended, `batch ${id} to end`, { timeoutMs: 50_000 });
        expect(end).toMatchObject({ state: 'COMPLETED', total_items: 10, succeeded: 10, failed: 0, cancelled: 0 });
      }
      let figures;
      for (const id of ids) figures = await expectExactImport(p, SUP2, fresh.accounts, id);
      await annotate(`[batch unkeyed, racing] 10 uploads of 10 new accounts with workers running: 10 batches COMPLETED; end ${JSON.stringify(figures)}`);
    } finally {
      await set.close(10_000);
    }
  }, 60_000);
});
