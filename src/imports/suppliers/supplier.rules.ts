import type { ImportSupplier } from '../../db/database.js';
import { badRequest, type AppError } from '../../errors.js';
import { statusLabel } from './supplier.repository.js';

/** Paused and Complete suppliers refuse every migration attempt (staging, processing, extras). */
export function assertMigrationOngoing(supplier: ImportSupplier, attr: string | null = null): void {
  if (supplier.status !== 'ONGOING') throw supplierNotOngoing(supplier, attr);
}

/** The error of a migration attempt on a supplier that is Paused or Complete. */
export const supplierNotOngoing = (supplier: ImportSupplier, attr: string | null = null): AppError =>
  badRequest(
    'import_supplier_migration_not_ongoing',
    `The migration of import supplier '${supplier.code}' is ${statusLabel(supplier.status)}; it does not accept migration attempts.`,
    attr,
  );

export const supplierNotFound = (code: string, attr: string): AppError =>
  badRequest('import_supplier_not_found', `Import supplier '${code}' does not exist.`, attr);
