import { reaches } from '../../auth/supplier-scope.js';
import type { Executor, ImportSupplier } from '../../db/database.js';
import { AppError, notFound } from '../../errors.js';
import { assertMigrationOngoing } from '../suppliers/supplier.rules.js';

/**
 * The supplier of a pair that has a created account, without locking: used for the checks that
 * must happen before the account is locked (documents in storage, the payment vendor), so no
 * network call is made while a row lock is held. The locked read repeats these checks.
 * A `known` supplier (the pipeline read it with its claim, for an item whose account it created)
 * is used as it is: the lock still finds out whether the account exists.
 */
export async function findImportedAccountSupplier(
  db: Executor,
  supplierCode: string,
  externalAccountNumber: string,
  known?: ImportSupplier,
): Promise<ImportSupplier> {
  if (known && known.code === supplierCode) {
    assertMigrationOngoing(known);
    return known;
  }
  // A supplier the request's API key does not reach is one that does not exist.
  const supplier = reaches(supplierCode) ? await db.selectFrom('import_suppliers').selectAll().where('code', '=', supplierCode).executeTakeFirst() : undefined;
  const account = supplier
    ? await db
        .selectFrom('accounts')
        .select('id')
        .where('import_supplier_id', '=', supplier.id)
        .where('external_account_number', '=', externalAccountNumber)
        .executeTakeFirst()
    : undefined;
  if (!supplier || !account) {
    throw notFound('account_not_found', `No imported account for supplier '${supplierCode}' and account '${externalAccountNumber}'.`);
  }
  assertMigrationOngoing(supplier);
  return supplier;
}

/**
 * Like findImportedAccountSupplier, but for requests that also have field errors: when the pair
 * has no account and the request is invalid anyway, the field errors (400) are the answer; the
 * 404 comes only for an otherwise valid request.
 */
export async function supplierForChecks(
  db: Executor,
  input: unknown,
  hasFieldErrors: boolean,
  known?: ImportSupplier,
): Promise<ImportSupplier | null> {
  const pair = input as { import_supplier?: unknown; external_account_number?: unknown } | null;
  if (typeof pair?.import_supplier !== 'string' || typeof pair.external_account_number !== 'string') return null;
  try {
    return await findImportedAccountSupplier(db, pair.import_supplier, pair.external_account_number, known);
  } catch (err) {
    if (hasFieldErrors && err instanceof AppError && err.status === 404) return null;
    throw err;
  }
}
