import type { LightMyRequestResponse } from 'fastify';
import type { SupplierStatus } from '../../src/db/database.js';
import type { StageCounts } from '../../src/imports/batches/batch.service.js';
import type { Stage } from '../../src/queue/contract.js';
import { seededRandom } from '../../src/vendors/sandbox-vendor.js';
import { pollUntil } from '../helpers/poll.js';
import type { PipelineContext } from './setup.js';

export type { StageCounts };
/** What the status endpoint answers (the parts these tests read). */
export type BatchStatusBody = Record<string, unknown> & {
  batch_id: string;
  state: string;
  total_items: number;
  succeeded: number;
  failed: number;
  stages: Record<Stage, StageCounts>;
};

export interface ErrorItem {
  code: string;
  attr: string | null;
  detail: string;
}
export interface BatchItem {
  line: number;
  external_account_number: string | null;
  stage: string;
  state: string;
  attempts: number;
  service_account_number: string | null;
  error: (Record<string, unknown> & { code: string; errors?: ErrorItem[] }) | null;
}

/**
 * PostgreSQL pool size for these files' contexts: test files run in parallel against one server
 * (max_connections 100 by default), so each takes few connections; jobs queue for them briefly.
 */
export const SMALL_POOL = 8;

/**
 * Deadline for waiting on a small batch. Alone these batches end within seconds; the margin is for a
 * machine shared with other suites (a deadline only matters when something is really stuck).
 */
export const LONG = 100_000;

export const STAGE_NAMES: readonly Stage[] = ['validate', 'stage', 'process', 'extras'];

/** The sandbox vendor's seeded generator: tests draw "random" lines, and replay the vendor's draws, with it. */
export { seededRandom };

/** Picks `n` distinct elements of `from`, deterministically for a seed. */
export function pickSeeded<T>(from: readonly T[], n: number, seed: number): T[] {
  const rnd = seededRandom(seed);
  const pool = [...from];
  const out: T[] = [];
  while (out.length < n && pool.length > 0) out.push(pool.splice(Math.floor(rnd() * pool.length), 1)[0]!);
  return out;
}

/** The NDJSON lines of a cohort (without the trailing empty line) and back. */
export const linesOf = (ndjson: string): string[] => ndjson.split('\n').filter((l) => l !== '');
export const ndjsonOf = (lines: readonly string[]): string => lines.join('\n') + '\n';

export const api = (ctx: PipelineContext) => ({
  get: (url: string, headers: Record<string, string> = {}): Promise<LightMyRequestResponse> =>
    ctx.app.inject({ method: 'GET', url, headers: { ...ctx.auth, ...headers } }),
  post: (url: string, body?: unknown): Promise<LightMyRequestResponse> =>
    ctx.app.inject({
      method: 'POST',
      url,
      headers: { ...ctx.auth, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
    }),
  /** A raw upload: answers whatever the service answers (ctx.upload throws on anything but 202). */
  upload: (ndjson: string, query: string, headers: Record<string, string> = {}): Promise<LightMyRequestResponse> =>
    ctx.app.inject({
      method: 'POST',
      url: `/v1/data-import/batches/?${query}`,
      payload: ndjson,
      headers: { ...ctx.auth, 'content-type': 'application/x-ndjson', ...headers },
    }),
});

export const batchStatus = async (ctx: PipelineContext, batchId: string): Promise<BatchStatusBody> =>
  (await ctx.status(batchId)) as unknown as BatchStatusBody;

export const batchItems = async (ctx: PipelineContext, batchId: string, state?: string): Promise<BatchItem[]> =>
  (await ctx.items(batchId, state)) as unknown as BatchItem[];

/** Polls the batch status until `pred` holds (with a deadline), returning that status. */
export function waitForStatus(
  ctx: PipelineContext,
  batchId: string,
  pred: (s: BatchStatusBody) => boolean,
  what: string,
  timeoutMs = LONG,
): Promise<BatchStatusBody> {
  return pollUntil(
    async () => {
      const s = await batchStatus(ctx, batchId);
      return pred(s) ? s : null;
    },
    { timeoutMs, intervalMs: 50, what },
  );
}

/** Waits for the batch to end, keeping every status seen on the way (for invariants on in-flight counts). */
export async function waitForEndSampling(ctx: PipelineContext, batchId: string, timeoutMs = 60_000): Promise<{ end: BatchStatusBody; samples: BatchStatusBody[] }> {
  const samples: BatchStatusBody[] = [];
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const s = await batchStatus(ctx, batchId);
    samples.push(s);
    if (s.state !== 'RUNNING' && s.state !== 'UPLOADING') return { end: s, samples };
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for batch ${batchId} to end (last: ${JSON.stringify(s)})`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export const totalOf = (c: StageCounts): number => c.waiting + c.active + c.delayed + c.completed + c.failed;

export async function setSupplierStatus(ctx: PipelineContext, code: string, status: SupplierStatus): Promise<void> {
  await ctx.deps.db.updateTable('import_suppliers').set({ status }).where('code', '=', code).execute();
}

/** One number from a SQL query answering a single `n` column. */
export async function countSql(ctx: PipelineContext, text: string, params: unknown[] = []): Promise<number> {
  const r = await ctx.deps.pool.query<{ n: string }>(text, params);
  return Number(r.rows[0]!.n);
}

/** Row counts of the tables an import writes to. */
export const IMPORT_TABLES = [
  'accounts',
  'account_import_processes',
  'meter_point_registrations',
  'customers',
  'supply_addresses',
  'meter_points',
  'meters',
  'agreements',
  'account_metadata',
  'account_notes',
  'account_transactions',
  'transaction_line_items',
  'transaction_tax_items',
  'historical_statements',
  'payment_instructions',
  'customer_emails',
] as const;

export async function importTableCounts(ctx: PipelineContext): Promise<Record<string, number>> {
  const all = await ctx.tableCounts();
  return Object.fromEntries(IMPORT_TABLES.map((t) => [t, all[t] ?? -1]));
}

/** What one created account holds, by external account number. */
export interface AccountHoldings {
  id: string;
  number: string;
  imported_notes: number;
  moved_notes: number;
  pinned_moved_notes: number;
  transactions: number;
  statements: number;
  payment_instructions: number;
}

export async function accountHoldings(ctx: PipelineContext, supplier: string): Promise<Map<string, AccountHoldings[]>> {
  const r = await ctx.deps.pool.query<{
    ext: string;
    id: string;
    number: string;
    imported_notes: string;
    moved_notes: string;
    pinned_moved_notes: string;
    transactions: string;
    statements: string;
    payment_instructions: string;
  }>(
    `SELECT a.external_account_number AS ext, a.id::text AS id, a.number,
       (SELECT count(*) FROM account_notes n WHERE n.account_id = a.id AND n.origin = 'IMPORTED')::text AS imported_notes,
       (SELECT count(*) FROM account_notes n WHERE n.account_id = a.id AND n.origin = 'TRANSACTIONS_MOVED')::text AS moved_notes,
       (SELECT count(*) FROM account_notes n WHERE n.account_id = a.id AND n.origin = 'TRANSACTIONS_MOVED' AND n.is_pinned)::text AS pinned_moved_notes,
       (SELECT count(*) FROM account_transactions t WHERE t.account_id = a.id)::text AS transactions,
       (SELECT count(*) FROM historical_statements s WHERE s.account_id = a.id)::text AS statements,
       (SELECT count(*) FROM payment_instructions p WHERE p.account_id = a.id)::text AS payment_instructions
     FROM accounts a JOIN import_suppliers s ON s.id = a.import_supplier_id
     WHERE s.code = $1`,
    [supplier],
  );
  const out = new Map<string, AccountHoldings[]>();
  for (const row of r.rows) {
    const h: AccountHoldings = {
      id: row.id,
      number: row.number,
      imported_notes: Number(row.imported_notes),
      moved_notes: Number(row.moved_notes),
      pinned_moved_notes: Number(row.pinned_moved_notes),
      transactions: Number(row.transactions),
      statements: Number(row.statements),
      payment_instructions: Number(row.payment_instructions),
    };
    out.set(row.ext, [...(out.get(row.ext) ?? []), h]);
  }
  return out;
}

/** Parses RFC 4180 CSV (quoted fields, doubled quotes, CRLF or LF). */
export function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"') {
        if (text[i + 1] === '"') {
          field += '"';
          i++;
        } else quoted = false;
      } else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      row.push(field);
      field = '';
    } else if (c === '\n' || c === '\r') {
      if (c === '\r' && text[i + 1] === '\n') i++;
      row.push(field);
      rows.push(row);
      row = [];
      field = '';
    } else field += c;
  }
  if (field !== '' || row.length > 0) {
    row.push(field);
    rows.push(row);
  }
  return rows;
}

/** The CSV as objects keyed by the header row. */
export function csvRecords(text: string): { header: string[]; records: Array<Record<string, string>> } {
  const [header = [], ...rows] = parseCsv(text);
  return { header, records: rows.map((r) => Object.fromEntries(header.map((h, i) => [h, r[i] ?? '']))) };
}
