import { readFileSync } from 'node:fs';
import type pg from 'pg';
import { addDaysUtc } from '../../src/clock.js';
import type { AccountBundle } from '../../src/cohort/generate.js';
import { formatAccountNumber } from '../../src/imports/accounts/account.repository.js';
import { movedDescription } from '../../src/imports/transactions/transaction.service.js';
import type { CohortFile } from './cohort.js';
import { onCleanup } from './cleanup.js';
import { TEAM } from './env.js';
import { pgPool } from './pg.js';
import { Meter, type CpuSeconds } from './meter.js';
import { perUnit, settledCounters, type PerUnit } from './pgstats.js';
import { round } from './stats.js';

/**
 * The ceiling: the rows the pipeline writes for each account, written by a tight loop over a pg
 * pool: one transaction per account, one multi-row INSERT per table, no queue, no validation, no
 * HTTP, no vendor call. What PostgreSQL on this machine allows; the pipeline is measured against it.
 */
export interface CeilingResult {
  accounts: number;
  concurrency: number;
  seconds: number;
  accounts_per_s: number;
  /** Statements per account (BEGIN and COMMIT included). */
  round_trips_per_account: number;
  cpu_s: CpuSeconds;
  rows: Record<string, number>;
  pg_per_account: PerUnit;
  problems: string[];
}

type Row = readonly unknown[];

class Writer {
  trips = 0;
  constructor(private readonly client: pg.PoolClient) {}

  async query<T extends pg.QueryResultRow>(text: string, params: unknown[] = []): Promise<T[]> {
    this.trips++;
    return (await this.client.query<T>(text, params)).rows;
  }

  /** One multi-row INSERT; nothing sent when there are no rows. */
  async insert<T extends pg.QueryResultRow = pg.QueryResultRow>(table: string, columns: readonly string[], rows: readonly Row[], returning?: string): Promise<T[]> {
    if (rows.length === 0) return [];
    const params: unknown[] = [];
    const tuples = rows.map((r) => `(${r.map((v) => `$${params.push(v)}`).join(', ')})`);
    return this.query<T>(`INSERT INTO ${table} (${columns.join(', ')}) VALUES ${tuples.join(', ')}${returning ? ` RETURNING ${returning}` : ''}`, params);
  }
}

type Json = Record<string, unknown>;
const s = (v: unknown): string | null => (v === undefined || v === null ? null : String(v));

/** Exactly the rows staging, processing and the extras write for one account (not the batch bookkeeping). */
async function writeAccount(w: Writer, b: AccountBundle, ids: { supplier: string; team: string }, seq: number): Promise<void> {
  const a = b.account as Json & {
    customers: Json[];
    supply_addresses: Array<Json & { meter_points: Array<Json & { meters?: Json[]; agreements?: Json[] }> }>;
    metadata?: Json[];
    account_billing_options?: Json;
  };
  await w.query('BEGIN');
  try {
    const [account] = await w.insert<{ id: string }>(
      'accounts',
      ['number', 'import_supplier_id', 'external_account_number', 'operations_team_id', 'account_type', 'billing_name', 'billing_address1', 'billing_address2', 'billing_address3', 'billing_address4', 'billing_address5', 'billing_postcode', 'billing_email', 'communication_preference', 'date_of_sale', 'transfer_balance', 'last_statement_closing_date', 'billing_period_length', 'billing_period_start_day'],
      [[formatAccountNumber(BigInt(seq)), ids.supplier, a.external_account_number, ids.team, a.account_type, s(a.billing_name), s(a.billing_address1), s(a.billing_address2), s(a.billing_address3), s(a.billing_address4), s(a.billing_address5), s(a.billing_postcode), s(a.billing_email), a.communication_preference, s(a.date_of_sale), s(a.transfer_balance), s(a.last_statement_closing_date), s(a.account_billing_options?.period_length), a.account_billing_options?.period_start_day ?? null]],
      'id',
    );
    const accountId = account!.id;
    await w.insert(
      'customers',
      ['account_id', 'position', 'title', 'given_name', 'family_name', 'email', 'mobile', 'landline', 'date_of_birth', 'opted_into_offers', 'opted_into_updates'],
      a.customers.map((c, i) => {
        const prefs = (c.customer_preferences ?? {}) as Json;
        return [accountId, i, s(c.title), c.given_name, c.family_name, s(c.email), s(c.mobile), s(c.landline), s(c.date_of_birth), prefs.opted_into_offers ?? null, prefs.opted_into_updates ?? null];
      }),
    );
    const addresses = await w.insert<{ id: string; position: number }>(
      'supply_addresses',
      ['account_id', 'position', 'supply_address1', 'supply_address2', 'supply_address3', 'supply_address4', 'supply_address5', 'supply_postcode', 'customer_at_supply_address_from_date'],
      a.supply_addresses.map((sa, i) => [accountId, i, sa.supply_address1, s(sa.supply_address2), s(sa.supply_address3), s(sa.supply_address4), s(sa.supply_address5), sa.supply_postcode, sa.customer_at_supply_address_from_date]),
      'id, position',
    );
    const addressId = new Map(addresses.map((r) => [r.position, r.id]));
    const points = a.supply_addresses.flatMap((sa, i) => sa.meter_points.map((mp) => ({ mp, addressId: addressId.get(i)! })));
    const meterPoints = await w.insert<{ id: string; identifier: string }>(
      'meter_points',
      ['account_id', 'supply_address_id', 'supply_type', 'identifier', 'supply_start_date', 'mpid', 'shipper_mpid', 'profile_class', 'ssc'],
      points.map(({ mp, addressId: sa }) => [accountId, sa, mp.supply_type, mp.identifier, mp.supply_start_date, s(mp.mpid), s(mp.shipper_mpid), mp.profile_class ?? null, s(mp.ssc)]),
      'id, identifier',
    );
    const pointId = new Map(meterPoints.map((r) => [r.identifier, r.id]));
    await w.insert('meters', ['meter_point_id', 'meter_serial_number'], points.flatMap(({ mp }) => (mp.meters ?? []).map((m) => [pointId.get(String(mp.identifier)), m.meter_serial_number])));
    await w.insert(
      'agreements',
      ['meter_point_id', 'tariff_code', 'effective_from', 'effective_to'],
      points.flatMap(({ mp }) => (mp.agreements ?? []).map((ag) => [pointId.get(String(mp.identifier)), ag.tariff_code, ag.effective_from, s(ag.effective_to)])),
    );
    await w.insert('account_metadata', ['account_id', 'key', 'value'], (a.metadata ?? []).map((m) => [accountId, m.key, JSON.stringify(m.value ?? null)]));
    const [process] = await w.insert<{ id: string }>(
      'account_import_processes',
      ['import_supplier_id', 'external_account_number', 'payload', 'staged_at', 'account_id'],
      [[ids.supplier, a.external_account_number, JSON.stringify(a), new Date(), accountId]],
      'id',
    );
    await w.insert('meter_point_registrations', ['identifier', 'import_process_id'], points.map(({ mp }) => [mp.identifier, process!.id]));

    // Extras, as the pipeline runs them: notes, transactions (those before the open period are moved
    // into it, with a note saying so), statements, the payment instruction as the vendor described it.
    const notes: Row[] = (b.notes ?? []).map((n) => [accountId, n.body ?? null, n.created_at, n.is_pinned ?? false, n.unpin_at ?? null, 'IMPORTED']);
    const start = addDaysUtc(String(a.last_statement_closing_date), 1);
    const txs = (b.transactions ?? []).map((t) => {
      const given = String(t.transaction_date);
      return { t, date: given < start ? start : given, original: given < start ? given : null };
    });
    const moved = txs.filter((x) => x.original !== null);
    if (moved.length > 0) {
      notes.push([accountId, `Transactions moved into the current statement period (from ${start}) on import: ${moved.map((m) => `${String(m.t.transaction_id)} (originally ${m.original})`).join(', ')}.`, new Date(), true, null, 'TRANSACTIONS_MOVED']);
    }
    await w.insert('account_notes', ['account_id', 'body', 'created_at', 'is_pinned', 'unpin_at', 'origin'], notes);
    const inserted = await w.insert<{ id: string; transaction_id: string }>(
      'account_transactions',
      ['account_id', 'transaction_id', 'type', 'reason', 'amount', 'transaction_date', 'original_transaction_date', 'description', 'reference', 'payment_type', 'display_note', 'note', 'product_code'],
      txs.map(({ t, date, original }) => [accountId, t.transaction_id, t.type, s(t.reason), String(t.amount), date, original, original ? movedDescription(original) : null, s(t.reference), s(t.payment_type), s(t.display_note), s(t.note), s(t.product_code)]),
      'id, transaction_id',
    );
    const txId = new Map(inserted.map((r) => [r.transaction_id, r.id]));
    const lineItems = txs.flatMap(({ t }) => ((t.line_items ?? []) as Json[]).map((li, i) => [txId.get(String(t.transaction_id)), i, s(li.rate_band), li.start_date, li.end_date, li.number_of_units, li.net_amount, s(li.price_per_unit), li.units ?? null]));
    await w.insert('transaction_line_items', ['transaction_row_id', 'position', 'rate_band', 'start_date', 'end_date', 'number_of_units', 'net_amount', 'price_per_unit', 'units'], lineItems);
    const taxItems = txs.flatMap(({ t }) => ((t.tax_items ?? []) as Json[]).map((ti, i) => [txId.get(String(t.transaction_id)), i, ti.amount, ti.tax_type, ti.value_taxed, ti.rate, ti.unit_type]));
    await w.insert('transaction_tax_items', ['transaction_row_id', 'position', 'amount', 'tax_type', 'value_taxed', 'rate', 'unit_type'], taxItems);
    await w.insert(
      'historical_statements',
      ['account_id', 'statement_id', 'bill_period_from_date', 'bill_period_to_date', 'issued_date', 'number', 'gross_amount', 'statement_path'],
      (b.statements ?? []).map((st) => [accountId, st.statement_id, st.bill_period_from_date, st.bill_period_to_date, st.issued_date, st.number, String(st.gross_amount), s(st.statement_path)]),
    );
    if (b.payment_instruction) {
      const pi = b.payment_instruction;
      await w.insert('payment_instructions', ['account_id', 'vendor', 'reference', 'type', 'details'], [[accountId, pi.vendor, pi.reference, pi.type, JSON.stringify({ reference: pi.reference, type: pi.type, status: 'ACTIVE' })]]);
    }
    await w.query('COMMIT');
  } catch (err) {
    await w.query('ROLLBACK').catch(() => undefined);
    throw err;
  }
}

export async function runCeiling(databaseUrl: string, cohort: CohortFile, concurrency: number, settleMs: number): Promise<CeilingResult> {
  const lines = readFileSync(cohort.file, 'utf8').split('\n').filter((l) => l.length > 0);
  const pool = pgPool({ connectionString: databaseUrl, max: concurrency });
  let ended: Promise<void> | undefined;
  const end = () => (ended ??= pool.end().catch(() => undefined));
  // Closed before its database is dropped, also when the run is interrupted.
  onCleanup('close the ceiling pool', end);
  try {
    const one = async <T extends pg.QueryResultRow>(text: string, params: unknown[] = []) => (await pool.query<T>(text, params)).rows[0]!;
    const supplierCode = (JSON.parse(lines[0]!) as AccountBundle).account.import_supplier as string;
    const supplier = await one<{ id: string }>("INSERT INTO import_suppliers (code, name, documents_root) VALUES ($1, $1, '') RETURNING id", [supplierCode]);
    const team = await one<{ id: string }>('INSERT INTO operations_teams (name) VALUES ($1) RETURNING id', [TEAM]);
    const ids = { supplier: supplier.id, team: team.id };
    // Every connection opened before the clock starts, as the services' pools are warm when they are measured.
    const clients = await Promise.all(Array.from({ length: concurrency }, () => pool.connect()));
    clients.forEach((c) => c.release());

    const pgBefore = await settledCounters(databaseUrl, settleMs);
    const meter = new Meter({});
    let next = 0;
    let trips = 0;
    meter.start();
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        const client = await pool.connect();
        const w = new Writer(client);
        try {
          for (let i = next++; i < lines.length; i = next++) await writeAccount(w, JSON.parse(lines[i]!) as AccountBundle, ids, i + 1);
        } finally {
          trips += w.trips;
          client.release();
        }
      }),
    );
    const measured = meter.stop();
    const pgAfter = await settledCounters(databaseUrl, settleMs);

    const counts = await one<Record<string, string>>(`SELECT
      (SELECT count(*) FROM accounts) AS accounts, (SELECT count(*) FROM account_transactions) AS transactions,
      (SELECT count(*) FROM historical_statements) AS statements, (SELECT count(*) FROM payment_instructions) AS payment_instructions,
      (SELECT count(*) FROM account_notes WHERE origin = 'IMPORTED') AS imported_notes`);
    const rows = Object.fromEntries(Object.entries(counts).map(([k, v]) => [k, Number(v)]));
    const problems = rows.accounts === lines.length ? [] : [`ceiling wrote ${rows.accounts} accounts, expected ${lines.length}`];
    return {
      accounts: lines.length,
      concurrency,
      seconds: round(measured.seconds),
      accounts_per_s: round(lines.length / measured.seconds),
      round_trips_per_account: round(trips / lines.length, 1),
      cpu_s: measured.cpu,
      rows,
      pg_per_account: perUnit(pgBefore, pgAfter, lines.length),
      problems,
    };
  } finally {
    await end();
  }
}

