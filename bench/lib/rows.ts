import { addDaysUtc } from '../../src/clock.js';
import type { AccountBundle } from '../../src/cohort/generate.js';
import {
  accountRow,
  agreementRows,
  customerRow,
  meterPointRow,
  meterRow,
  metadataRows,
  psrRows,
  readingRows,
  registerRows,
  supplyAddressRow,
} from '../../src/imports/accounts/account-tree.repository.js';
import { formatAccountNumber } from '../../src/imports/accounts/account.repository.js';
import type { AccountData } from '../../src/imports/accounts/account.schemas.js';
import { movedDescription } from '../../src/imports/transactions/transaction.service.js';

// The rows the pipeline leaves behind for an account, built with the service's own row builders
// (src/imports/accounts/account-tree.repository.ts) for the account's tree and the extras' columns
// as their services write them, with ids chosen here: the ceiling and the limit write exactly what
// the service writes, and need no RETURNING to link a child to its parent.

/** The tables, in an order that inserts every parent before its children. */
export const TABLES = [
  'accounts',
  'customers',
  'customer_psr_entries',
  'supply_addresses',
  'meter_points',
  'agreements',
  'meters',
  'meter_registers',
  'meter_readings',
  'account_metadata',
  'account_import_processes',
  'meter_point_registrations',
  'account_notes',
  'account_transactions',
  'transaction_line_items',
  'transaction_tax_items',
  'historical_statements',
  'payment_instructions',
] as const;
export type Table = (typeof TABLES)[number];

export type Row = Record<string, unknown>;
export type TableRows = Record<Table, Row[]>;

/** Ids for the rows of one database, counted here (the bench's databases are its own: nothing else inserts). */
export class Ids {
  private readonly next = new Map<string, number>();
  take(table: string): string {
    const n = (this.next.get(table) ?? 0) + 1;
    this.next.set(table, n);
    return String(n);
  }
  /** The sequences' positions after the load, so the database stays usable (`SELECT setval(...)` per table). */
  used(): Array<[string, number]> {
    return [...this.next.entries()];
  }
}

export const emptyRows = (): TableRows => Object.fromEntries(TABLES.map((t) => [t, []])) as unknown as TableRows;

type Json = Record<string, unknown>;
const s = (v: unknown): string | null => (v === undefined || v === null ? null : String(v));

/**
 * Adds one account's rows to `out`: the account and its tree from the validated data (`data`, parsed
 * by the service's schema before any clock starts), the import process with its meter point
 * claims, and the bundle's extras as the pipeline imports them.
 */
export function addAccountRows(out: TableRows, ids: Ids, b: AccountBundle, data: AccountData, owner: { supplier: string; team: string }, seq: number, now: Date): void {
  const accountId = ids.take('accounts');
  out.accounts.push({ id: accountId, ...accountRow({ number: formatAccountNumber(BigInt(seq)), supplierId: owner.supplier, teamId: owner.team, data, now }) });
  (data.customers ?? []).forEach((c, position) => {
    const customerId = ids.take('customers');
    out.customers.push({ id: customerId, ...customerRow(accountId, position, c) });
    out.customer_psr_entries.push(...psrRows(customerId, c));
  });
  (data.supply_addresses ?? []).forEach((sa, position) => {
    const addressId = ids.take('supply_addresses');
    out.supply_addresses.push({ id: addressId, ...supplyAddressRow(accountId, position, sa) });
    sa.meter_points.forEach((mp, at) => {
      const pointId = ids.take('meter_points');
      out.meter_points.push({ id: pointId, ...meterPointRow(accountId, addressId, at, mp) });
      out.agreements.push(...agreementRows(pointId, mp));
      (mp.meters ?? []).forEach((m, k) => {
        const meterId = ids.take('meters');
        out.meters.push({ id: meterId, ...meterRow(pointId, k, m) });
        out.meter_registers.push(...registerRows(meterId, m));
        out.meter_readings.push(...readingRows(meterId, m));
      });
    });
  });
  out.account_metadata.push(...metadataRows(accountId, data));
  const processId = ids.take('account_import_processes');
  out.account_import_processes.push({ id: processId, import_supplier_id: owner.supplier, external_account_number: data.external_account_number, payload: JSON.stringify(data), staged_at: now, account_id: accountId });
  for (const sa of data.supply_addresses ?? []) for (const mp of sa.meter_points) out.meter_point_registrations.push({ identifier: mp.identifier, import_process_id: processId });

  // Extras, as the pipeline runs them: notes, transactions (those before the open period are moved
  // into it, with a note saying so), statements, the payment instruction as the vendor described it.
  for (const n of b.notes ?? []) out.account_notes.push({ account_id: accountId, body: n.body ?? null, created_at: n.created_at, is_pinned: n.is_pinned ?? false, unpin_at: n.unpin_at ?? null, origin: 'IMPORTED' });
  const start = addDaysUtc(String(data.last_statement_closing_date), 1);
  const txs = (b.transactions ?? []).map((t) => {
    const given = String(t.transaction_date);
    return { t, date: given < start ? start : given, original: given < start ? given : null };
  });
  const moved = txs.filter((x) => x.original !== null);
  if (moved.length > 0) {
    out.account_notes.push({
      account_id: accountId,
      body: `Transactions moved into the current statement period (from ${start}) on import: ${moved.map((m) => `${String(m.t.transaction_id)} (originally ${m.original})`).join(', ')}.`,
      created_at: now,
      is_pinned: true,
      unpin_at: null,
      origin: 'TRANSACTIONS_MOVED',
    });
  }
  for (const { t, date, original } of txs) {
    const txId = ids.take('account_transactions');
    out.account_transactions.push({
      id: txId,
      account_id: accountId,
      transaction_id: t.transaction_id,
      type: t.type,
      reason: s(t.reason),
      amount: String(t.amount),
      transaction_date: date,
      original_transaction_date: original,
      description: original ? movedDescription(original) : null,
      reference: s(t.reference),
      payment_type: s(t.payment_type),
      display_note: s(t.display_note),
      note: s(t.note),
      product_code: s(t.product_code),
    });
    ((t.line_items ?? []) as Json[]).forEach((li, position) =>
      out.transaction_line_items.push({
        transaction_row_id: txId,
        position,
        rate_band: s(li.rate_band),
        start_date: li.start_date,
        end_date: li.end_date,
        number_of_units: li.number_of_units,
        net_amount: li.net_amount,
        price_per_unit: s(li.price_per_unit),
        units: li.units ?? null,
      }),
    );
    ((t.tax_items ?? []) as Json[]).forEach((ti, position) =>
      out.transaction_tax_items.push({ transaction_row_id: txId, position, amount: ti.amount, tax_type: ti.tax_type, value_taxed: ti.value_taxed, rate: ti.rate, unit_type: ti.unit_type }),
    );
  }
  for (const st of b.statements ?? []) {
    out.historical_statements.push({
      account_id: accountId,
      statement_id: st.statement_id,
      bill_period_from_date: st.bill_period_from_date,
      bill_period_to_date: st.bill_period_to_date,
      issued_date: st.issued_date,
      number: st.number,
      gross_amount: String(st.gross_amount),
      statement_path: s(st.statement_path),
    });
  }
  if (b.payment_instruction) {
    const pi = b.payment_instruction;
    out.payment_instructions.push({ account_id: accountId, vendor: pi.vendor, reference: pi.reference, type: pi.type, details: JSON.stringify({ reference: pi.reference, type: pi.type, status: 'ACTIVE' }) });
  }
}

/** PostgreSQL's limit is 65,535 parameters a statement. */
const MAX_PARAMETERS = 60_000;

/**
 * The multi-row INSERTs that write `rows` into `table`: as few statements as the parameter limit
 * allows. Every row of a table must have the same columns (the builders make them so).
 */
export function insertStatements(table: Table, rows: readonly Row[]): Array<{ text: string; values: unknown[] }> {
  if (rows.length === 0) return [];
  const columns = Object.keys(rows[0]!);
  const per = Math.max(1, Math.floor(MAX_PARAMETERS / columns.length));
  const out: Array<{ text: string; values: unknown[] }> = [];
  for (let i = 0; i < rows.length; i += per) {
    const values: unknown[] = [];
    const tuples = rows.slice(i, i + per).map((r) => `(${columns.map((c) => `$${values.push(toParam(r[c]))}`).join(', ')})`);
    // The ids are chosen here, and the id columns are GENERATED ALWAYS: say so.
    const overriding = columns.includes('id') ? ' OVERRIDING SYSTEM VALUE' : '';
    out.push({ text: `INSERT INTO ${table} (${columns.join(', ')})${overriding} VALUES ${tuples.join(', ')}`, values });
  }
  return out;
}

/** Arrays go as PostgreSQL arrays (units is numeric[]), other objects as JSON text; the builders stringify their JSON columns already. */
const toParam = (v: unknown): unknown => (v !== null && typeof v === 'object' && !(v instanceof Date) && !Array.isArray(v) ? JSON.stringify(v) : v);
