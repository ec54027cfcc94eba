import { sql } from 'kysely';
import type { BatchState, Executor, ItemStage, ItemState } from '../db/database.js';
import type { BatchRow } from '../imports/batches/batch.repository.js';
import type { ItemRow } from '../pipeline/items.repository.js';

/**
 * The console's reads that no API endpoint makes: batches across suppliers, failures grouped by
 * code, completions over time, an account's items across batches. Each is bounded (a page, a fixed
 * number of buckets or groups), so a batch of 100,000 items costs one indexed scan, never a page of them.
 */

export const BATCH_STATES: readonly BatchState[] = ['UPLOADING', 'RUNNING', 'COMPLETED', 'COMPLETED_WITH_ERRORS', 'CANCELLED'];

/** A batch as the lists show it. */
export type BatchListRow = Omit<BatchRow, 'cancel_requested_at'>;

/** Newest first; a page of `limit` before the cursor (created_at, id), optionally of one supplier and state. */
export async function listBatches(
  db: Executor,
  opts: { supplier?: string; state?: BatchState; before?: { created_at: Date; id: string }; limit: number },
): Promise<BatchListRow[]> {
  const { before } = opts;
  return db
    .selectFrom('batches as b')
    .innerJoin('import_suppliers as s', 's.id', 'b.import_supplier_id')
    .innerJoin('operations_teams as t', 't.id', 'b.operations_team_id')
    .select(['b.id', 's.code as supplier_code', 't.name as team_name', 'b.dry_run', 'b.state', 'b.total_items', 'b.created_at', 'b.finished_at'])
    .$if(opts.supplier !== undefined, (q) => q.where('s.code', '=', opts.supplier!))
    .$if(opts.state !== undefined, (q) => q.where('b.state', '=', opts.state!))
    .$if(before !== undefined, (q) =>
      q.where((eb) => eb.or([eb('b.created_at', '<', before!.created_at), eb.and([eb('b.created_at', '=', before!.created_at), eb('b.id', '<', before!.id)])])),
    )
    .orderBy('b.created_at', 'desc')
    .orderBy('b.id', 'desc')
    .limit(opts.limit)
    .execute();
}

export interface FailureGroup {
  code: string;
  stage: ItemStage;
  count: number;
  /** The first failed line's first error's attr (or the envelope's own attr), as an example. */
  example_attr: string | null;
  example_line: number;
}

/** A batch's failed items grouped by their envelope's code and stage, the largest group first. */
export async function failureGroups(db: Executor, batchId: string): Promise<FailureGroup[]> {
  const rows = await sql<{ code: string | null; stage: ItemStage; count: string; example_attr: string | null; example_line: number }>`
    SELECT error->>'code' AS code, stage, count(*) AS count,
           (array_agg(coalesce(error->'errors'->0->>'attr', error->>'attr') ORDER BY line))[1] AS example_attr,
           min(line) AS example_line
    FROM batch_items
    WHERE batch_id = ${batchId}::uuid AND state = 'failed'
    GROUP BY 1, 2
    ORDER BY count(*) DESC, 1
    LIMIT 200`.execute(db);
  return rows.rows.map((r) => ({ ...r, code: r.code ?? '', count: Number(r.count) }));
}

/** Completed (succeeded) items over time since the batch started, cumulative, in at most `buckets` steps. */
export async function completionSeries(db: Executor, batchId: string, startedAt: Date, until: Date, buckets = 60): Promise<Array<{ at_s: number; completed: number }>> {
  const spanS = Math.max(1, (until.getTime() - startedAt.getTime()) / 1000);
  const width = Math.max(1, Math.ceil(spanS / buckets));
  const rows = await sql<{ bucket: number; n: string }>`
    SELECT floor(extract(epoch FROM updated_at - ${startedAt}::timestamptz) / ${width})::int AS bucket, count(*) AS n
    FROM batch_items
    WHERE batch_id = ${batchId}::uuid AND state = 'succeeded'
    GROUP BY 1 ORDER BY 1`.execute(db);
  const out: Array<{ at_s: number; completed: number }> = [{ at_s: 0, completed: 0 }];
  let total = 0;
  for (const r of rows.rows) {
    total += Number(r.n);
    out.push({ at_s: Math.min(spanS, (Math.max(0, r.bucket) + 1) * width), completed: total });
  }
  return out;
}

const likePrefix = (s: string): string => `${s.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/** A page of a batch's items after `afterLine`, optionally in one state and whose external number starts with `search`. */
export async function searchItems(db: Executor, batchId: string, opts: { search?: string; states?: readonly ItemState[]; afterLine: number; limit: number }): Promise<ItemRow[]> {
  return db
    .selectFrom('batch_items')
    .select(['line', 'external_account_number', 'stage', 'state', 'attempts', 'service_account_number', 'error', 'updated_at'])
    .where('batch_id', '=', batchId)
    .$if(opts.states !== undefined, (q) => q.where('state', 'in', opts.states!))
    .$if(opts.search !== undefined && opts.search !== '', (q) => q.where(sql<boolean>`external_account_number LIKE ${likePrefix(opts.search!)}`))
    .where('line', '>', opts.afterLine)
    .orderBy('line')
    .limit(opts.limit)
    .execute();
}

export interface AccountItemRow {
  batch_id: string;
  batch_created_at: Date;
  line: number;
  stage: ItemStage;
  state: ItemState;
  service_account_number: string | null;
  error: unknown;
  updated_at: Date;
}

/** Every item of this supplier's account across its batches, newest batch first (at most 200). */
export async function accountItems(db: Executor, supplierCode: string, externalAccountNumber: string): Promise<AccountItemRow[]> {
  return db
    .selectFrom('batch_items as i')
    .innerJoin('batches as b', 'b.id', 'i.batch_id')
    .innerJoin('import_suppliers as s', 's.id', 'b.import_supplier_id')
    .select(['i.batch_id', 'b.created_at as batch_created_at', 'i.line', 'i.stage', 'i.state', 'i.service_account_number', 'i.error', 'i.updated_at'])
    .where('i.external_account_number', '=', externalAccountNumber)
    .where('s.code', '=', supplierCode)
    .orderBy('b.created_at', 'desc')
    .orderBy('i.line')
    .limit(200)
    .execute();
}

/** Batches per supplier and state, for the suppliers page. */
export async function batchCountsBySupplier(db: Executor): Promise<Map<string, Partial<Record<BatchState, number>>>> {
  const rows = await db
    .selectFrom('batches as b')
    .innerJoin('import_suppliers as s', 's.id', 'b.import_supplier_id')
    .select(['s.code', 'b.state', (eb) => eb.fn.countAll<string>().as('n')])
    .groupBy(['s.code', 'b.state'])
    .execute();
  const out = new Map<string, Partial<Record<BatchState, number>>>();
  for (const r of rows) out.set(r.code, { ...out.get(r.code), [r.state]: Number(r.n) });
  return out;
}

export interface RegistrationFunnel {
  /** Meter points per registration status, the most common first. */
  statuses: Array<{ status: string; count: number }>;
  total: number;
  /** The meter points whose registration failed (unable, rejected, objected), with the reason; at most 200. */
  problems: Array<{ external_account_number: string; mpxn: string; status: string; error: string | null; updated_at: Date | null }>;
}

/** Where the meter points of a batch's created accounts, or of a supplier's accounts, stand (decisions.md §8). */
export async function registrationFunnel(db: Executor, scope: { batchId: string } | { supplierId: string }): Promise<RegistrationFunnel> {
  const accounts =
    'batchId' in scope
      ? sql`SELECT a.id, a.external_account_number FROM batch_items i JOIN accounts a ON a.number = i.service_account_number AND a.external_account_number = i.external_account_number
            WHERE i.batch_id = ${scope.batchId}::uuid AND i.state = 'succeeded'`
      : sql`SELECT a.id, a.external_account_number FROM accounts a WHERE a.import_supplier_id = ${scope.supplierId}::bigint`;
  const { rows } = await sql<{ status: string; count: string }>`
    WITH acc AS (${accounts})
    SELECT m.registration_status AS status, count(*) AS count FROM acc JOIN meter_points m ON m.account_id = acc.id
    GROUP BY 1 ORDER BY 2 DESC, 1`.execute(db);
  const { rows: problems } = await sql<RegistrationFunnel['problems'][number]>`
    WITH acc AS (${accounts})
    SELECT acc.external_account_number, m.identifier AS mpxn, m.registration_status AS status, m.registration_error AS error, m.registration_updated_at AS updated_at
    FROM acc JOIN meter_points m ON m.account_id = acc.id
    WHERE m.registration_status IN ('UNABLE_TO_REGISTER', 'REGISTRATION_REJECTED', 'REGISTRATION_OBJECTED')
    ORDER BY m.registration_updated_at DESC NULLS LAST, m.id LIMIT 200`.execute(db);
  const statuses = rows.map((r) => ({ status: r.status, count: Number(r.count) }));
  return { statuses, total: statuses.reduce((n, s) => n + s.count, 0), problems };
}
