import { sql, type ExpressionBuilder, type Kysely } from 'kysely';
import type { AccountImportProcessesTable, AccountsTable, Database, Executor } from '../../db/database.js';
import type { AccountData } from './account.schemas.js';

export interface ImportProcessRow {
  id: string;
  import_supplier_id: string;
  external_account_number: string;
  payload: unknown;
  marked_to_skip: boolean;
  account_id: string | null;
  account_number: string | null;
  account_created_at: Date | null;
}

/**
 * Locks a pair's import process row until the transaction ends; false when there is none.
 * A separate statement from the read: under READ COMMITTED a locking read that waited sees the
 * newest locked row but not rows the other transaction added elsewhere (its account), so the
 * caller reads again, in a fresh snapshot, after the lock is held.
 */
export async function lockProcess(trx: Executor, supplierId: string, externalAccountNumber: string): Promise<boolean> {
  const row = await trx
    .selectFrom('account_import_processes')
    .select('id')
    .where('import_supplier_id', '=', supplierId)
    .where('external_account_number', '=', externalAccountNumber)
    .forUpdate()
    .executeTakeFirst();
  return row !== undefined;
}

/** The import process of a pair, with its account's number if one was created. */
export async function findProcess(db: Executor, supplierId: string, externalAccountNumber: string): Promise<ImportProcessRow | undefined> {
  return db
    .selectFrom('account_import_processes as p')
    .leftJoin('accounts as a', 'a.id', 'p.account_id')
    .select([
      'p.id',
      'p.import_supplier_id',
      'p.external_account_number',
      'p.payload',
      'p.marked_to_skip',
      'p.account_id',
      'a.number as account_number',
      'a.created_at as account_created_at',
    ])
    .where('p.import_supplier_id', '=', supplierId)
    .where('p.external_account_number', '=', externalAccountNumber)
    .executeTakeFirst();
}

/**
 * Stores the staged data unless the pair is imported or marked to skip.
 * Returns whether this was the first staging, or undefined when the row refused the update.
 */
export async function upsertStagedPayload(
  trx: Executor,
  supplierId: string,
  externalAccountNumber: string,
  payload: AccountData,
  at: Date,
): Promise<{ id: string; first: boolean } | undefined> {
  const row = await trx
    .insertInto('account_import_processes')
    .values({
      import_supplier_id: supplierId,
      external_account_number: externalAccountNumber,
      payload: JSON.stringify(payload),
      staged_at: at,
    })
    .onConflict((oc) =>
      oc
        .columns(['import_supplier_id', 'external_account_number'])
        .doUpdateSet({
          payload: (eb) => eb.ref('excluded.payload'),
          staged_at: (eb) => eb.ref('excluded.staged_at'),
          updated_at: sql`now()`,
        })
        .where('account_import_processes.account_id', 'is', null)
        .where('account_import_processes.marked_to_skip', '=', false),
    )
    // xmax = 0 only on a freshly inserted row: first staging (201) versus re-staging (200).
    .returning(['id', sql<boolean>`xmax = 0`.as('inserted')])
    .executeTakeFirst();
  return row ? { id: row.id, first: row.inserted } : undefined;
}

export interface MeterPointClaimant {
  supplierId: string;
  externalAccountNumber: string;
}

/** Who claims each of these identifiers (absent: nobody). */
export async function findMeterPointClaimants(db: Executor, identifiers: readonly string[]): Promise<Map<string, MeterPointClaimant>> {
  if (identifiers.length === 0) return new Map();
  const rows = await db
    .selectFrom('meter_point_registrations as r')
    .innerJoin('account_import_processes as p', 'p.id', 'r.import_process_id')
    .select(['r.identifier', 'p.import_supplier_id', 'p.external_account_number'])
    // = ANY(array): one statement text for any number of identifiers (the validate endpoint batches them).
    .where(sql<boolean>`r.identifier = any(${[...identifiers]}::text[])`)
    .execute();
  return new Map(rows.map((r) => [r.identifier, { supplierId: r.import_supplier_id, externalAccountNumber: r.external_account_number }]));
}

/**
 * Makes `identifiers` exactly the set this process claims. Returns the identifiers another
 * process holds (a race lost since validation); the caller rolls back when any are returned.
 */
export async function replaceMeterPointClaims(trx: Executor, processId: string, identifiers: readonly string[], freshProcess = false): Promise<string[]> {
  // A process row inserted by this transaction has no claims to drop yet.
  if (!freshProcess) {
    await trx
      .deleteFrom('meter_point_registrations')
      .where('import_process_id', '=', processId)
      .$if(identifiers.length > 0, (q) => q.where('identifier', 'not in', identifiers))
      .execute();
  }
  if (identifiers.length === 0) return [];
  const claimed = await trx
    .insertInto('meter_point_registrations')
    .values(identifiers.map((identifier) => ({ identifier, import_process_id: processId })))
    .onConflict((oc) =>
      oc.column('identifier').doUpdateSet({ import_process_id: (eb) => eb.ref('excluded.import_process_id') }).where('meter_point_registrations.import_process_id', '=', processId),
    )
    .returning('identifier')
    .execute();
  const mine = new Set(claimed.map((r) => r.identifier));
  return identifiers.filter((i) => !mine.has(i));
}

/**
 * Creates a pair's process row marked to skip, or marks the existing one, and releases its meter
 * point claims (a skipped account will never be created, so its meters are free for others).
 */
export async function markToSkip(db: Kysely<Database>, supplierId: string, externalAccountNumber: string): Promise<'marked' | 'already_imported'> {
  return db.transaction().execute(async (trx) => {
    const row = await trx
      .insertInto('account_import_processes')
      .values({ import_supplier_id: supplierId, external_account_number: externalAccountNumber, marked_to_skip: true })
      .onConflict((oc) =>
        oc
          .columns(['import_supplier_id', 'external_account_number'])
          .doUpdateSet({ marked_to_skip: true, updated_at: sql`now()` })
          .where('account_import_processes.account_id', 'is', null),
      )
      .returning('id')
      .executeTakeFirst();
    if (!row) return 'already_imported';
    await trx.deleteFrom('meter_point_registrations').where('import_process_id', '=', row.id).execute();
    return 'marked';
  });
}

/**
 * The next account number: a sequence value (never rolled back, so never reused) put through a
 * bijection on 32 bits, so numbers are unique yet do not reveal how many accounts exist.
 */
export async function nextAccountNumber(trx: Executor): Promise<string> {
  const { rows } = await sql<{ n: string }>`SELECT nextval('account_number_seq')::text AS n`.execute(trx);
  return formatAccountNumber(BigInt(rows[0]!.n));
}

const MASK32 = (1n << 32n) - 1n;
export function formatAccountNumber(seq: bigint): string {
  let x = (seq * 0x9e3779b1n) & MASK32; // odd multiplier: a bijection mod 2^32
  x ^= x >> 16n; // xor-shift: also a bijection
  x = (x * 0x85ebca6bn) & MASK32;
  x ^= x >> 13n;
  return `A-${x.toString(16).toUpperCase().padStart(8, '0')}`;
}

export async function linkAccount(trx: Executor, processId: string, accountId: string): Promise<void> {
  await trx
    .updateTable('account_import_processes')
    .set({ account_id: accountId, updated_at: sql`now()` })
    .where('id', '=', processId)
    .execute();
}

export type ListKind = 'all' | 'pending' | 'imported';

export interface ListEntry {
  external_account_number: string;
  service_account_number: string | null;
  account_created_at: Date | null;
}

/** One page of a supplier's import processes, ordered by external account number, after `after`. */
export async function listProcesses(
  db: Executor,
  supplierId: string,
  kind: ListKind,
  after: string | null,
  limit: number,
): Promise<ListEntry[]> {
  return listProcessesQuery(db, supplierId, kind, after, limit).execute();
}

/** The statement behind listProcesses, unexecuted: the bench compiles it to show the plan the service gets. */
export function listProcessesQuery(db: Executor, supplierId: string, kind: ListKind, after: string | null, limit: number) {
  let q = db
    .selectFrom('account_import_processes as p')
    .leftJoin('accounts as a', 'a.id', 'p.account_id')
    .select(['p.external_account_number', 'a.number as service_account_number', 'a.created_at as account_created_at'])
    .where('p.import_supplier_id', '=', supplierId);
  type Scope = Database & { p: AccountImportProcessesTable; a: AccountsTable };
  const pending = (eb: ExpressionBuilder<Scope, 'p' | 'a'>) =>
    eb.and([eb('p.account_id', 'is', null), eb('p.payload', 'is not', null), eb('p.marked_to_skip', '=', false)]);
  if (kind === 'imported') q = q.where('p.account_id', 'is not', null);
  else if (kind === 'pending') q = q.where(pending);
  else q = q.where((eb) => eb.or([eb('p.account_id', 'is not', null), pending(eb)]));
  if (after !== null) q = q.where('p.external_account_number', '>', after);
  return q.orderBy('p.external_account_number').limit(limit);
}
