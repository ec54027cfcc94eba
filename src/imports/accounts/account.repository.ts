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

/** The import process of a pair, with its account's number if one was created. */
export async function findProcess(db: Executor, supplierId: string, externalAccountNumber: string): Promise<ImportProcessRow | undefined> {
  const pair = { supplierId, externalAccountNumber };
  return (await findProcesses(db, [pair])).get(keyOfPair(pair));
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

const MASK32 = (1n << 32n) - 1n;
export function formatAccountNumber(seq: bigint): string {
  let x = (seq * 0x9e3779b1n) & MASK32; // odd multiplier: a bijection mod 2^32
  x ^= x >> 16n; // xor-shift: also a bijection
  x = (x * 0x85ebca6bn) & MASK32;
  x ^= x >> 13n;
  return `A-${x.toString(16).toUpperCase().padStart(8, '0')}`;
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

/* Set-based forms: the pipeline runs a stage for many accounts in one transaction, a statement per step. */

export interface Pair {
  supplierId: string;
  externalAccountNumber: string;
}

const pairKey = (supplierId: string, ext: string): string => JSON.stringify([supplierId, ext]);
export const keyOfPair = (p: Pair): string => pairKey(p.supplierId, p.externalAccountNumber);

/** `p` is one of these pairs: two array parameters, one statement text for any number of pairs. */
const inPairs = (pairs: readonly Pair[]) =>
  sql<boolean>`(p.import_supplier_id, p.external_account_number) IN (SELECT * FROM unnest(${pairs.map((p) => p.supplierId)}::bigint[], ${pairs.map((p) => p.externalAccountNumber)}::text[]))`;

/**
 * Locks the import process rows of these pairs until the transaction ends, in id order (two sets
 * that share pairs lock them in the same order, so they queue instead of deadlocking). Answers the
 * pairs that have a row. A separate statement from the read: under READ COMMITTED a locking read
 * that waited sees the newest locked row but not rows the other transaction added elsewhere (its
 * account), so the caller reads again, in a fresh snapshot, after the lock is held.
 */
export async function lockProcesses(trx: Executor, pairs: readonly Pair[]): Promise<Set<string>> {
  if (pairs.length === 0) return new Set();
  const rows = await trx
    .selectFrom('account_import_processes as p')
    .select(['p.import_supplier_id', 'p.external_account_number'])
    .where(inPairs(pairs))
    .orderBy('p.id')
    .forUpdate('p')
    .execute();
  return new Set(rows.map((r) => pairKey(r.import_supplier_id, r.external_account_number)));
}

/** The import processes of these pairs, keyed by keyOfPair. */
export async function findProcesses(db: Executor, pairs: readonly Pair[]): Promise<Map<string, ImportProcessRow>> {
  if (pairs.length === 0) return new Map();
  const rows = await db
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
    .where(inPairs(pairs))
    .execute();
  return new Map(rows.map((r) => [pairKey(r.import_supplier_id, r.external_account_number), r]));
}

/**
 * Stores the staged data of many pairs in one statement, except for pairs imported or marked to
 * skip (each pair at most once: the caller splits a set that repeats one). Answers, by keyOfPair,
 * the row of each pair that took the payload and whether it was the pair's first staging; a pair
 * missing from the answer is imported or skipped.
 */
export async function upsertStagedPayloads(
  trx: Executor,
  entries: ReadonlyArray<Pair & { payload: AccountData }>,
  at: Date,
): Promise<Map<string, { id: string; first: boolean }>> {
  if (entries.length === 0) return new Map();
  const rows = await trx
    .insertInto('account_import_processes')
    .values(
      entries.map((e) => ({
        import_supplier_id: e.supplierId,
        external_account_number: e.externalAccountNumber,
        payload: JSON.stringify(e.payload),
        staged_at: at,
      })),
    )
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
    .returning(['id', 'import_supplier_id', 'external_account_number', sql<boolean>`xmax = 0`.as('inserted')])
    .execute();
  return new Map(rows.map((r) => [pairKey(r.import_supplier_id, r.external_account_number), { id: r.id, first: r.inserted }]));
}

/**
 * Makes each process's identifiers exactly the set it claims, for many processes in two statements
 * (a process inserted by this transaction, `fresh`, has no claims to drop). Answers the identifiers
 * each process lost to another (a race since validation), by process id; the caller rolls back when
 * any are. The identifiers of the set must be distinct across its processes (the caller checks).
 */
export async function replaceMeterPointClaimsMany(
  trx: Executor,
  claims: ReadonlyArray<{ processId: string; identifiers: readonly string[]; fresh: boolean }>,
): Promise<Map<string, string[]>> {
  const stale = claims.filter((c) => !c.fresh);
  if (stale.length > 0) {
    const kept = stale.flatMap((c) => c.identifiers.map((i) => [c.processId, i] as const));
    await trx
      .deleteFrom('meter_point_registrations')
      .where(sql<boolean>`import_process_id = any(${stale.map((c) => c.processId)}::bigint[])`)
      .where(
        sql<boolean>`(import_process_id, identifier) NOT IN (SELECT * FROM unnest(${kept.map((k) => k[0])}::bigint[], ${kept.map((k) => k[1])}::text[]))`,
      )
      .execute();
  }
  const wanted = claims.flatMap((c) => c.identifiers.map((identifier) => ({ identifier, import_process_id: c.processId })));
  const lost = new Map<string, string[]>();
  if (wanted.length === 0) return lost;
  const claimed = await trx
    .insertInto('meter_point_registrations')
    .values(wanted)
    .onConflict((oc) =>
      oc
        .column('identifier')
        .doUpdateSet({ import_process_id: (eb) => eb.ref('excluded.import_process_id') })
        .where('meter_point_registrations.import_process_id', '=', (eb) => eb.ref('excluded.import_process_id')),
    )
    .returning(['identifier'])
    .execute();
  const mine = new Set(claimed.map((r) => r.identifier));
  for (const c of claims) {
    const gone = c.identifiers.filter((i) => !mine.has(i));
    if (gone.length > 0) lost.set(c.processId, gone);
  }
  return lost;
}

/**
 * `n` new account numbers in one statement: sequence values (never rolled back, so never reused) put
 * through a bijection on 32 bits, so numbers are unique yet do not reveal how many accounts exist.
 */
export async function nextAccountNumbers(trx: Executor, n: number): Promise<string[]> {
  if (n === 0) return [];
  const { rows } = await sql<{ n: string }>`SELECT nextval('account_number_seq')::text AS n FROM generate_series(1, ${n}::int)`.execute(trx);
  return rows.map((r) => formatAccountNumber(BigInt(r.n)));
}

export async function linkAccounts(trx: Executor, links: ReadonlyArray<{ processId: string; accountId: string }>): Promise<void> {
  if (links.length === 0) return;
  await sql`UPDATE account_import_processes p SET account_id = v.a, updated_at = now()
    FROM unnest(${links.map((l) => l.processId)}::bigint[], ${links.map((l) => l.accountId)}::bigint[]) AS v(p, a)
    WHERE p.id = v.p`.execute(trx);
}
