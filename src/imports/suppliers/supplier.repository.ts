import type { Executor, ImportSupplier, SupplierStatus } from '../../db/database.js';

export const findSupplierByCode = (db: Executor, code: string): Promise<ImportSupplier | undefined> =>
  db.selectFrom('import_suppliers').selectAll().where('code', '=', code).executeTakeFirst();

export const SUPPLIER_STATUSES: readonly SupplierStatus[] = ['ONGOING', 'PAUSED', 'COMPLETE'];

/** How the interface names each status (Ongoing, Paused, Complete). */
export const statusLabel = (s: SupplierStatus): string => s.charAt(0) + s.slice(1).toLowerCase();
