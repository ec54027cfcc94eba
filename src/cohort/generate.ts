import { fakerEN_GB, type Faker } from '@faker-js/faker';
import { isValidPhoneNumber } from 'libphonenumber-js/max';
import { addDaysUtc } from '../clock.js';
import { mpanCheckDigit } from '../imports/shared/fields.js';

/** One line of a cohort file: an account and the history to import onto it. */
export interface AccountBundle {
  account: Record<string, unknown>;
  notes?: Array<Record<string, unknown>>;
  transactions?: Array<Record<string, unknown>>;
  statements?: Array<Record<string, unknown>>;
  payment_instruction?: { vendor: string; reference: string; type: 'CARD' | 'DIRECT_DEBIT' };
}

export interface GeneratedAccount {
  bundle: AccountBundle;
  /** Documents the bundle refers to, relative to the supplier's documents root. */
  documents: Array<{ path: string; body: Buffer }>;
  /** The mistake planted in this bundle, if any (for tests and the demo's summary). */
  mistake: Mistake | null;
}

export type Mistake = 'invalid_postcode' | 'invalid_phone_number' | 'invalid_mpan' | 'required' | 'date_in_future' | 'unknown_field';
const MISTAKES: readonly Mistake[] = ['invalid_postcode', 'invalid_phone_number', 'invalid_mpan', 'required', 'date_in_future', 'unknown_field'];

export interface CohortOptions {
  count: number;
  supplier: string;
  /** Share of bundles (0..1) that carry one realistic mistake. */
  invalidRate?: number;
  seed?: number;
  /** Vendor code for payment instructions; omitted → no payment instructions. */
  vendor?: string;
  /** The generated history ends before this date (YYYY-MM-DD, UTC). */
  today: string;
  /** Prefix of external account numbers (default the supplier code). */
  prefix?: string;
  /** Extras per account (defaults: 3 notes, 10 transactions, 2 statements). */
  notes?: number;
  transactions?: number;
  statements?: number;
}

// Real outward codes; inward codes are a digit and two letters from the set Royal Mail uses.
const OUTWARD = ['NW1', 'SW1A', 'EC1A', 'M1', 'M14', 'B3', 'LS1', 'L1', 'BS1', 'CF10', 'EH1', 'G2', 'NE1', 'S1', 'NG1', 'OX1', 'CB2', 'BN1', 'PL1', 'YO1'];
const INWARD_LETTERS = 'ABDEFGHJLNPQRSTUWXYZ';
const TARIFFS = ['E-1R-VAR-22-11-01-C', 'E-1R-FIX-12M-24-03-01-C', 'G-1R-VAR-22-11-01-C'];
const MINIMAL_PDF = (title: string) =>
  Buffer.from(`%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\n% ${title}\ntrailer << /Root 1 0 R >>\n%%EOF\n`);

/**
 * A realistic UK cohort, valid by construction except for the requested share of mistakes.
 * Deterministic for a seed, and lazy, so a million-line cohort never sits in memory.
 */
export function* generateCohort(opts: CohortOptions): Generator<GeneratedAccount> {
  const f: Faker = fakerEN_GB;
  f.seed(opts.seed ?? 1);
  const prefix = opts.prefix ?? opts.supplier;
  // Meter identifiers must be unique across every cohort in the database, not just this one.
  const base = cohortBase(`${prefix}:${opts.seed ?? 1}`);
  for (let i = 0; i < opts.count; i++) {
    const ext = `${prefix}-${String(i + 1).padStart(7, '0')}`;
    const given = f.person.firstName();
    const family = f.person.lastName();
    const postcode = ukPostcode(f);
    const street = f.location.streetAddress();
    const town = f.location.city();
    const closing = addDaysUtc(opts.today, -f.number.int({ min: 20, max: 40 }));
    const saleDate = addDaysUtc(opts.today, -f.number.int({ min: 400, max: 2000 }));
    const meterSerial = base + i;
    const mpan = mpanFor(meterSerial);
    const account: Record<string, unknown> = {
      import_supplier: opts.supplier,
      external_account_number: ext,
      account_type: f.number.int(10) === 0 ? 'BUSINESS' : 'DOMESTIC',
      billing_name: `${given} ${family}`,
      billing_address1: street,
      billing_address2: town,
      billing_postcode: postcode,
      billing_email: f.internet.email({ firstName: given, lastName: family, provider: 'example.com' }),
      communication_preference: f.number.int(4) === 0 ? 'PRINT' : 'ONLINE',
      date_of_sale: saleDate,
      transfer_balance: money(f, -300, 300),
      last_statement_closing_date: closing,
      account_billing_options: { period_length: 'MONTHLY', period_start_day: f.number.int({ min: 1, max: 28 }) },
      customers: [
        {
          title: f.helpers.arrayElement(['Mr', 'Mrs', 'Ms', 'Mx', 'Dr']),
          given_name: given,
          family_name: family,
          email: f.internet.email({ firstName: given, lastName: family, provider: 'example.org' }),
          mobile: ukMobile(f),
          landline: ukLandline(f),
          date_of_birth: addDaysUtc(opts.today, -f.number.int({ min: 18 * 366, max: 90 * 365 })),
          customer_preferences: { opted_into_marketing: f.datatype.boolean(), opted_into_updates: true },
        },
      ],
      supply_addresses: [
        {
          supply_address1: street,
          supply_address2: town,
          supply_postcode: postcode,
          customer_at_supply_address_from_date: saleDate,
          meter_points: [
            {
              supply_type: 'ELECTRICITY',
              identifier: mpan,
              supply_start_date: saleDate,
              meters: [{ serial_number: `E${f.string.alphanumeric({ length: 9, casing: 'upper' })}` }],
              agreements: [{ tariff_code: f.helpers.arrayElement(TARIFFS.slice(0, 2)), effective_from: saleDate }],
            },
            {
              supply_type: 'GAS',
              identifier: String(1_000_000_000 + (meterSerial % 8_999_999_999)),
              supply_start_date: saleDate,
              meters: [{ serial_number: `G${f.string.alphanumeric({ length: 9, casing: 'upper' })}` }],
            },
          ],
        },
      ],
      metadata: [{ key: 'legacy_account_id', value: `L${i + 1}` }],
    };

    const openStart = addDaysUtc(closing, 1);
    const documents: GeneratedAccount['documents'] = [];
    const statements = Array.from({ length: opts.statements ?? 2 }, (_, s) => {
      const to = addDaysUtc(closing, -31 * s);
      const from = addDaysUtc(to, -30);
      const path = `statements/${ext}/${to}.pdf`;
      documents.push({ path, body: MINIMAL_PDF(`${ext} ${from}..${to}`) });
      return { bill_period_from_date: from, bill_period_to_date: to, statement_id: `${ext}-S${s + 1}`, issued_date: addDaysUtc(to, 2), number: `INV-${i + 1}-${s + 1}`, gross_amount: money(f, 20, 250), statement_path: path };
    });
    const notes = Array.from({ length: opts.notes ?? 3 }, (_, n) => ({
      body: `${f.helpers.arrayElement(['Called about', 'Emailed about', 'Wrote about'])} ${f.helpers.arrayElement(['a meter reading', 'their tariff', 'a direct debit change', 'moving home'])} (${n + 1}).`,
      created_at: `${addDaysUtc(closing, -n * 15)}T10:${String(10 + n).padStart(2, '0')}:00Z`,
      ...(n === 0 ? { is_pinned: true, unpin_at: `${addDaysUtc(opts.today, 60)}T00:00:00Z` } : {}),
    }));
    const transactions = Array.from({ length: opts.transactions ?? 10 }, (_, t) => transaction(f, ext, t, openStart, opts.today));

    const bundle: AccountBundle = { account, notes, transactions, statements };
    if (opts.vendor) {
      const type = f.number.int(3) === 0 ? 'CARD' : 'DIRECT_DEBIT';
      bundle.payment_instruction = { vendor: opts.vendor, reference: `${type === 'CARD' ? 'CARD' : 'DD'}-${ext}`, type };
    }
    const mistake = f.number.float() < (opts.invalidRate ?? 0) ? f.helpers.arrayElement(MISTAKES) : null;
    if (mistake) plantMistake(account, mistake, opts.today);
    yield { bundle, documents, mistake };
  }
}

function transaction(f: Faker, ext: string, t: number, openStart: string, today: string): Record<string, unknown> {
  const id = `${ext}-T${String(t + 1).padStart(3, '0')}`;
  // Most fall inside the open period; one in five predates it and will be moved on import.
  const date = t % 5 === 4 ? addDaysUtc(openStart, -10) : openStart <= today ? openStart : today;
  switch (t % 4) {
    case 0:
      return { transaction_id: id, transaction_date: date, amount: money(f, 5, 150), type: 'CHARGE', reason: 'IMPORTED_CHARGE', display_note: 'Imported charge' };
    case 1:
      return { transaction_id: id, transaction_date: date, amount: money(f, 5, 150), type: 'PAYMENT', reason: 'ACCOUNT_CHARGE_PAYMENT', payment_type: 'DD_REGULAR_COLLECTION', reference: `PAY-${id}` };
    case 2:
      return { transaction_id: id, transaction_date: date, amount: money(f, 1, 30), type: 'CREDIT', reason: 'GOODWILL_PAYMENT', note: 'Goodwill gesture' };
    default: {
      const units = f.number.int({ min: 80, max: 600 });
      const price = '0.2475';
      const net = (units * 2475 / 10000).toFixed(4); // integer arithmetic on ten-thousandths: exact
      return {
        transaction_id: id,
        transaction_date: date,
        amount: net,
        type: 'SUPPLY_CHARGE',
        product_code: 'E-1R-VAR-22-11-01-C',
        line_items: [{ rate_band: 'CONSUMPTION_STANDARD', start_date: addDaysUtc(date, -30), end_date: date, number_of_units: String(units), net_amount: net, price_per_unit: price }],
        tax_items: [{ amount: '0.00', tax_type: 'VAT', value_taxed: net, rate: '0.05', unit_type: 'PROPORTION' }],
      };
    }
  }
}

function plantMistake(account: Record<string, unknown>, mistake: Mistake, today: string): void {
  const customer = (account.customers as Array<Record<string, unknown>>)[0]!;
  const meterPoint = (account.supply_addresses as Array<{ meter_points: Array<Record<string, unknown>> }>)[0]!.meter_points[0]!;
  switch (mistake) {
    case 'invalid_postcode':
      account.billing_postcode = 'XX1 1XXX';
      break;
    case 'invalid_phone_number':
      customer.landline = '0123';
      break;
    case 'invalid_mpan': {
      const id = String(meterPoint.identifier);
      meterPoint.identifier = id.slice(0, 12) + String((Number(id[12]) + 1) % 10);
      break;
    }
    case 'required':
      delete customer.family_name;
      break;
    case 'date_in_future':
      customer.date_of_birth = addDaysUtc(today, 30);
      break;
    case 'unknown_field':
      account.loyalty_points = 120;
      break;
  }
}

/** Decimal strings from whole pennies: never a float in the money. */
const money = (f: Faker, min: number, max: number): string => {
  const pence = f.number.int({ min: min * 100, max: max * 100 });
  const sign = pence < 0 ? '-' : '';
  const abs = Math.abs(pence);
  return `${sign}${Math.floor(abs / 100)}.${String(abs % 100).padStart(2, '0')}`;
};

function ukPostcode(f: Faker): string {
  const inward = `${f.number.int(9)}${f.helpers.arrayElement([...INWARD_LETTERS])}${f.helpers.arrayElement([...INWARD_LETTERS])}`;
  return `${f.helpers.arrayElement(OUTWARD)} ${inward}`;
}

function ukMobile(f: Faker): string {
  for (;;) {
    const n = `07${f.helpers.arrayElement(['4', '5', '7', '8', '9'])}${f.string.numeric(8)}`;
    if (!n.startsWith('07700900') && isValidPhoneNumber(n, 'GB')) return `${n.slice(0, 5)} ${n.slice(5)}`;
  }
}

function ukLandline(f: Faker): string {
  for (;;) {
    const n = `0161${f.helpers.arrayElement(['2', '3', '4', '5', '8'])}${f.string.numeric(6)}`;
    if (isValidPhoneNumber(n, 'GB')) return `${n.slice(0, 4)} ${n.slice(4, 7)} ${n.slice(7)}`;
  }
}

/** An MPAN core from a serial: distributor 10-23, ten digits of serial, a valid check digit. */
function mpanFor(serial: number): string {
  const first12 = `${10 + (serial % 14)}${String(serial % 10_000_000_000).padStart(10, '0')}`;
  return first12 + String(mpanCheckDigit(first12));
}

/** Where a cohort's meter serials start: a hash of its prefix and seed (FNV-1a), times a wide stride. */
function cohortBase(key: string): number {
  let h = 0x811c9dc5;
  for (const ch of key) h = Math.imul(h ^ ch.charCodeAt(0), 0x01000193) >>> 0;
  return (h % 4_000) * 2_000_000;
}
