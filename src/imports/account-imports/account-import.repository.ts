import { sql } from 'kysely';
import type { Executor } from '../../db/database.js';

export interface ScheduledImportRow {
  id: string;
  batch_id: string;
  request_hash: string;
}

/** The pair's newest scheduling request, if any. */
export async function latestScheduledImport(db: Executor, supplierId: string, externalAccountNumber: string): Promise<ScheduledImportRow | undefined> {
  return db
    .selectFrom('scheduled_imports')
    .select(['id', 'batch_id', 'request_hash'])
    .where('import_supplier_id', '=', supplierId)
    .where('external_account_number', '=', externalAccountNumber)
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
}

export async function insertScheduledImport(trx: Executor, row: { supplierId: string; externalAccountNumber: string; batchId: string; requestHash: string }): Promise<void> {
  await trx
    .insertInto('scheduled_imports')
    .values({ import_supplier_id: row.supplierId, external_account_number: row.externalAccountNumber, batch_id: row.batchId, request_hash: row.requestHash })
    .execute();
}

/** Serialises the scheduling of one pair until the transaction ends: two requests at once make one import, never two. */
export async function lockPair(trx: Executor, supplierId: string, externalAccountNumber: string): Promise<void> {
  await sql`SELECT pg_advisory_xact_lock(hashtextextended(${`scheduled-import:${supplierId}:${externalAccountNumber}`}, 0))`.execute(trx);
}
