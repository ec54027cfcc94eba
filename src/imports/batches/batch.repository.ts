import type { BatchState, Executor } from '../../db/database.js';

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


/**
 * A batch of one scheduled account (the v2 door), RUNNING from the start: its item is written by
 * the caller in the same transaction. Answers its id.
 */
export async function insertScheduledBatch(
  trx: Executor,
  b: { id: string; supplierId: string; teamId: string; dryRun: boolean; windowStart: Date; windowEnd: Date },
): Promise<void> {
  await trx
    .insertInto('batches')
    .values({
      id: b.id,
      import_supplier_id: b.supplierId,
      operations_team_id: b.teamId,
      dry_run: b.dryRun,
      kind: 'SCHEDULED',
      state: 'RUNNING',
      total_items: 1,
      schedule_window_start: b.windowStart,
      schedule_window_end: b.windowEnd,
    })
    .execute();
}
