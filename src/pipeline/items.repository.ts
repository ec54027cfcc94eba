import { sql } from 'kysely';
import type { BatchKind, BatchState, Executor, ItemStage, ItemState } from '../db/database.js';
import { SUPPLIER_COLUMNS_JOINED, type SupplierColumnsJoined } from '../imports/suppliers/supplier.repository.js';
import { insertAccountFailedDeliveries, insertBatchFinishedDeliveries } from '../webhooks/outbox.js';
import type { Stage, StageJobData } from './routing.js';

// Every statement on batch_items lives here: the pipeline owns where each item stands. The set
// forms take arrays (unnest), so a set of items costs one statement whatever its size.

export interface NewItem {
  line: number;
  external_account_number: string | null;
  /** The bundle as JSON text, or null for a line that was not a bundle. */
  bundleJson: string | null;
  stage: ItemStage;
  state: ItemState;
  error: unknown;
}

export async function insertItems(db: Executor, batchId: string, items: readonly NewItem[]): Promise<void> {
  if (items.length === 0) return;
  await db
    .insertInto('batch_items')
    .values(
      items.map((i) => ({
        batch_id: batchId,
        line: i.line,
        external_account_number: i.external_account_number,
        bundle: i.bundleJson,
        stage: i.stage,
        state: i.state,
        error: i.error === null ? null : JSON.stringify(i.error),
      })),
    )
    .execute();
}

/** Item counts by stage and state: the batch's progress, durable in PostgreSQL. */
export async function countItems(db: Executor, batchId: string): Promise<Array<{ stage: ItemStage; state: ItemState; n: number }>> {
  const rows = await db
    .selectFrom('batch_items')
    .select(['stage', 'state', (eb) => eb.fn.countAll<string>().as('n')])
    .where('batch_id', '=', batchId)
    .groupBy(['stage', 'state'])
    .execute();
  return rows.map((r) => ({ stage: r.stage, state: r.state, n: Number(r.n) }));
}

export const OPEN_STATES: readonly ItemState[] = ['waiting', 'active', 'delayed'];

/**
 * Ends a RUNNING batch once no item is waiting, active or delayed. Idempotent: only the first
 * caller to see it finished moves it; the state says whether anything failed or it was cancelled.
 */
export async function finishIfDone(db: Executor, batchId: string, now: Date): Promise<boolean> {
  return (await finishBatch(db, batchId, now)) !== null;
}

/** A batch that has just been closed. */
export interface FinishedBatch {
  supplier_code: string;
  state: BatchState;
  created_at: Date;
  finished_at: Date;
}

/**
 * finishIfDone, answering the batch it closed (null when it was not done, or closed already). The
 * batch's batch.finished webhook deliveries are written by the same statement (src/webhooks/outbox.ts).
 */
export async function finishBatch(db: Executor, batchId: string, now: Date): Promise<FinishedBatch | null> {
  const { rows } = await sql<{ supplier_code: string | null; state: BatchState; created_at: Date; finished_at: Date | null }>`
    WITH finished AS (
      UPDATE batches SET
        state = CASE
          WHEN cancel_requested_at IS NOT NULL THEN 'CANCELLED'
          WHEN EXISTS (SELECT 1 FROM batch_items WHERE batch_id = ${batchId} AND state = 'failed') THEN 'COMPLETED_WITH_ERRORS'
          ELSE 'COMPLETED' END,
        finished_at = ${now}
      WHERE id = ${batchId} AND state = 'RUNNING'
        AND NOT EXISTS (SELECT 1 FROM batch_items WHERE batch_id = ${batchId} AND state = ANY (${[...OPEN_STATES]}::text[]))
      RETURNING id, import_supplier_id, dry_run, state, total_items, created_at, finished_at
    ), outbox AS (${insertBatchFinishedDeliveries('finished')})
    SELECT (SELECT s.code FROM import_suppliers s WHERE s.id = f.import_supplier_id) AS supplier_code, f.state, f.created_at, f.finished_at
    FROM finished f`.execute(db);
  const row = rows[0];
  return row ? { supplier_code: row.supplier_code ?? '', state: row.state, created_at: row.created_at, finished_at: row.finished_at ?? now } : null;
}

/** Lines of the items still to run, from `afterLine`, for (re-)enqueueing in pages. */
export async function openItems(
  db: Executor,
  batchId: string,
  afterLine: number,
  limit: number,
): Promise<Array<{ line: number; stage: ItemStage; round: number }>> {
  return db
    .selectFrom('batch_items')
    .select(['line', 'stage', 'round'])
    .where('batch_id', '=', batchId)
    .where('state', 'in', OPEN_STATES)
    .where('line', '>', afterLine)
    .orderBy('line')
    .limit(limit)
    .execute();
}

/** An item as the batch endpoints show it, with when it last changed. */
export interface ItemRow {
  line: number;
  external_account_number: string | null;
  stage: ItemStage;
  state: ItemState;
  attempts: number;
  service_account_number: string | null;
  error: unknown;
  updated_at: Date;
}

/** One page of a batch's items in line order, after `afterLine`, optionally only in `states`. */
export async function listItems(db: Executor, batchId: string, states: readonly ItemState[] | undefined, afterLine: number, limit: number): Promise<ItemRow[]> {
  return db
    .selectFrom('batch_items')
    .select(['line', 'external_account_number', 'stage', 'state', 'attempts', 'service_account_number', 'error', 'updated_at'])
    .where('batch_id', '=', batchId)
    .$if(states !== undefined, (q) => q.where('state', 'in', states!))
    .where('line', '>', afterLine)
    .orderBy('line')
    .limit(limit)
    .execute();
}

/** A succeeded item with its bundle and the id of the account it holds (null when that account is not there). */
export interface SucceededBundle {
  line: number;
  external_account_number: string | null;
  service_account_number: string | null;
  account_id: string | null;
  bundle: unknown;
}

/** One page of a batch's succeeded items in line order, after `afterLine`, each with its bundle and account (reconciliation). */
export async function listSucceededBundles(db: Executor, batchId: string, afterLine: number, limit: number): Promise<SucceededBundle[]> {
  return db
    .selectFrom('batch_items as i')
    .leftJoin('accounts as a', (j) => j.onRef('a.number', '=', 'i.service_account_number').onRef('a.external_account_number', '=', 'i.external_account_number'))
    .select(['i.line', 'i.external_account_number', 'i.service_account_number', 'a.id as account_id', 'i.bundle'])
    .where('i.batch_id', '=', batchId)
    .where('i.state', '=', 'succeeded')
    .where('i.line', '>', afterLine)
    .orderBy('i.line')
    .limit(limit)
    .execute();
}

/**
 * Sends failed items back to where they failed, in a new round (a fresh job id); parse failures
 * cannot be retried. Only the given external account numbers, and only those that failed with the
 * given code, when given. Answers how many.
 */
export async function requeueFailed(db: Executor, batchId: string, externalAccountNumbers?: readonly string[], code?: string): Promise<number> {
  const rows = await db
    .updateTable('batch_items')
    .set({ state: 'waiting', round: sql`round + 1`, attempts: 0, error: null, updated_at: sql`now()` })
    .where('batch_id', '=', batchId)
    .where('state', '=', 'failed')
    .where('stage', '!=', 'parse')
    // = ANY(array): one parameter however many numbers (a list of 100,000 would pass PostgreSQL's 65,535).
    .$if(externalAccountNumbers !== undefined, (q) => q.where(sql<boolean>`external_account_number = any(${[...externalAccountNumbers!]}::text[])`))
    // Only the items whose envelope has this code (the console's "retry one code").
    .$if(code !== undefined, (q) => q.where(sql<boolean>`error->>'code' = ${code!}`))
    .returning(['line'])
    .execute();
  return rows.length;
}

/** Cancels the items not yet started (waiting or delayed); active ones finish their step. */
export async function cancelPending(db: Executor, batchId: string): Promise<void> {
  await db
    .updateTable('batch_items')
    .set({ state: 'cancelled', updated_at: sql`now()` })
    .where('batch_id', '=', batchId)
    .where('state', 'in', ['waiting', 'delayed'])
    .execute();
}

/** What a step needs of its item, its batch, supplier and team: read by the claim in one statement. */
export interface ClaimedItem extends SupplierColumnsJoined {
  batch_id: string;
  line: number;
  round: number;
  stage: ItemStage;
  state: ItemState;
  bundle: unknown;
  external_account_number: string | null;
  service_account_number: string | null;
  dry_run: boolean;
  kind: BatchKind;
  schedule_window_start: Date | null;
  schedule_window_end: Date | null;
  cancel_requested_at: Date | null;
  team_id: string;
  team_name: string;
  team_created_at: Date;
}

const ITEM_COLUMNS = [
  'i.batch_id',
  'i.line',
  'i.round',
  'i.stage',
  'i.state',
  'i.bundle',
  'i.external_account_number',
  'i.service_account_number',
  'b.dry_run',
  'b.kind',
  'b.schedule_window_start',
  'b.schedule_window_end',
  'b.cancel_requested_at',
  ...SUPPLIER_COLUMNS_JOINED,
  't.id as team_id',
  't.name as team_name',
  't.created_at as team_created_at',
] as const;

/** The item stages a queue may claim: a dry run's stage, process and extras all run in the process queue. */
const claimableWhere = (stage: Stage) => {
  if (stage === 'validate') return sql<boolean>`i.stage = 'validate'`;
  if (stage === 'process') return sql<boolean>`((NOT b.dry_run AND i.stage = 'process') OR (b.dry_run AND i.stage IN ('stage', 'process', 'extras')))`;
  return sql<boolean>`(NOT b.dry_run AND i.stage = ${stage})`;
};

const unnestJobs = (jobs: readonly StageJobData[], extra: { attempts?: readonly number[] } = {}) =>
  sql`unnest(${jobs.map((j) => j.batchId)}::uuid[], ${jobs.map((j) => j.line)}::int[], ${jobs.map((j) => j.round)}::int[], ${extra.attempts ?? jobs.map(() => 0)}::int[])`;

/**
 * The common path in one statement for a whole set: marks the items active and returns what their
 * steps need. An item comes back only when its job may run it: open, in this job's round, at a
 * stage this queue runs, in a batch not being cancelled. The others are settled one by one.
 */
export async function claimItems(db: Executor, stage: Stage, jobs: ReadonlyArray<StageJobData & { attempt: number }>): Promise<ClaimedItem[]> {
  if (jobs.length === 0) return [];
  const { rows } = await sql<ClaimedItem>`
    UPDATE batch_items i SET state = 'active', attempts = v.attempt, updated_at = now()
    FROM ${unnestJobs(jobs, { attempts: jobs.map((j) => j.attempt) })} AS v(batch_id, line, round, attempt),
         batches b
         JOIN import_suppliers s ON s.id = b.import_supplier_id
         JOIN operations_teams t ON t.id = b.operations_team_id
    WHERE i.batch_id = v.batch_id AND i.line = v.line AND i.round = v.round
      AND b.id = i.batch_id
      AND i.state IN ('waiting', 'delayed', 'active')
      AND b.cancel_requested_at IS NULL
      AND ${claimableWhere(stage)}
    RETURNING ${sql.join(ITEM_COLUMNS.map((c) => sql.raw(c)))}`.execute(db);
  return rows;
}

/** Marks items delayed (waiting for a permit or their window), where their job may still run them; answers the ones marked. */
export async function markDelayed(db: Executor, stage: Stage, jobs: readonly StageJobData[]): Promise<Set<string>> {
  if (jobs.length === 0) return new Set();
  const { rows } = await sql<{ batch_id: string; line: number; round: number }>`
    UPDATE batch_items i SET state = 'delayed', updated_at = now()
    FROM ${unnestJobs(jobs)} AS v(batch_id, line, round, attempt), batches b
    WHERE i.batch_id = v.batch_id AND i.line = v.line AND i.round = v.round
      AND b.id = i.batch_id
      AND i.state IN ('waiting', 'delayed', 'active')
      AND b.cancel_requested_at IS NULL
      AND ${claimableWhere(stage)}
    RETURNING i.batch_id, i.line, i.round`.execute(db);
  return new Set(rows.map((r) => itemKey(r)));
}

/**
 * An item in one round: a set may hold two jobs of the same item (a lingering retry of an earlier
 * round beside the current one), which must not be taken for each other.
 */
export const itemKey = (i: { batch_id?: string; batchId?: string; line: number; round: number }): string => `${i.batch_id ?? i.batchId}/${i.line}/${i.round}`;

/** An item as its job found it when it could not claim it. */
export interface UnclaimedItem {
  round: number;
  stage: ItemStage;
  state: ItemState;
  dry_run: boolean;
  cancel_requested_at: Date | null;
}

export async function loadItem(db: Executor, job: StageJobData): Promise<UnclaimedItem | undefined> {
  return db
    .selectFrom('batch_items as i')
    .innerJoin('batches as b', 'b.id', 'i.batch_id')
    .select(['i.round', 'i.stage', 'i.state', 'b.dry_run', 'b.cancel_requested_at'])
    .where('i.batch_id', '=', job.batchId)
    .where('i.line', '=', job.line)
    .executeTakeFirst();
}

/** What a step did to its item. */
export type ItemRecord =
  /** Sent on to `next` (waiting, or cancelled when the batch's cancel arrived meanwhile), or finished when `next` is null. */
  | { kind: 'advance'; next: Stage | null; account: string | null }
  /** Failed at `at` with the envelope the REST endpoint would have answered. */
  | { kind: 'failed'; at: ItemStage; error: unknown };

/**
 * Records the steps of a set in one statement, each only while its item is still where its job
 * claimed it (that stage, active): progress that another run of the job recorded is never
 * overwritten. Answers each item's new state by itemKey (absent: not recorded).
 */
export async function recordItems(
  ex: Executor,
  records: ReadonlyArray<{ item: Pick<ClaimedItem, 'batch_id' | 'line' | 'round' | 'stage'>; record: ItemRecord }>,
): Promise<Map<string, ItemState>> {
  if (records.length === 0) return new Map();
  const col = <T>(f: (r: (typeof records)[number]) => T) => records.map(f);
  // The account.failed webhook deliveries of the items recorded failed are written by the same statement (src/webhooks/outbox.ts).
  const { rows } = await sql<{ batch_id: string; line: number; round: number; state: ItemState }>`
    WITH recorded AS (
    UPDATE batch_items i SET
      stage = CASE WHEN v.kind = 'failed' THEN v.at WHEN v.next IS NOT NULL THEN v.next ELSE i.stage END,
      state = CASE
        WHEN v.kind = 'failed' THEN 'failed'
        WHEN v.next IS NULL THEN 'succeeded'
        -- A cancel that arrived while this step ran stops the item here instead of sending it on.
        WHEN b.cancel_requested_at IS NULL THEN 'waiting'
        ELSE 'cancelled' END,
      service_account_number = CASE
        WHEN v.kind = 'advance' AND v.next IS NULL AND b.dry_run THEN NULL
        ELSE COALESCE(v.account, i.service_account_number) END,
      error = v.error,
      updated_at = now()
    FROM unnest(
        ${col((r) => r.item.batch_id)}::uuid[], ${col((r) => r.item.line)}::int[], ${col((r) => r.item.round)}::int[],
        ${col((r) => r.item.stage)}::text[], ${col((r) => r.record.kind)}::text[],
        ${col((r) => (r.record.kind === 'advance' ? r.record.next : null))}::text[],
        ${col((r) => (r.record.kind === 'failed' ? r.record.at : null))}::text[],
        ${col((r) => (r.record.kind === 'advance' ? r.record.account : null))}::text[],
        ${col((r) => (r.record.kind === 'failed' ? JSON.stringify(r.record.error) : null))}::jsonb[]
      ) AS v(batch_id, line, round, claimed, kind, next, at, account, error),
      batches b
    WHERE i.batch_id = v.batch_id AND i.line = v.line AND i.round = v.round
      AND i.stage = v.claimed AND i.state = 'active'
      AND b.id = i.batch_id
    RETURNING i.batch_id, i.line, i.round, i.state, i.stage, i.external_account_number, i.error, b.import_supplier_id, b.dry_run
    ), outbox AS (${insertAccountFailedDeliveries('recorded')})
    SELECT batch_id, line, round, state FROM recorded`.execute(ex);
  return new Map(rows.map((r) => [itemKey(r), r.state]));
}

/**
 * Sets one item of this job's round, with `claimedAt` only while it is still where this job
 * claimed it. For the rare paths (a transient failure, an unclaimed job's cancel).
 */
export async function setItem(ex: Executor, job: StageJobData, values: { state: ItemState; stage?: ItemStage; error?: unknown }, claimedAt?: ItemStage): Promise<void> {
  await ex
    .updateTable('batch_items')
    .set({
      state: values.state,
      ...(values.stage ? { stage: values.stage } : {}),
      ...(values.error !== undefined ? { error: JSON.stringify(values.error) } : {}),
      updated_at: sql`now()`,
    })
    .where('batch_id', '=', job.batchId)
    .where('line', '=', job.line)
    .where('round', '=', job.round)
    .$if(claimedAt !== undefined, (q) => q.where('stage', '=', claimedAt!).where('state', '=', 'active'))
    .execute();
}

/** One item with its batch's dates and dry-run flag: what a scheduled import's status is read from. */
export async function findItem(
  db: Executor,
  batchId: string,
  line: number,
): Promise<(ItemRow & { round: number; dry_run: boolean; batch_created_at: Date }) | undefined> {
  return db
    .selectFrom('batch_items as i')
    .innerJoin('batches as b', 'b.id', 'i.batch_id')
    .select([
      'i.line',
      'i.external_account_number',
      'i.stage',
      'i.state',
      'i.attempts',
      'i.round',
      'i.service_account_number',
      'i.error',
      'i.updated_at',
      'b.dry_run',
      'b.created_at as batch_created_at',
    ])
    .where('i.batch_id', '=', batchId)
    .where('i.line', '=', line)
    .executeTakeFirst();
}
