import type { Executor } from '../../db/database.js';
import type { AccountData } from './account.schemas.js';

// The account and the tables under it (customers with their PSR entries, supply addresses, meter
// points, meters, registers, readings, agreements, metadata): written in one transaction when the
// account is created, with multi-row inserts (one round trip per table), and read back whole.

type SupplyAddress = NonNullable<AccountData['supply_addresses']>[number];
type MeterPoint = SupplyAddress['meter_points'][number];
type Meter = NonNullable<MeterPoint['meters']>[number];
type Customer = NonNullable<AccountData['customers']>[number];

const orNull = <T>(v: T | undefined): T | null => (v === undefined ? null : v);

/** The account types of the document that are domestic; everything else is billed as a business. */
const DEFAULT_ACCOUNT_TYPE = 'DOMESTIC';
const DEFAULT_COMMUNICATION_PREFERENCE = 'ONLINE';

/** One account to write: its number, owner and validated data. */
export interface NewAccount {
  number: string;
  supplierId: string;
  teamId: string;
  data: AccountData;
  now: Date;
}

export type { Customer, Meter, MeterPoint, SupplyAddress };

// The rows of each table, built from the validated data and their parents' ids. The inserts below
// use them, and so does the bench (bench/lib/rows.ts), whose ceiling and limit write exactly what
// the service writes.

export const accountRow = (input: NewAccount) => {
  const d = input.data;
  return {
    number: input.number,
    import_supplier_id: input.supplierId,
    external_account_number: d.external_account_number,
    operations_team_id: input.teamId,
    // The document's defaults, applied where the platform needs a value.
    account_type: d.account_type ?? DEFAULT_ACCOUNT_TYPE,
    communication_preference: d.communication_preference ?? DEFAULT_COMMUNICATION_PREFERENCE,
    billing_name: orNull(d.billing_name),
    billing_address1: orNull(d.billing_address1),
    billing_address2: orNull(d.billing_address2),
    billing_address3: orNull(d.billing_address3),
    billing_address4: orNull(d.billing_address4),
    billing_address5: orNull(d.billing_address5),
    billing_postcode: orNull(d.billing_postcode),
    billing_email: orNull(d.billing_email),
    billing_attention_of: orNull(d.billing_attention_of),
    billing_delivery_point_identifier: orNull(d.billing_delivery_point_identifier),
    date_of_sale: orNull(d.date_of_sale),
    transfer_balance: orNull(d.transfer_balance),
    last_statement_closing_date: orNull(d.last_statement_closing_date),
    billing_period_length: orNull(d.account_billing_options?.period_length),
    billing_period_start_day: orNull(d.account_billing_options?.period_start_day),
    sales_channel: orNull(d.sales_channel),
    sales_subchannel: orNull(d.sales_subchannel),
    unknown_occupier: orNull(d.unknown_occupier),
    dd_reference: orNull(d.dd_reference),
    document_accessibility: orNull(d.document_accessibility),
    language_preference: orNull(d.language_preference),
    last_billed_to_date: orNull(d.last_billed_to_date),
    last_statement_balance: orNull(d.last_statement_balance),
    last_statement_issue_date: orNull(d.last_statement_issue_date),
    next_bill_due_date: orNull(d.next_bill_due_date),
    last_payment_review_date: orNull(d.last_payment_review_date),
    smart_read_frequency: orNull(d.smart_read_frequency),
    smart_read_cycle_day: orNull(d.smart_read_cycle_day),
    created_at: input.now,
  };
};

export const customerRow = (accountId: string, position: number, c: Customer) => {
  const p = c.customer_preferences;
  return {
    account_id: accountId,
    position,
    title: orNull(c.title),
    given_name: orNull(c.given_name),
    family_name: orNull(c.family_name),
    email: orNull(c.email),
    mobile: orNull(c.mobile),
    landline: orNull(c.landline),
    date_of_birth: orNull(c.date_of_birth),
    salutation: orNull(c.salutation),
    pronouns: orNull(c.pronouns),
    role: orNull(c.role),
    opted_into_offers: orNull(p?.opted_into_offers),
    opted_into_recommended: orNull(p?.opted_into_recommended),
    opted_into_sms: orNull(p?.opted_into_sms),
    opted_into_third_parties: orNull(p?.opted_into_third_parties),
    opted_into_updates: orNull(p?.opted_into_updates),
    opted_into_associated_companies: orNull(p?.opted_into_associated_companies),
    opted_into_whatsapp: orNull(p?.opted_into_whatsapp),
    is_user_psr_consent_obtained: orNull(p?.is_user_psr_consent_obtained),
  };
};

export const psrRows = (customerId: string, c: Customer) =>
  (c.psr ?? []).map((entry, position) => ({
    customer_id: customerId,
    position,
    elec_industry_code: orNull(entry.elec_industry_code),
    gas_industry_code: orNull(entry.gas_industry_code),
    description: orNull(entry.description),
    additional_information: orNull(entry.additional_information),
    effective_from: orNull(entry.effective_from),
    effective_to: orNull(entry.effective_to),
  }));

export const supplyAddressRow = (accountId: string, position: number, s: SupplyAddress) => ({
  account_id: accountId,
  position,
  supply_address1: s.supply_address1,
  supply_address2: orNull(s.supply_address2),
  supply_address3: orNull(s.supply_address3),
  supply_address4: orNull(s.supply_address4),
  supply_address5: orNull(s.supply_address5),
  supply_postcode: s.supply_postcode,
  customer_at_supply_address_from_date: s.customer_at_supply_address_from_date,
  customer_at_supply_address_to_date: orNull(s.customer_at_supply_address_to_date),
  supply_delivery_point_identifier: orNull(s.supply_delivery_point_identifier),
  is_landlord: orNull(s.is_landlord),
  label: orNull(s.label),
  property_external_identifier: orNull(s.property_external_identifier),
});

export const meterPointRow = (accountId: string, supplyAddressId: string, position: number, mp: MeterPoint) => {
  const e = electricity(mp);
  const g = gas(mp);
  return {
    account_id: accountId,
    supply_address_id: supplyAddressId,
    position,
    supply_type: mp.supply_type,
    identifier: mp.identifier,
    supply_start_date: mp.supply_start_date,
    supply_end_date: orNull(mp.supply_end_date),
    last_billed_to_date: orNull(mp.last_billed_to_date),
    mpid: mp.mpid,
    shipper_mpid: orNull(g?.shipper_mpid),
    ldz: orNull(g?.ldz),
    profile_class: orNull(e?.profile_class),
    ssc: orNull(e?.ssc),
    measurement_class: orNull(e?.measurement_class),
    export_type: orNull(e?.export_type),
    is_deenergised: orNull(e?.is_deenergised),
    et_in_progress: orNull(mp.et_in_progress),
    dr_in_progress: orNull(mp.dr_in_progress),
  };
};

export const agreementRows = (meterPointId: string, mp: MeterPoint) =>
  (mp.agreements ?? []).map((a, position) => ({
    meter_point_id: meterPointId,
    position,
    tariff_code: a.tariff_code,
    effective_from: a.effective_from,
    effective_to: orNull(a.effective_to),
    agreed_at: orNull(a.agreed_at),
    rates_agreed_at: orNull(a.rates_agreed_at),
    business_contract_identifier: orNull(a.business_contract_identifier),
  }));

export const meterRow = (meter_point_id: string, position: number, m: Meter) => ({
  meter_point_id,
  position,
  meter_serial_number: m.meter_serial_number,
  installed_on: orNull(m.installed_on),
  removed_on: orNull(m.removed_on),
  is_prepay: orNull(m.is_prepay),
  prepay_customer_reference_number: orNull(m.prepay_customer_reference_number),
  smart_type: orNull(m.smart_type),
  smart_device_id: orNull(m.smart_device_id),
  smart_commissioned_on: orNull(m.smart_commissioned_on),
  gas_number_of_digits: 'gas_number_of_digits' in m ? m.gas_number_of_digits : null,
  units_of_measure: 'units_of_measure' in m ? orNull(m.units_of_measure) : null,
  last_billed_to_date: 'last_billed_to_date' in m ? orNull(m.last_billed_to_date) : null,
});

export const registerRows = (meterId: string, meter: Meter) =>
  ('registers' in meter ? (meter.registers ?? []) : []).map((r, position) => ({
    meter_id: meterId,
    position,
    register_id: r.register_id,
    tpr: orNull(r.tpr),
    number_of_digits: r.number_of_digits,
    is_settlement: orNull(r.is_settlement),
    last_billed_to_date: orNull(r.last_billed_to_date),
  }));

export const readingRows = (meterId: string, meter: Meter) => [
  ...(meter.transfer_readings ?? []).map((r, position) => ({
    meter_id: meterId,
    kind: 'TRANSFER' as const,
    position,
    register_id: 'register_id' in r ? orNull(r.register_id) : null,
    reading_date: r.reading_date,
    reading_value: r.reading_value,
    reading_type: r.reading_type,
    billed: null,
    validation_status: null,
  })),
  ...(meter.reading_history ?? []).map((r, position) => ({
    meter_id: meterId,
    kind: 'HISTORY' as const,
    position,
    register_id: 'register_id' in r ? orNull(r.register_id) : null,
    reading_date: r.reading_date,
    reading_value: r.reading_value,
    reading_type: r.reading_type,
    billed: r.billed,
    validation_status: orNull(r.validation_status),
  })),
];

export const metadataRows = (accountId: string, d: AccountData) =>
  (d.metadata ?? []).map((m) => ({ account_id: accountId, key: m.key, value: JSON.stringify(m.value ?? null) }));

function electricity(mp: MeterPoint) {
  return 'shipper_mpid' in mp ? undefined : mp;
}

function gas(mp: MeterPoint) {
  return 'shipper_mpid' in mp ? mp : undefined;
}

/**
 * PostgreSQL takes at most 65,535 parameters a statement: a multi-row insert is cut into statements
 * of at most this many, so a set of large accounts (or one account with thousands of readings) is
 * still written, in as few round trips as the limit allows.
 */
const MAX_PARAMETERS = 60_000;

/** Runs `insert` over `rows` in chunks that stay under the parameter limit, and joins what they return. */
async function chunked<R, T>(rows: readonly R[], insert: (chunk: R[]) => Promise<T[]>): Promise<T[]> {
  if (rows.length === 0) return [];
  const columns = Math.max(1, Object.keys(rows[0] as object).length);
  const size = Math.max(1, Math.floor(MAX_PARAMETERS / columns));
  if (rows.length <= size) return insert([...rows]);
  const out: T[] = [];
  for (let i = 0; i < rows.length; i += size) out.push(...(await insert(rows.slice(i, i + size))));
  return out;
}

/** Every row written here has to be written: a chunk helper for inserts that return nothing. */
const insertAll = async <R>(rows: readonly R[], insert: (chunk: R[]) => Promise<unknown>): Promise<void> => {
  await chunked(rows, async (chunk) => {
    await insert(chunk);
    return [];
  });
};

/**
 * Writes a set of accounts and everything under them with one multi-row insert per table for the
 * whole set (the pipeline's set-based process stage; the REST door is a set of one). Children find
 * their parents by natural keys the inserts return (account number, position, meter point
 * identifier), never by the order of RETURNING. Answers each account's id, in the order given.
 */
export async function insertAccounts(trx: Executor, inputs: readonly NewAccount[]): Promise<Array<{ id: string; created_at: Date }>> {
  if (inputs.length === 0) return [];
  const accountRows = await chunked(inputs.map(accountRow), (chunk) => trx.insertInto('accounts').values(chunk).returning(['id', 'number', 'created_at']).execute());
  const byNumber = new Map(accountRows.map((r) => [r.number, r]));
  const accounts = inputs.map((input) => ({ ...byNumber.get(input.number)!, data: input.data }));

  await insertCustomers(trx, accounts.flatMap((a) => (a.data.customers ?? []).map((c, position) => ({ accountId: a.id, position, c }))));
  await insertSupply(trx, accounts.flatMap((a) => (a.data.supply_addresses ?? []).map((s, position) => ({ accountId: a.id, position, s }))));
  await insertAll(accounts.flatMap((a) => metadataRows(a.id, a.data)), (chunk) => trx.insertInto('account_metadata').values(chunk).execute());
  return accounts.map((a) => ({ id: a.id, created_at: a.created_at }));
}

async function insertCustomers(trx: Executor, customers: ReadonlyArray<{ accountId: string; position: number; c: Customer }>): Promise<void> {
  if (customers.length === 0) return;
  const rows = await chunked(
    customers.map(({ accountId, position, c }) => customerRow(accountId, position, c)),
    (chunk) => trx.insertInto('customers').values(chunk).returning(['id', 'account_id', 'position']).execute(),
  );
  const customerId = new Map(rows.map((r) => [`${r.account_id}/${String(r.position)}`, r.id]));
  const psr = customers.flatMap(({ accountId, position, c }) => psrRows(customerId.get(`${accountId}/${String(position)}`) as string, c));
  await insertAll(psr, (chunk) => trx.insertInto('customer_psr_entries').values(chunk).execute());
}

async function insertSupply(trx: Executor, addresses: ReadonlyArray<{ accountId: string; position: number; s: SupplyAddress }>): Promise<void> {
  if (addresses.length === 0) return;
  const addressRows = await chunked(
    addresses.map(({ accountId, position, s }) => supplyAddressRow(accountId, position, s)),
    (chunk) => trx.insertInto('supply_addresses').values(chunk).returning(['id', 'account_id', 'position']).execute(),
  );
  const addressId = new Map(addressRows.map((a) => [`${a.account_id}/${String(a.position)}`, a.id]));

  const meterPoints = addresses.flatMap(({ accountId, position: at, s }) =>
    s.meter_points.map((mp, position) => ({ mp, position, accountId, addressId: addressId.get(`${accountId}/${String(at)}`) as string })),
  );
  if (meterPoints.length === 0) return;
  const mpRows = await chunked(
    meterPoints.map(({ mp, position, accountId, addressId: supplyAddressId }) => meterPointRow(accountId, supplyAddressId, position, mp)),
    // A meter point's identifier is unique across accounts (meter_points_identifier_key): its key here.
    (chunk) => trx.insertInto('meter_points').values(chunk).returning(['id', 'identifier']).execute(),
  );
  const meterPointId = new Map(mpRows.map((m) => [m.identifier, m.id]));

  const agreements = meterPoints.flatMap(({ mp }) => agreementRows(meterPointId.get(mp.identifier) as string, mp));
  await insertAll(agreements, (chunk) => trx.insertInto('agreements').values(chunk).execute());

  const meters: { meter: Meter; meterPointId: string; position: number }[] = meterPoints.flatMap(({ mp }) =>
    (mp.meters ?? []).map((meter, position) => ({ meter, meterPointId: meterPointId.get(mp.identifier) as string, position })),
  );
  if (meters.length === 0) return;
  const meterRows = await chunked(
    meters.map(({ meter, meterPointId: id, position }) => meterRow(id, position, meter)),
    (chunk) => trx.insertInto('meters').values(chunk).returning(['id', 'meter_point_id', 'position']).execute(),
  );
  // Matched by (meter point, position): PostgreSQL does not promise RETURNING in VALUES order.
  const meterIdOf = new Map(meterRows.map((r) => [`${r.meter_point_id}/${String(r.position)}`, r.id]));
  const meterIds = meters.map((m) => meterIdOf.get(`${m.meterPointId}/${String(m.position)}`) as string);

  await insertAll(meters.flatMap(({ meter }, i) => registerRows(meterIds[i]!, meter)), (chunk) => trx.insertInto('meter_registers').values(chunk).execute());
  await insertAll(meters.flatMap(({ meter }, i) => readingRows(meterIds[i]!, meter)), (chunk) => trx.insertInto('meter_readings').values(chunk).execute());
}

/* ------------------------------------------------------------------------------------------ */
/* Reading the account back                                                                    */
/* ------------------------------------------------------------------------------------------ */

type Row = Record<string, unknown>;

/** The rows of one account's tree, each level keyed by its parent's id, in payload order. */
export interface AccountTreeRows {
  account: Row & { id: string; number: string; created_at: Date };
  payload: unknown;
  customers: Row[];
  psr: Row[];
  supplyAddresses: Row[];
  meterPoints: Row[];
  meters: Row[];
  registers: Row[];
  readings: Row[];
  agreements: Row[];
  /** Each meter point's registration history (decisions.md §8), oldest first. */
  registrationHistory: Row[];
  metadata: { key: string; value: unknown }[];
  counts: { notes: number; transactions: number; statements: number; payment_instructions: number };
}

/** The created account of a pair with everything under it; undefined when the pair has no account. */
export async function readAccountTree(db: Executor, supplierId: string, externalAccountNumber: string): Promise<AccountTreeRows | undefined> {
  const account = await db
    .selectFrom('accounts')
    .selectAll()
    .where('import_supplier_id', '=', supplierId)
    .where('external_account_number', '=', externalAccountNumber)
    .executeTakeFirst();
  if (!account) return undefined;
  const id = account.id;
  // One query at a time: a read-back holds one pooled connection at most, however many run at once.
  const process = await db.selectFrom('account_import_processes').select('payload').where('account_id', '=', id).executeTakeFirst();
  const customers = await db.selectFrom('customers').selectAll().where('account_id', '=', id).orderBy('position').execute();
  const supplyAddresses = await db.selectFrom('supply_addresses').selectAll().where('account_id', '=', id).orderBy('position').execute();
  const meterPoints = await db.selectFrom('meter_points').selectAll().where('account_id', '=', id).orderBy('supply_address_id').orderBy('position').orderBy('id').execute();
  const metadata = await db.selectFrom('account_metadata').select(['key', 'value']).where('account_id', '=', id).orderBy('key').execute();
  const counts = await db
    .selectNoFrom((eb) => [
      eb.selectFrom('account_notes').select(eb.fn.countAll<string>().as('n')).where('account_id', '=', id).as('notes'),
      eb.selectFrom('account_transactions').select(eb.fn.countAll<string>().as('n')).where('account_id', '=', id).as('transactions'),
      eb.selectFrom('historical_statements').select(eb.fn.countAll<string>().as('n')).where('account_id', '=', id).as('statements'),
      eb.selectFrom('payment_instructions').select(eb.fn.countAll<string>().as('n')).where('account_id', '=', id).as('payment_instructions'),
    ])
    .executeTakeFirstOrThrow();
  const customerIds = customers.map((c) => c.id);
  const meterPointIds = meterPoints.map((m) => m.id);
  const psr = customerIds.length > 0 ? await db.selectFrom('customer_psr_entries').selectAll().where('customer_id', 'in', customerIds).orderBy('customer_id').orderBy('position').execute() : [];
  const meters = meterPointIds.length > 0 ? await db.selectFrom('meters').selectAll().where('meter_point_id', 'in', meterPointIds).orderBy('meter_point_id').orderBy('position').orderBy('id').execute() : [];
  const registrationHistory =
    meterPointIds.length > 0
      ? await db
          .selectFrom('registration_history')
          .select(['meter_point_id', 'at', 'cause', 'request_id', 'event_id', 'event_type', 'occurred_at', 'from_status', 'to_status', 'applied', 'reason'])
          .where('meter_point_id', 'in', meterPointIds)
          .orderBy('meter_point_id')
          .orderBy('id')
          .execute()
      : [];
  const agreements = meterPointIds.length > 0 ? await db.selectFrom('agreements').selectAll().where('meter_point_id', 'in', meterPointIds).orderBy('meter_point_id').orderBy('position').orderBy('id').execute() : [];
  const meterIds = meters.map((m) => m.id);
  const registers = meterIds.length > 0 ? await db.selectFrom('meter_registers').selectAll().where('meter_id', 'in', meterIds).orderBy('meter_id').orderBy('position').execute() : [];
  const readings = meterIds.length > 0 ? await db.selectFrom('meter_readings').selectAll().where('meter_id', 'in', meterIds).orderBy('meter_id').orderBy('kind').orderBy('position').execute() : [];
  return {
    account,
    payload: process?.payload ?? null,
    customers,
    psr,
    supplyAddresses,
    meterPoints,
    meters,
    registers,
    readings,
    agreements,
    registrationHistory,
    metadata: metadata.map((m) => ({ key: m.key, value: m.value })),
    counts: {
      notes: Number(counts.notes ?? 0),
      transactions: Number(counts.transactions ?? 0),
      statements: Number(counts.statements ?? 0),
      payment_instructions: Number(counts.payment_instructions ?? 0),
    },
  };
}
