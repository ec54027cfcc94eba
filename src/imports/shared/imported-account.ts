import { z } from 'zod';
import type { Executor, ImportSupplier } from '../../db/database.js';
import { notFound } from '../../errors.js';
import { assertMigrationOngoing } from '../suppliers/supplier.rules.js';

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

/**
 * The created account of a pair, locked until the transaction ends so that one account's extras
 * imports run one at a time (which is what makes check-then-insert dedupe safe under concurrency).
 * 404 `account_not_found` when there is no created account (staged is not enough, unknown supplier
 * too); 400 `import_supplier_migration_not_ongoing` for Paused or Complete suppliers.
 */
export async function lockImportedAccount(trx: Executor, supplierCode: string, externalAccountNumber: string): Promise<ImportedAccount> {
  const row = await trx
    .selectFrom('accounts as a')
    .innerJoin('import_suppliers as s', 's.id', 'a.import_supplier_id')
    .select(['a.id', 'a.number', 'a.created_at', 'a.last_statement_closing_date'])
    .where('s.code', '=', supplierCode)
    .where('a.external_account_number', '=', externalAccountNumber)
    .forNoKeyUpdate('a')
    .executeTakeFirst();
  if (!row) {
    throw notFound('account_not_found', `No imported account for supplier '${supplierCode}' and account '${externalAccountNumber}'.`);
  }
  const supplier = await trx.selectFrom('import_suppliers').selectAll().where('code', '=', supplierCode).executeTakeFirstOrThrow();
  assertMigrationOngoing(supplier);
  return {
    id: row.id,
    number: row.number,
    createdAt: row.created_at,
    lastStatementClosingDate: row.last_statement_closing_date,
    supplier,
  };
}
