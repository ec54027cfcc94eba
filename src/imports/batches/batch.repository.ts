import { sql } from 'kysely';
import type { BatchState, Executor, ItemStage, ItemState } from '../../db/database.js';

export interface BatchRow {
  id: string;
  supplier_code: string;
  team_name: string;
  dry_run: boolean;
  state: BatchState;
  total_items: number;
  cancel_requested_at: Date | null;
  created_at: Date;
  finished_at: Date | null;
}

export async function findBatch(db: Executor, id: string): Promise<BatchRow | undefined> {
  return db
    .selectFrom('batches as b')
    .innerJoin('import_suppliers as s', 's.id', 'b.import_supplier_id')
    .innerJoin('operations_teams as t', 't.id', 'b.operations_team_id')
    .select(['b.id', 's.code as supplier_code', 't.name as team_name', 'b.dry_run', 'b.state', 'b.total_items', 'b.cancel_requested_at', 'b.created_at', 'b.finished_at'])
    .where('b.id', '=', id)
    .executeTakeFirst();
}

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

const OPEN_STATES: readonly ItemState[] = ['waiting', 'active', 'delayed'];

/**
 * Ends a RUNNING batch once no item is waiting, active or delayed. Idempotent: only the first
 * caller to see it finished moves it; the state says whether anything failed or it was cancelled.
 */
export async function finishIfDone(db: Executor, batchId: string, now: Date): Promise<boolean> {
  const res = await db
    .updateTable('batches')
    .set({
      state: sql<BatchState>`CASE
        WHEN cancel_requested_at IS NOT NULL THEN 'CANCELLED'
        WHEN EXISTS (SELECT 1 FROM batch_items WHERE batch_id = ${batchId} AND state = 'failed') THEN 'COMPLETED_WITH_ERRORS'
        ELSE 'COMPLETED' END`,
      finished_at: now,
    })
    .where('id', '=', batchId)
    .where('state', '=', 'RUNNING')
    .where((eb) =>
      eb.not(eb.exists(eb.selectFrom('batch_items').select('line').where('batch_id', '=', batchId).where('state', 'in', OPEN_STATES))),
    )
    .executeTakeFirst();
  return Number(res.numUpdatedRows) > 0;
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
