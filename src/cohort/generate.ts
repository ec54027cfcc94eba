import { base, en, en_GB, Faker } from '@faker-js/faker';
import { addDaysUtc } from '../clock.js';
import { money, transaction } from './extras.js';
import { MISTAKES, NEEDS_DOMESTIC, plantMistake, type Mistake } from './mistakes.js';
import { business as businessParty, customer, ukAddress } from './people.js';
import { electricityPoint, gasPoint, mpanFor, mprnFor } from './supply.js';

export type { Mistake } from './mistakes.js';

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

const MINIMAL_PDF = (title: string) => Buffer.from(`%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\n% ${title}\ntrailer << /Root 1 0 R >>\n%%EOF\n`);

/**
 * A realistic UK cohort in the published EnergyAccount form, valid by construction except for the
 * requested share of mistakes. Deterministic for a seed, and lazy, so a million-line cohort never
 * sits in memory.
 *
 * Every account is dual fuel at one supply address. Its dates run in order: the customer moved in,
 * then joined (date_of_sale), supply started a few weeks later (agreements start with it), meter
 * reads every quarter, the last statement closed weeks before `today`, and billing stopped the day
 * after it (last_billed_to_date): every transfer reading is taken that day, every EAC and AQ is in
 * force by then, and the open period's transactions follow it.
 */
export function* generateCohort(opts: CohortOptions): Generator<GeneratedAccount> {
  const seed = opts.seed ?? 1;
  // Own instances, not faker's shared one: two cohorts generated side by side stay deterministic.
  const f = new Faker({ locale: [en_GB, en, base], seed });
  // Which lines are spoiled comes from a stream of its own, so it does not shift when the accounts
  // gain fields; the kinds take turns, so any cohort with enough mistakes has every kind.
  const spoil = new Faker({ locale: [base], seed: seed + 0x5eed });
  let planted = 0;
  const prefix = opts.prefix ?? opts.supplier;
  // Meter identifiers must be unique across every cohort in the database, not just this one.
  const serialBase = cohortBase(`${prefix}:${seed}`);
  for (let i = 0; i < opts.count; i++) {
    const mistake = spoil.number.float() < (opts.invalidRate ?? 0) ? MISTAKES[planted++ % MISTAKES.length]! : null;
    const ext = `${prefix}-${String(i + 1).padStart(7, '0')}`;
    const generated = account(f, { ...opts, ext, serial: serialBase + i, index: i, forceDomestic: mistake !== null && NEEDS_DOMESTIC.has(mistake) });
    if (mistake) plantMistake(generated.bundle.account, mistake, opts.today);
    yield { ...generated, mistake };
  }
}

interface AccountOptions extends CohortOptions {
  ext: string;
  serial: number;
  index: number;
  forceDomestic: boolean;
}

function account(f: Faker, o: AccountOptions): Omit<GeneratedAccount, 'mistake'> {
  const isBusiness = !o.forceDomestic && f.number.int(9) === 0;
  const home = ukAddress(f);
  const billingAddress = isBusiness && f.number.int(3) === 0 ? ukAddress(f) : home;

  // The account's dates, oldest first.
  const closing = addDaysUtc(o.today, -f.number.int({ min: 20, max: 40 }));
  const lastBilledTo = addDaysUtc(closing, 1);
  const saleDate = addDaysUtc(o.today, -f.number.int({ min: 400, max: 2000 }));
  const supplyStart = addDaysUtc(saleDate, f.number.int({ min: 14, max: 28 }));
  const movedIn = addDaysUtc(saleDate, -f.number.int({ min: 0, max: 3000 }));
  const dates = { supplyStart, lastBilledTo };

  const elec = electricityPoint(f, mpanFor(o.serial, home.region), { region: home.region, business: isBusiness, dates });
  const gas = gasPoint(f, mprnFor(o.serial), { region: home.region, business: isBusiness, dates });

  const customerOptions = { today: o.today, fuels: ['ELECTRICITY', 'GAS'] as const, since: movedIn, until: lastBilledTo };
  const party = isBusiness ? businessParty(f) : null;
  // A business contact always gives an office number; two in three households still have a landline.
  const holder = customer(f, { ...customerOptions, withPsr: !isBusiness && f.number.int(7) === 0, landline: isBusiness || f.number.int(3) > 0 });
  const customers = [holder];
  // Some homes are in joint names.
  if (!isBusiness && f.number.int(8) === 0) {
    customers.push(customer(f, { ...customerOptions, withPsr: false, landline: false, ...(f.datatype.boolean() ? { familyName: String(holder.family_name) } : {}) }));
  }
  const holderName = `${String(holder.given_name)} ${String(holder.family_name)}`;
  const billingName = party ? party.name : customers.length > 1 ? `${holderName} and ${String(customers[1]!.given_name)} ${String(customers[1]!.family_name)}` : holderName;

  const account: Record<string, unknown> = {
    import_supplier: o.supplier,
    external_account_number: o.ext,
    account_type: isBusiness ? 'BUSINESS' : 'DOMESTIC',
    billing_name: billingName,
    billing_address1: billingAddress.line1,
    billing_address2: billingAddress.town,
    billing_postcode: billingAddress.postcode,
    billing_email: f.internet.email({ firstName: String(holder.given_name), lastName: String(holder.family_name), provider: 'example.com' }).toLowerCase(),
    communication_preference: f.number.int(4) === 0 ? 'PRINT' : 'ONLINE',
    sales_channel: isBusiness ? f.helpers.arrayElement(['DIRECT', 'BROKER', 'TELESALES']) : f.helpers.arrayElement(['DIRECT', 'DIRECT', 'PRICE_COMPARISON', 'TELESALES', 'MOVE_IN']),
    date_of_sale: saleDate,
    transfer_balance: money(f, -300, 300),
    last_statement_closing_date: closing,
    last_billed_to_date: lastBilledTo,
    // The document allows billing options on business accounts only.
    ...(party ? { account_billing_options: { period_length: 'MONTHLY', period_start_day: f.number.int({ min: 1, max: 28 }) }, business: party.details } : {}),
    customers,
    supply_addresses: [
      {
        supply_address1: home.line1,
        supply_address2: home.town,
        supply_postcode: home.postcode,
        customer_at_supply_address_from_date: movedIn,
        meter_points: [elec.point, gas.point],
      },
    ],
    metadata: [{ key: 'legacy_account_id', value: `L${o.index + 1}` }],
  };

  const documents: GeneratedAccount['documents'] = [];
  const statements = Array.from({ length: o.statements ?? 2 }, (_, s) => {
    const to = addDaysUtc(closing, -31 * s);
    const from = addDaysUtc(to, -30);
    const path = `statements/${o.ext}/${to}.pdf`;
    documents.push({ path, body: MINIMAL_PDF(`${o.ext} ${from}..${to}`) });
    return { bill_period_from_date: from, bill_period_to_date: to, statement_id: `${o.ext}-S${s + 1}`, issued_date: addDaysUtc(to, 2), number: `INV-${o.index + 1}-${s + 1}`, gross_amount: money(f, 20, 250), statement_path: path };
  });
  const notes = Array.from({ length: o.notes ?? 3 }, (_, n) => ({
    body: `${f.helpers.arrayElement(['Called about', 'Emailed about', 'Wrote about'])} ${f.helpers.arrayElement(['a meter reading', 'their tariff', 'a direct debit change', 'moving home'])} (${n + 1}).`,
    created_at: `${addDaysUtc(closing, -n * 15)}T10:${String(10 + n).padStart(2, '0')}:00Z`,
    ...(n === 0 ? { is_pinned: true, unpin_at: `${addDaysUtc(o.today, 60)}T00:00:00Z` } : {}),
  }));
  const context = { ext: o.ext, openStart: lastBilledTo, today: o.today, electricity: elec, gas };
  const transactions = Array.from({ length: o.transactions ?? 10 }, (_, t) => transaction(f, t, context));

  const bundle: AccountBundle = { account, notes, transactions, statements };
  if (o.vendor) {
    const type = f.number.int(3) === 0 ? 'CARD' : 'DIRECT_DEBIT';
    bundle.payment_instruction = { vendor: o.vendor, reference: `${type === 'CARD' ? 'CARD' : 'DD'}-${o.ext}`, type };
  }
  return { bundle, documents };
}

/** Where a cohort's meter serials start: a hash of its prefix and seed (FNV-1a), times a wide stride. */
function cohortBase(key: string): number {
  let h = 0x811c9dc5;
  for (const ch of key) h = Math.imul(h ^ ch.charCodeAt(0), 0x01000193) >>> 0;
  return (h % 4_000) * 2_000_000;
}
