import { reaches } from '../../auth/supplier-scope.js';
import { sql, type Kysely } from 'kysely';
import { z } from 'zod';
import type { Database, Executor, ImportSupplier } from '../../db/database.js';
import { notFound } from '../../errors.js';
import { SUPPLIER_COLUMNS_JOINED, supplierFromRow } from '../suppliers/supplier.repository.js';
import { assertMigrationOngoing } from '../suppliers/supplier.rules.js';
import { runWrites, type SetWrite } from './write-set.js';

export interface ImportedAccount {
  id: string;
  number: string;
  createdAt: Date;
  lastStatementClosingDate: string | null;
  supplier: ImportSupplier;
}

/** The pair every extras request names; required, non-empty strings. */
export const accountPairShape = {
  import_supplier: z.string().min(1),
  external_account_number: z.string().min(1).max(128),
};

export interface AccountPair {
  import_supplier: string;
  external_account_number: string;
}

/** The published, deprecated `account_number` of the notes and transactions bodies: the service account number. */
export const accountNumberField = z.string().min(1).max(32).optional();

/**
 * A request that also names the account by its service number must name the same account as its
 * pair; otherwise the account it names does not exist for this request (404 account_not_found).
 */
export function assertSameAccount(accountNumber: string | undefined, account: ImportedAccount): void {
  if (accountNumber !== undefined && accountNumber !== account.number) {
    throw notFound('account_not_found', `Account ${accountNumber} is not the account of this supplier and external account number.`);
  }
}

/**
 * What an extras import may be told by its caller. The REST routes tell it nothing; the pipeline,
 * which has just read the item's supplier with its claim and runs all of a bundle's extras under
 * one lock, tells it the supplier (one lookup fewer per extra) and, in a dry run, the transaction
 * its reads must see.
 */
export interface ExtrasContext {
  /** Where the reads made before the lock run (default: the pool). */
  db?: Executor;
  /** The pair's supplier as the caller just read it. The lock still checks the account and the supplier's status. */
  supplier?: ImportSupplier;
  /**
   * The extras come from inside the account payload, imported as the account is created: its own
   * rules have already placed each transaction in its statement period (decisions §1).
   */
  fromAccount?: boolean;
}

/** An extras import's writes, checked and ready: run under the account's lock, in the caller's transaction (a set of accounts' at once: write-set.ts). */
export type LockedWrite<T> = SetWrite<T, ImportedAccount>;

/**
 * The created account of a pair, locked until the transaction ends so that one account's extras
 * imports run one at a time (which is what makes check-then-insert dedupe safe under concurrency).
 * 404 `account_not_found` when there is no created account (staged is not enough, unknown supplier
 * too); 400 `import_supplier_migration_not_ongoing` for Paused or Complete suppliers. One statement:
 * the supplier's status is read with the lock.
 */
export async function lockImportedAccount(trx: Executor, supplierCode: string, externalAccountNumber: string): Promise<ImportedAccount> {
  // A supplier the request's API key does not reach is one that does not exist.
  const row = !reaches(supplierCode) ? undefined : await trx
    .selectFrom('accounts as a')
    .innerJoin('import_suppliers as s', 's.id', 'a.import_supplier_id')
    .select([
      'a.id',
      'a.number',
      'a.created_at',
      'a.last_statement_closing_date',
      ...SUPPLIER_COLUMNS_JOINED,
    ])
    .where('s.code', '=', supplierCode)
    .where('a.external_account_number', '=', externalAccountNumber)
    .forNoKeyUpdate('a')
    .executeTakeFirst();
  if (!row) {
    throw notFound('account_not_found', `No imported account for supplier '${supplierCode}' and account '${externalAccountNumber}'.`);
  }
  const supplier = supplierFromRow(row);
  assertMigrationOngoing(supplier);
  return {
    id: row.id,
    number: row.number,
    createdAt: row.created_at,
    lastStatementClosingDate: row.last_statement_closing_date,
    supplier,
  };
}

/**
 * lockImportedAccount for many pairs in one statement, locked in id order: two sets that share
 * accounts then wait for each other instead of deadlocking. Answers each pair's account by
 * pairKey; throws the error lockImportedAccount would for the first pair in `pairs` that has no
 * account, or whose supplier is not Ongoing.
 */
export async function lockImportedAccounts(trx: Executor, pairs: readonly AccountPair[]): Promise<Map<string, ImportedAccount>> {
  // A supplier the request's API key does not reach is one that does not exist.
  const reachable = pairs.filter((p) => reaches(p.import_supplier));
  const rows =
    reachable.length === 0
      ? []
      : await trx
          .selectFrom('accounts as a')
          .innerJoin('import_suppliers as s', 's.id', 'a.import_supplier_id')
          .select(['a.id', 'a.number', 'a.external_account_number', 'a.created_at', 'a.last_statement_closing_date', ...SUPPLIER_COLUMNS_JOINED])
          .where(
            sql<boolean>`(s.code, a.external_account_number) IN (SELECT * FROM unnest(${reachable.map((p) => p.import_supplier)}::text[], ${reachable.map((p) => p.external_account_number)}::text[]))`,
          )
          .orderBy('a.id')
          .forNoKeyUpdate('a')
          .execute();
  const found = new Map(rows.map((row) => [pairKey({ import_supplier: row.supplier_code, external_account_number: row.external_account_number }), row]));
  const out = new Map<string, ImportedAccount>();
  for (const pair of pairs) {
    const row = found.get(pairKey(pair));
    if (!row) throw notFound('account_not_found', `No imported account for supplier '${pair.import_supplier}' and account '${pair.external_account_number}'.`);
    const supplier = supplierFromRow(row);
    assertMigrationOngoing(supplier);
    out.set(pairKey(pair), { id: row.id, number: row.number, createdAt: row.created_at, lastStatementClosingDate: row.last_statement_closing_date, supplier });
  }
  return out;
}

/** A pair as one string: the key of lockImportedAccounts' answer. */
export const pairKey = (p: AccountPair): string => JSON.stringify([p.import_supplier, p.external_account_number]);

/** Runs one extras import's writes in a transaction of its own, under the account's lock (the REST door). */
export function runLocked<T>(db: Kysely<Database>, pair: AccountPair, write: LockedWrite<T>): Promise<T> {
  return db.transaction().execute(async (trx) => {
    const [result] = await runWrites(trx, await lockImportedAccount(trx, pair.import_supplier, pair.external_account_number), [write]);
    return result!;
  });
}

/** Carries a dry run's answer out of the transaction it rolls back. */
class DryRunRollBack<T> extends Error {
  constructor(readonly result: T) {
    super('dry run: rolled back');
  }
}

/** As runLocked, but the writes are rolled back: the answer says what would have happened (a dry run). */
export async function runLockedDry<T>(db: Kysely<Database>, pair: AccountPair, write: LockedWrite<T>): Promise<T> {
  try {
    await db.transaction().execute(async (trx) => {
      const [result] = await runWrites(trx, await lockImportedAccount(trx, pair.import_supplier, pair.external_account_number), [write]);
      throw new DryRunRollBack(result);
    });
  } catch (err) {
    if (err instanceof DryRunRollBack) return err.result as T;
    throw err;
  }
  throw new Error('unreachable: a dry run always rolls back');
}
