import { Decimal } from 'decimal.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../../src/auth/api-keys.js';
import type { ReconciliationReport } from '../../src/imports/batches/reconciliation.js';
import { startImportctl, type RunResult } from '../cli/run-cli.js';
import { published } from '../contract/harness.js';
import { LONG, linesOf, ndjsonOf } from './helpers.js';
import { createPipelineContext, type PipelineContext } from './setup.js';

// A batch's reconciliation (issue 13): what the file carried for its succeeded items against what
// the database holds, with exact sums, and every difference listed where it is.

const SUPPLIER = 'RECON';
const TEAM = 'Recon Team';
let ctx: PipelineContext;
let apiEnv: Record<string, string>;
let batchId: string;
let bundles: Array<{ account: { external_account_number: string }; transactions: Array<{ transaction_id: string; type: string; amount: string | number }>; statements: Array<{ statement_id: string; gross_amount?: string | number | null }>; notes: unknown[] }>;

const report = async (id: string, headers: Record<string, string> = ctx.auth) =>
  ctx.app.inject({ method: 'GET', url: `/v1/data-import/batches/${id}/reconciliation/`, headers });
const importctl = async (args: string[]): Promise<RunResult> => (await startImportctl(args, apiEnv, 60_000)).done;
const one = async <T>(text: string, params: unknown[] = []): Promise<T> => (await ctx.deps.pool.query(text, params)).rows[0] as T;
const accountId = (ext: string) => one<{ id: string }>('SELECT id FROM accounts WHERE external_account_number = $1', [ext]).then((r) => r.id);

beforeAll(async () => {
  ctx = await createPipelineContext();
  await ctx.createSupplier(SUPPLIER, { documentsRoot: 'recon' });
  await ctx.createTeam(TEAM);
  ctx.startWorkers();
  const url = await ctx.app.listen({ host: '127.0.0.1', port: 0 });
  const { key } = await createApiKey(ctx.deps.db, 'recon-cli');
  apiEnv = { IMPORT_API_URL: url, IMPORT_API_KEY: key };

  const { ndjson } = await ctx.cohort({ count: 8, supplier: SUPPLIER, prefix: 'RC', seed: 21 });
  const lines = linesOf(ndjson);
  // Line 9: a planted mistake. It fails, so the file's line is not the database's business.
  const bad = JSON.parse(lines[0]!) as { account: Record<string, unknown> };
  bad.account.external_account_number = 'RC-BAD';
  bad.account.billing_email = 'not an e-mail';
  const all = [...lines, JSON.stringify(bad)];
  bundles = lines.map((l) => JSON.parse(l) as (typeof bundles)[number]);
  ({ batch_id: batchId } = await ctx.upload(ndjsonOf(all), { supplier: SUPPLIER, team: TEAM }));
  expect(await ctx.waitForEnd(batchId, LONG)).toMatchObject({ state: 'COMPLETED_WITH_ERRORS', succeeded: 8, failed: 1 });
}, LONG);
afterAll(async () => ctx?.close());

describe('a batch as it was migrated', () => {
  it('balances: the file and the database agree, count for count and to the penny, per transaction type', async () => {
    const res = await report(batchId);
    expect(res.statusCode).toBe(200);
    const r = res.json<ReconciliationReport>();
    expect(r).toMatchObject({ batch_id: batchId, import_supplier: SUPPLIER, state: 'COMPLETED_WITH_ERRORS', balanced: true, differences: [], differences_total: 0 });
    const t = r.totals;
    expect(t.items_succeeded).toBe(8);
    expect(t.accounts).toEqual({ file: 8, database: 8 });
    // What the file carried, summed here independently with decimal.js.
    const byType = new Map<string, { count: number; amount: Decimal }>();
    for (const b of bundles) {
      for (const tx of b.transactions) {
        const e = byType.get(tx.type) ?? { count: 0, amount: new Decimal(0) };
        byType.set(tx.type, { count: e.count + 1, amount: e.amount.plus(String(tx.amount)) });
      }
    }
    expect(t.transactions).toEqual(
      [...byType.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([type, v]) => ({ type, file: { count: v.count, amount: v.amount.toFixed() }, database: { count: v.count, amount: v.amount.toFixed() } })),
    );
    // And what the database holds for these accounts, summed by PostgreSQL.
    const db = await ctx.deps.pool.query<{ type: string; n: string; total: string }>(
      `SELECT t.type, count(*) AS n, sum(t.amount)::text AS total FROM account_transactions t JOIN accounts a ON a.id = t.account_id
        JOIN import_suppliers s ON s.id = a.import_supplier_id WHERE s.code = $1 GROUP BY t.type ORDER BY t.type`,
      [SUPPLIER],
    );
    expect(t.transactions.map((x) => [x.type, x.database.count, x.database.amount])).toEqual(db.rows.map((row) => [row.type, Number(row.n), new Decimal(row.total).toFixed()]));
    const notes = bundles.reduce((n, b) => n + b.notes.length, 0);
    expect(t.notes).toEqual({ file: notes, database: notes });
    const statements = bundles.flatMap((b) => b.statements);
    const gross = statements.reduce((sum, s) => (s.gross_amount === undefined || s.gross_amount === null ? sum : sum.plus(String(s.gross_amount))), new Decimal(0)).toFixed();
    expect(t.statements).toEqual({ file: statements.length, database: statements.length, gross_amount: { file: gross, database: gross } });
    expect(t.payment_instructions).toEqual({ file: 8, database: 8 });
  });

  it('importctl batch reconcile-report: the totals table, "balanced", exit 0', async () => {
    const run = await importctl(['batch', 'reconcile-report', batchId]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.lines[0]).toBe(`batch ${batchId} (${SUPPLIER}, COMPLETED_WITH_ERRORS): 8 succeeded item(s), balanced`);
    expect(run.stdout).toMatch(/^accounts\s+8\s+8\s*$/m);
    expect(run.stdout).toMatch(/^payment instructions\s+8\s+8\s*$/m);
  }, 60_000);
});

describe('a batch whose database side was changed afterwards', () => {
  let expected: Array<Record<string, unknown>>;
  beforeAll(async () => {
    const ext = (i: number) => bundles[i]!.account.external_account_number;
    const line = (i: number) => i + 1;
    // Line 2: a transaction deleted. Line 3: an amount changed by a penny. Line 4: a statement
    // deleted. Line 5: an imported note deleted. Line 6: its payment instruction deleted.
    const gone = bundles[1]!.transactions[0]!;
    await ctx.deps.pool.query('DELETE FROM account_transactions WHERE account_id = $1 AND transaction_id = $2', [await accountId(ext(1)), gone.transaction_id]);
    const changed = bundles[2]!.transactions[1]!;
    await ctx.deps.pool.query('UPDATE account_transactions SET amount = amount + 0.01 WHERE account_id = $1 AND transaction_id = $2', [await accountId(ext(2)), changed.transaction_id]);
    const stmt = bundles[3]!.statements[0]!;
    await ctx.deps.pool.query('DELETE FROM historical_statements WHERE account_id = $1 AND statement_id = $2', [await accountId(ext(3)), stmt.statement_id]);
    const note = await one<{ id: string; body: string | null; external_id: string | null }>(
      "SELECT id, body, external_id FROM account_notes WHERE account_id = $1 AND origin = 'IMPORTED' ORDER BY id LIMIT 1",
      [await accountId(ext(4))],
    );
    await ctx.deps.pool.query('DELETE FROM account_notes WHERE id = $1', [note.id]);
    const pi = await one<{ vendor: string; reference: string }>('SELECT vendor, reference FROM payment_instructions WHERE account_id = $1', [await accountId(ext(5))]);
    await ctx.deps.pool.query('DELETE FROM payment_instructions WHERE account_id = $1', [await accountId(ext(5))]);
    const number = async (i: number) => (await one<{ number: string }>('SELECT number FROM accounts WHERE external_account_number = $1', [ext(i)])).number;
    const at = async (i: number) => ({ line: line(i), external_account_number: ext(i), service_account_number: await number(i) });
    const amount = new Decimal(String(changed.amount));
    expected = [
      { ...(await at(1)), kind: 'transaction', identifier: gone.transaction_id, problem: 'missing', file: `${gone.type} ${new Decimal(String(gone.amount)).toFixed()}`, database: null },
      { ...(await at(2)), kind: 'transaction', identifier: changed.transaction_id, problem: 'amount_differs', file: amount.toFixed(), database: amount.plus('0.01').toFixed() },
      { ...(await at(3)), kind: 'statement', identifier: stmt.statement_id, problem: 'missing', file: stmt.gross_amount === undefined || stmt.gross_amount === null ? null : new Decimal(String(stmt.gross_amount)).toFixed(), database: null },
      { ...(await at(4)), kind: 'note', identifier: note.external_id ?? note.body, problem: 'missing', file: note.external_id ?? note.body, database: null },
      { ...(await at(5)), kind: 'payment_instruction', identifier: `${pi.vendor}/${pi.reference}`, problem: 'missing', file: `${pi.vendor}/${pi.reference}`, database: null },
    ];
  });

  it('lists every difference by line and account, with the exact amounts on both sides', async () => {
    const r = (await report(batchId)).json<ReconciliationReport>();
    expect(r.balanced).toBe(false);
    expect(r.differences_total).toBe(5);
    expect(r.differences).toEqual(expected);
    const t = r.totals;
    expect(t.statements.database).toBe(t.statements.file - 1);
    expect(t.notes.database).toBe(t.notes.file - 1);
    expect(t.payment_instructions).toEqual({ file: 8, database: 7 });
    const fileCount = t.transactions.reduce((n, x) => n + x.file.count, 0);
    const dbCount = t.transactions.reduce((n, x) => n + x.database.count, 0);
    expect(dbCount).toBe(fileCount - 1);
  });

  it('as CSV (Accept: text/csv): one row per difference', async () => {
    const res = await report(batchId, { ...ctx.auth, accept: 'text/csv' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/csv; charset=utf-8');
    const rows = res.body.trim().split('\n');
    expect(rows[0]).toBe('line,external_account_number,service_account_number,kind,identifier,problem,file,database');
    expect(rows).toHaveLength(6);
    expect(rows.slice(1).map((row) => row.split(',').slice(0, 6).join(','))).toEqual(
      expected.map((d) => [d.line, d.external_account_number, d.service_account_number, d.kind, d.identifier, d.problem].join(',')),
    );
  });

  it('importctl batch reconcile-report: the differences, exit 1; --json is the service\'s report', async () => {
    const [table, json] = await Promise.all([importctl(['batch', 'reconcile-report', batchId]), importctl(['batch', 'reconcile-report', batchId, '--json'])]);
    expect(table.code, table.stderr).toBe(1);
    expect(table.lines[0]).toMatch(/5 difference\(s\)$/);
    for (const d of expected) expect(table.stdout).toMatch(new RegExp(`^${String(d.line)}\\s+${String(d.external_account_number)}\\s+\\S+\\s+${String(d.kind)}\\s+.*${String(d.problem)}`, 'm'));
    expect(json.code).toBe(1);
    expect((JSON.parse(json.stdout) as ReconciliationReport).differences).toEqual(expected);
  }, 60_000);
});

describe("the extras inside an account's own payload (decisions §1)", () => {
  it('count too: the published example account, uploaded as a batch, balances with its note, ledger transactions and statements', async () => {
    const example = published('account');
    await ctx.createSupplier(String(example.import_supplier));
    // The documents its note and statements name, under the supplier's documents root.
    await ctx.deps.documents.put('notes/1234/attachment.jpg', 'a photo');
    await ctx.deps.documents.put('EXTERNAL-1234/2019-06-01-to-2019-07-01.pdf', '%PDF-1.4 June');
    await ctx.deps.documents.put('EXTERNAL-1234/2019-07-01-to-2019-08-01.pdf', '%PDF-1.4 July');
    const { batch_id } = await ctx.upload(`${JSON.stringify({ account: example })}\n`, { supplier: String(example.import_supplier), team: TEAM });
    expect(await ctx.waitForEnd(batch_id, LONG)).toMatchObject({ state: 'COMPLETED', succeeded: 1 });
    const r = (await report(batch_id)).json<ReconciliationReport>();
    expect(r.differences).toEqual([]);
    expect(r.balanced).toBe(true);
    expect(r.totals).toMatchObject({ accounts: { file: 1, database: 1 }, notes: { file: 1, database: 1 }, statements: { file: 2, database: 2 }, payment_instructions: { file: 0, database: 0 } });
    expect(r.totals.transactions.reduce((n, t) => n + t.file.count, 0)).toBe(4);
    expect(r.totals.transactions.every((t) => t.file.count === t.database.count && t.file.amount === t.database.amount)).toBe(true);
  }, LONG);
});

describe('what cannot be reconciled', () => {
  it('a dry run wrote nothing: 400 batch_is_dry_run, as JSON and as CSV', async () => {
    const { ndjson } = await ctx.cohort({ count: 2, supplier: SUPPLIER, prefix: 'RD', seed: 4 });
    const { batch_id } = await ctx.upload(ndjson, { supplier: SUPPLIER, team: TEAM, dryRun: true });
    for (const accept of ['application/json', 'text/csv']) {
      const res = await report(batch_id, { ...ctx.auth, accept });
      expect(res.statusCode, accept).toBe(400);
      expect(res.json()).toMatchObject({ code: 'batch_is_dry_run' });
    }
  });

  it('an unknown batch, or one of a supplier the key does not reach: 404 batch_not_found', async () => {
    expect((await report('00000000-0000-4000-8000-000000000000')).json()).toMatchObject({ code: 'batch_not_found' });
    await ctx.createSupplier('RECON-OTHER');
    const other = await ctx.authHeaders({ suppliers: ['RECON-OTHER'] });
    const res = await report(batchId, other);
    expect(res.statusCode).toBe(404);
    expect(res.json()).toMatchObject({ code: 'batch_not_found' });
    expect((await report(batchId, { authorization: 'Token nonsense' })).statusCode).toBe(401);
  });
});
