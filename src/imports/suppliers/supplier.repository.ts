import { reaches } from '../../auth/supplier-scope.js';
import type { Executor, ImportSupplier, SupplierStatus } from '../../db/database.js';

/** The supplier of that code, or undefined when there is none, or when the request's API key does not reach it. */
export const findSupplierByCode = async (db: Executor, code: string): Promise<ImportSupplier | undefined> =>
  reaches(code) ? db.selectFrom('import_suppliers').selectAll().where('code', '=', code).executeTakeFirst() : undefined;

/**
 * A supplier's columns read alongside another table's (joined as `s`), each prefixed `supplier_`;
 * supplierFromRow puts them back together. One statement instead of a second lookup.
 */
export const SUPPLIER_COLUMNS_JOINED = [
  's.id as supplier_id',
  's.code as supplier_code',
  's.name as supplier_name',
  's.status as supplier_status',
  's.documents_root as supplier_documents_root',
  's.send_customer_emails as supplier_send_customer_emails',
  's.default_operations_team_id as supplier_default_operations_team_id',
  's.auto_register_since as supplier_auto_register_since',
  's.created_at as supplier_created_at',
  's.updated_at as supplier_updated_at',
] as const;

export interface SupplierColumnsJoined {
  supplier_id: string;
  supplier_code: string;
  supplier_name: string;
  supplier_status: SupplierStatus;
  supplier_documents_root: string;
  supplier_send_customer_emails: boolean;
  supplier_default_operations_team_id: string | null;
  supplier_auto_register_since: Date | null;
  supplier_created_at: Date;
  supplier_updated_at: Date;
}

export const supplierFromRow = (row: SupplierColumnsJoined): ImportSupplier => ({
  id: row.supplier_id,
  code: row.supplier_code,
  name: row.supplier_name,
  status: row.supplier_status,
  documents_root: row.supplier_documents_root,
  send_customer_emails: row.supplier_send_customer_emails,
  default_operations_team_id: row.supplier_default_operations_team_id,
  auto_register_since: row.supplier_auto_register_since,
  created_at: row.supplier_created_at,
  updated_at: row.supplier_updated_at,
});

export const SUPPLIER_STATUSES: readonly SupplierStatus[] = ['ONGOING', 'PAUSED', 'COMPLETE'];

/** How the interface names each status (Ongoing, Paused, Complete). */
export const statusLabel = (s: SupplierStatus): string => s.charAt(0) + s.slice(1).toLowerCase();
