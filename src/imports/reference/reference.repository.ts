import { sql } from 'kysely';
import type { Executor } from '../../db/database.js';
import type { ReferenceKind } from './reference.seed.js';

export interface ReferenceRow {
  kind: ReferenceKind;
  value: string;
  source: string;
  retired_at: Date | null;
}

/** The version every change bumps (a statement trigger): readers reload when it moved. */
export async function referenceVersion(db: Executor): Promise<string> {
  const row = await db.selectFrom('reference_versions').select('version').executeTakeFirstOrThrow();
  return String(row.version);
}

/** Values in use (not retired), by kind. */
export async function activeReferenceValues(db: Executor): Promise<Array<{ kind: string; value: string }>> {
  return db.selectFrom('reference_values').select(['kind', 'value']).where('retired_at', 'is', null).execute();
}

export async function listReferenceValues(db: Executor, kind?: ReferenceKind): Promise<ReferenceRow[]> {
  const rows = await db
    .selectFrom('reference_values')
    .select(['kind', 'value', 'source', 'retired_at'])
    .$if(kind !== undefined, (q) => q.where('kind', '=', kind!))
    .orderBy('kind')
    .orderBy('value')
    .execute();
  return rows as ReferenceRow[];
}

/** Adds a value, or takes a retired one back into use; false when it was in use already. */
export async function addReferenceValue(db: Executor, kind: ReferenceKind, value: string): Promise<boolean> {
  const row = await db
    .insertInto('reference_values')
    .values({ kind, value, source: 'OPERATOR' })
    .onConflict((oc) => oc.columns(['kind', 'value']).doUpdateSet({ retired_at: null }).where('reference_values.retired_at', 'is not', null))
    .returning('value')
    .executeTakeFirst();
  return row !== undefined;
}

/** Retires a value in use: new requests may no longer use it; what was imported keeps it. False when there was none in use. */
export async function retireReferenceValue(db: Executor, kind: ReferenceKind, value: string): Promise<boolean> {
  const row = await db
    .updateTable('reference_values')
    .set({ retired_at: sql`now()` })
    .where('kind', '=', kind)
    .where('value', '=', value)
    .where('retired_at', 'is', null)
    .returning('value')
    .executeTakeFirst();
  return row !== undefined;
}
