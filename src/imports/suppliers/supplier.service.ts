import { sql } from 'kysely';
import type { Executor, ImportSupplier, SupplierStatus } from '../../db/database.js';
import { AppError, badRequest, notFound } from '../../errors.js';
import { findTeamByName } from '../teams/team.repository.js';
import { SUPPLIER_STATUSES } from './supplier.repository.js';

/**
 * Supplier codes travel in URL paths and in every client payload, so they are kept to characters
 * that need no escaping anywhere and cannot hide a typo in surrounding blanks.
 */
const CODE_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
const MAX_NAME_LENGTH = 200;
// eslint-disable-next-line no-control-regex -- control characters are exactly what this rejects
const CONTROL_CHARS = /[\u0000-\u001f\u007f]/;

export interface NewSupplierInput {
  code: string;
  /** Defaults to the code. */
  name?: string;
  /** ongoing, paused or complete in any case; defaults to ONGOING. */
  status?: string;
  documentsRoot?: string;
  sendCustomerEmails?: boolean;
  /** Register the meter points of every account created from now on (decisions.md §8). */
  autoRegister?: boolean;
}

/** Accepts `ongoing`, `Paused`, `COMPLETE`…: operators type statuses in whatever case they think in. */
export function parseSupplierStatus(value: string): SupplierStatus {
  const upper = value.trim().toUpperCase();
  const status = SUPPLIER_STATUSES.find((s) => s === upper);
  if (!status) {
    throw badRequest('invalid_supplier_status', `'${value}' is not a supplier status; expected ongoing, paused or complete.`, 'status');
  }
  return status;
}

function checkCode(code: string): void {
  if (!CODE_PATTERN.test(code)) {
    throw badRequest(
      'invalid_supplier_code',
      `'${code}' is not a valid supplier code: use 1-64 letters, digits, '_', '.' or '-', starting with a letter or digit.`,
      'code',
    );
  }
}

/** Trimmed; a name that is empty or carries control characters would break lists and logs. */
function cleanName(value: string): string {
  const name = value.trim();
  if (name === '' || name.length > MAX_NAME_LENGTH || CONTROL_CHARS.test(name)) {
    throw badRequest('invalid_supplier_name', `The supplier name must be 1-${MAX_NAME_LENGTH} printable characters.`, 'name');
  }
  return name;
}

const isUniqueViolation = (err: unknown): boolean => (err as { code?: string }).code === '23505';

export async function createSupplier(db: Executor, input: NewSupplierInput): Promise<ImportSupplier> {
  checkCode(input.code);
  const name = cleanName(input.name ?? input.code);
  const status = input.status === undefined ? 'ONGOING' : parseSupplierStatus(input.status);
  try {
    return await db
      .insertInto('import_suppliers')
      .values({
        code: input.code,
        name,
        status,
        documents_root: input.documentsRoot ?? '',
        send_customer_emails: input.sendCustomerEmails ?? false,
        ...(input.autoRegister ? { auto_register_since: sql`now()` } : {}),
      })
      .returningAll()
      .executeTakeFirstOrThrow();
  } catch (err) {
    if (isUniqueViolation(err)) {
      throw new AppError(409, 'import_supplier_already_exists', `Import supplier '${input.code}' already exists.`, [], {}, {}, { cause: err });
    }
    throw err;
  }
}

/**
 * Turns automatic registration on (the accounts created from now on are registered: their meter
 * points are marked by the registration sweep) or off; unknown code → import_supplier_not_found.
 */
export async function setSupplierAutoRegister(db: Executor, code: string, on: boolean): Promise<ImportSupplier> {
  const row = await db
    .updateTable('import_suppliers')
    .set({ auto_register_since: on ? sql`coalesce(auto_register_since, now())` : null, updated_at: sql`now()` })
    .where('code', '=', code)
    .returningAll()
    .executeTakeFirst();
  if (!row) throw notFound('import_supplier_not_found', `Import supplier '${code}' does not exist.`);
  return row;
}

/** Sets the status (case-insensitive input, stored upper case); unknown code → import_supplier_not_found. */
export async function setSupplierStatus(db: Executor, code: string, status: string): Promise<ImportSupplier> {
  const parsed = parseSupplierStatus(status);
  const row = await db
    .updateTable('import_suppliers')
    .set({ status: parsed, updated_at: sql`now()` })
    .where('code', '=', code)
    .returningAll()
    .executeTakeFirst();
  if (!row) throw notFound('import_supplier_not_found', `Import supplier '${code}' does not exist.`);
  return row;
}

/**
 * Sets the operations team a supplier's scheduled (v2) accounts go to: they name none of their own.
 * Unknown supplier → import_supplier_not_found; unknown team → operations_team_not_found.
 */
export async function setSupplierDefaultTeam(db: Executor, code: string, teamName: string): Promise<ImportSupplier> {
  const team = await findTeamByName(db, teamName);
  if (!team) throw notFound('operations_team_not_found', `Operations team '${teamName}' does not exist.`);
  const row = await db
    .updateTable('import_suppliers')
    .set({ default_operations_team_id: team.id, updated_at: sql`now()` })
    .where('code', '=', code)
    .returningAll()
    .executeTakeFirst();
  if (!row) throw notFound('import_supplier_not_found', `Import supplier '${code}' does not exist.`);
  return row;
}

export const listSuppliers = (db: Executor): Promise<ImportSupplier[]> =>
  db.selectFrom('import_suppliers').selectAll().orderBy('code').execute();
