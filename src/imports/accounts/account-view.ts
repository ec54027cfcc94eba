import { formatInstant } from '../../clock.js';
import type { AccountTreeRows } from './account-tree.repository.js';

// The imported account as the read-back endpoint and `importctl account show` give it: the tables
// turned back into the shape of the account data object (the same field names a supplier sent),
// with the service's own identifiers beside them. A field that was not given is left out rather
// than shown as null, so what comes back reads like what went in.

type Row = Record<string, unknown>;

/** Columns that are this service's bookkeeping, not fields of the account data object. */
const INTERNAL = new Set(['id', 'account_id', 'customer_id', 'supply_address_id', 'meter_point_id', 'meter_id', 'position', 'import_supplier_id', 'operations_team_id', 'number', 'created_at', 'kind']);

/** A row as payload fields: bookkeeping dropped, nulls left out, instants in the interface's form. */
const REGISTRATION_COLUMNS = ['registration_status', 'registration_request_id', 'registration_error', 'registration_updated_at'];

function fields(row: Row, drop: readonly string[] = []): Row {
  const out: Row = {};
  for (const [k, v] of Object.entries(row)) {
    if (INTERNAL.has(k) || drop.includes(k) || v === null || v === undefined) continue;
    out[k] = v instanceof Date ? formatInstant(v) : v;
  }
  return out;
}

function byParent(rows: readonly Row[], key: string): Map<string, Row[]> {
  const map = new Map<string, Row[]>();
  for (const r of rows) {
    const parent = String(r[key]);
    const siblings = map.get(parent);
    if (siblings) siblings.push(r);
    else map.set(parent, [r]);
  }
  return map;
}

const PREFERENCES = [
  'opted_into_offers',
  'opted_into_recommended',
  'opted_into_sms',
  'opted_into_third_parties',
  'opted_into_updates',
  'opted_into_associated_companies',
  'opted_into_whatsapp',
  'is_user_psr_consent_obtained',
] as const;

export interface ImportedAccountView {
  service_account_number: string;
  account_created_at: string;
  import_supplier: string;
  external_account_number: string;
  account: Row;
  customers: Row[];
  supply_addresses: Row[];
  metadata: { key: string; value: unknown }[];
  counts: AccountTreeRows['counts'];
  /** The validated account data object the account was created from, whole. */
  payload: unknown;
}

export function accountView(supplierCode: string, rows: AccountTreeRows): ImportedAccountView {
  const a = rows.account;
  const account = fields(a, ['external_account_number', 'billing_period_length', 'billing_period_start_day']);
  if (a.billing_period_length !== null || a.billing_period_start_day !== null) {
    account.account_billing_options = fields({ period_length: a.billing_period_length, period_start_day: a.billing_period_start_day });
  }

  const psr = byParent(rows.psr, 'customer_id');
  const customers = rows.customers.map((c) => {
    const out = fields(c, PREFERENCES);
    const prefs = fields(Object.fromEntries(PREFERENCES.map((p) => [p, c[p]])));
    if (Object.keys(prefs).length > 0) out.customer_preferences = prefs;
    const entries = psr.get(String(c.id)) ?? [];
    if (entries.length > 0) out.psr = entries.map((e) => fields(e));
    return out;
  });

  const registers = byParent(rows.registers, 'meter_id');
  const readings = byParent(rows.readings, 'meter_id');
  const meters = byParent(rows.meters, 'meter_point_id');
  const agreements = byParent(rows.agreements, 'meter_point_id');
  const registrationHistory = byParent(rows.registrationHistory, 'meter_point_id');
  const meterPoints = byParent(rows.meterPoints, 'supply_address_id');
  const supplyAddresses = rows.supplyAddresses.map((s) => ({
    ...fields(s),
    meter_points: (meterPoints.get(String(s.id)) ?? []).map((mp) => {
      const out = fields(mp, REGISTRATION_COLUMNS);
      // Where its registration stands (decisions.md §8), with every change and event, applied or not.
      out.registration = {
        status: mp.registration_status,
        ...fields({ request_id: mp.registration_request_id, error: mp.registration_error, updated_at: mp.registration_updated_at }),
        history: (registrationHistory.get(String(mp.id)) ?? []).map((h) => ({ ...fields(h), applied: h.applied })),
      };
      const ms = meters.get(String(mp.id)) ?? [];
      if (ms.length > 0) {
        out.meters = ms.map((m) => {
          const meter = fields(m);
          const regs = registers.get(String(m.id)) ?? [];
          if (regs.length > 0) meter.registers = regs.map((r) => fields(r));
          const rs = readings.get(String(m.id)) ?? [];
          const transfer = rs.filter((r) => r.kind === 'TRANSFER');
          const history = rs.filter((r) => r.kind === 'HISTORY');
          if (transfer.length > 0) meter.transfer_readings = transfer.map((r) => fields(r, ['billed', 'validation_status']));
          if (history.length > 0) meter.reading_history = history.map((r) => fields(r));
          return meter;
        });
      }
      const ags = agreements.get(String(mp.id)) ?? [];
      if (ags.length > 0) out.agreements = ags.map((g) => fields(g));
      return out;
    }),
  }));

  return {
    service_account_number: a.number,
    account_created_at: formatInstant(a.created_at),
    import_supplier: supplierCode,
    external_account_number: String(a.external_account_number),
    account,
    customers,
    supply_addresses: supplyAddresses,
    metadata: rows.metadata,
    counts: rows.counts,
    payload: rows.payload,
  };
}
