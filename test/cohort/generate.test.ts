import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Decimal } from 'decimal.js';
import { describe, expect, it } from 'vitest';
import { generateCohort, type AccountBundle, type GeneratedAccount } from '../../src/cohort/generate.js';
import { ALSO_REPORTED, MISTAKES } from '../../src/cohort/mistakes.js';
import { transactionSchema } from '../../src/imports/transactions/transaction.schemas.js';
import { accountErrors } from '../contract/harness.js';

const today = '2026-11-22';
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the generated account is walked freely
type Any = any;

/** The document's enums for a transaction type's reason and payment type. */
const contract = JSON.parse(readFileSync(path.join(import.meta.dirname, '../../src/contract/data-import.contract.json'), 'utf8')) as {
  schemas: Record<string, { properties?: Record<string, { enum?: Array<string | null> }> }>;
};
const TRANSACTION_SCHEMA = { CHARGE: 'EnergyCharge', CREDIT: 'EnergyCredit', PAYMENT: 'EnergyPayment', REPAYMENT: 'EnergyRepayment', SUPPLY_CHARGE: 'EnergySupplyCharge' } as const;
const documentEnum = (type: keyof typeof TRANSACTION_SCHEMA, field: string) => contract.schemas[TRANSACTION_SCHEMA[type]]!.properties![field]?.enum;

const cohort = (n: number, extra: Partial<Parameters<typeof generateCohort>[0]> = {}): GeneratedAccount[] => [...generateCohort({ count: n, supplier: 'GEN', today, vendor: 'sandbox', ...extra })];
const pointsOf = (b: AccountBundle): Any[] => (b.account.supply_addresses as Any[]).flatMap((s) => s.meter_points);

/** Every string in the value that is a date or starts like a date-time, with its path. */
function datesIn(value: unknown, at = ''): Array<[string, string]> {
  if (typeof value === 'string') return /^\d{4}-\d{2}-\d{2}/.test(value) ? [[at, value.slice(0, 10)]] : [];
  if (Array.isArray(value)) return value.flatMap((v, i) => datesIn(v, `${at}.${i}`));
  if (value && typeof value === 'object') return Object.entries(value).flatMap(([k, v]) => datesIn(v, at ? `${at}.${k}` : k));
  return [];
}

describe('generateCohort', () => {
  const all = cohort(300);

  it('generates accounts that pass every account rule, with transactions the endpoint and the document accept', () => {
    expect(all).toHaveLength(300);
    for (const { bundle, mistake } of all) {
      expect(mistake).toBeNull();
      expect(accountErrors(bundle.account, today), String(bundle.account.external_account_number)).toEqual([]);
      for (const t of bundle.transactions ?? []) {
        expect(transactionSchema.safeParse(t).success, JSON.stringify(t)).toBe(true);
        const type = t.type as keyof typeof TRANSACTION_SCHEMA;
        if (t.reason !== undefined) expect(documentEnum(type, 'reason')).toContain(t.reason);
        if (t.payment_type !== undefined) expect(documentEnum(type, 'payment_type')).toContain(t.payment_type);
      }
      expect(bundle.payment_instruction?.vendor).toBe('sandbox');
    }
    const identifiers = all.flatMap(({ bundle }) => pointsOf(bundle).map((m) => m.identifier as string));
    expect(new Set(identifiers).size).toBe(identifiers.length);
  });

  it('makes about one account in ten a business, with billing options and company details, and the rest domestic', () => {
    const business = all.filter(({ bundle }) => bundle.account.account_type === 'BUSINESS');
    expect(business.length).toBeGreaterThan(15);
    expect(business.length).toBeLessThan(50);
    for (const { bundle } of all) {
      const a = bundle.account as Any;
      if (a.account_type === 'BUSINESS') {
        expect(a.account_billing_options).toMatchObject({ period_length: 'MONTHLY', period_start_day: expect.any(Number) });
        expect(a.business.company_name).toBe(a.billing_name);
        expect(a.customers).toHaveLength(1);
      } else {
        expect(a.account_type).toBe('DOMESTIC');
        expect(a.account_billing_options).toBeUndefined();
        expect(a.business).toBeUndefined();
      }
    }
  });

  it('keeps every account’s dates in order and none after today', () => {
    for (const { bundle } of all) {
      const a = bundle.account as Any;
      const address = a.supply_addresses[0];
      const lastBilled = a.last_billed_to_date as string;
      expect(address.customer_at_supply_address_from_date <= a.date_of_sale).toBe(true);
      expect(a.last_statement_closing_date < lastBilled && lastBilled < today).toBe(true);
      for (const mp of address.meter_points) {
        expect(a.date_of_sale < mp.supply_start_date && mp.supply_start_date < lastBilled).toBe(true);
        expect(mp.agreements).toEqual([{ tariff_code: expect.any(String), effective_from: mp.supply_start_date }]);
        for (const m of mp.meters) expect(m.installed_on < mp.supply_start_date).toBe(true);
      }
      for (const [at, date] of datesIn(a)) expect(date <= today, `${String(a.external_account_number)} ${at}`).toBe(true);
    }
  });

  it('gives electricity meter points profile classes, SSCs, registers with TPRs, a transfer reading and EACs per settlement register, and a reading history', () => {
    const classes: number[] = [];
    for (const { bundle } of all) {
      const a = bundle.account as Any;
      const lastBilled = a.last_billed_to_date as string;
      const [elec] = pointsOf(bundle);
      expect(elec).toMatchObject({ supply_type: 'ELECTRICITY', mpid: 'TENT', ssc: expect.stringMatching(/^\d{4}$/) });
      classes.push(elec.profile_class);
      expect(a.account_type === 'BUSINESS' ? elec.profile_class >= 3 && elec.profile_class <= 8 : [1, 2].includes(elec.profile_class)).toBe(true);
      if ('measurement_class' in elec) expect(elec.measurement_class).toBe('A');
      expect(elec.meters).toHaveLength(1);
      const meter = elec.meters[0];
      expect(meter.registers.length).toBeGreaterThanOrEqual(1);
      expect(meter.registers.length).toBeLessThanOrEqual(3);
      expect(new Set(meter.registers.map((r: Any) => r.register_id)).size).toBe(meter.registers.length);
      expect(new Set(meter.registers.map((r: Any) => r.tpr)).size).toBe(meter.registers.length);
      const settlement = meter.registers.filter((r: Any) => r.is_settlement !== false);
      // Two-rate configurations have two settlement registers, and a two-rate tariff.
      expect(elec.agreements[0].tariff_code.startsWith(settlement.length === 2 ? 'E-2R-' : 'E-1R-')).toBe(true);
      for (const r of meter.registers) expect(r).toMatchObject({ register_id: expect.any(String), tpr: expect.stringMatching(/^\d{5}$/), number_of_digits: expect.any(Number) });
      for (const r of settlement) {
        const transfer = meter.transfer_readings.filter((t: Any) => t.register_id === r.register_id);
        expect(transfer).toEqual([expect.objectContaining({ reading_date: lastBilled })]);
        const history = meter.reading_history.filter((h: Any) => h.register_id === r.register_id);
        expect(history.length).toBeGreaterThanOrEqual(2);
        for (const h of history) {
          expect(h.reading_date < lastBilled).toBe(true);
          expect(Number(h.reading_value)).toBeLessThanOrEqual(Number(transfer[0].reading_value));
        }
        expect(Number(transfer[0].reading_value)).toBeLessThan(10 ** r.number_of_digits);
        const eacs = elec.eac_history.filter((e: Any) => e.tpr === r.tpr);
        expect(eacs.length).toBeGreaterThanOrEqual(1);
        for (const e of eacs) expect(e.effective_from <= lastBilled).toBe(true);
      }
      expect(meter.transfer_readings).toHaveLength(settlement.length);
    }
    const domesticClasses = classes.filter((c) => c <= 2).length;
    expect(domesticClasses / classes.length).toBeGreaterThan(0.8);
    expect(classes.every((c) => c >= 1 && c <= 8)).toBe(true);
    for (const c of [1, 2, 3, 4]) expect(classes).toContain(c);
    expect(classes.some((c) => c >= 5)).toBe(true);
  });

  it('gives gas meter points a shipper, a meter with its digits, one transfer reading, a reading history and an unbroken AQ history', () => {
    for (const { bundle } of all) {
      const lastBilled = bundle.account.last_billed_to_date as string;
      const gas = pointsOf(bundle)[1];
      expect(gas).toMatchObject({ supply_type: 'GAS', mpid: 'TEN', shipper_mpid: 'TCL', identifier: expect.stringMatching(/^\d{10}$/) });
      const meter = gas.meters[0];
      expect([4, 5]).toContain(meter.gas_number_of_digits);
      expect(meter.transfer_readings).toEqual([expect.objectContaining({ reading_date: lastBilled })]);
      expect(meter.reading_history.length).toBeGreaterThanOrEqual(2);
      for (const h of meter.reading_history) expect(h.reading_date < lastBilled && h.billed === true).toBe(true);
      const [current, ...earlier] = gas.aq_history as Any[];
      expect(current.effective_to).toBeUndefined();
      expect(current.effective_from <= lastBilled).toBe(true);
      let next = current.effective_from as string;
      for (const aq of earlier) {
        expect(new Date(`${aq.effective_to}T00:00:00Z`).getTime() + 86_400_000).toBe(new Date(`${next}T00:00:00Z`).getTime());
        next = aq.effective_from;
      }
    }
  });

  it('puts some customers on the Priority Services Register, with both fuels’ codes, and gives some a salutation', () => {
    const customers = all.flatMap(({ bundle }) => bundle.account.customers as Any[]);
    const onRegister = customers.filter((c) => c.psr);
    expect(onRegister.length / customers.length).toBeGreaterThan(0.05);
    expect(onRegister.length / customers.length).toBeLessThan(0.3);
    for (const c of onRegister) {
      expect(c.customer_preferences.is_user_psr_consent_obtained).toBe(true);
      for (const p of c.psr) {
        expect(p.elec_industry_code ?? p.gas_industry_code).toMatch(/^\d{2}$/);
        expect(p.effective_from.slice(0, 10) <= today).toBe(true);
      }
      const codes = (fuel: string) => c.psr.map((p: Any) => p[fuel]).filter(Boolean).sort();
      expect(codes('elec_industry_code')).toEqual(codes('gas_industry_code'));
    }
    expect(customers.filter((c) => c.salutation).length).toBeGreaterThan(0);
    for (const c of customers) expect(Object.keys(c.customer_preferences)).toEqual(expect.arrayContaining(['opted_into_sms', 'opted_into_recommended', 'opted_into_updates', 'opted_into_third_parties', 'opted_into_offers']));
  });

  it('charges supply for the open period with amounts that add up exactly, under the agreements’ products', () => {
    const types = new Set<string>();
    for (const { bundle } of all) {
      const lastBilled = bundle.account.last_billed_to_date as string;
      const tariffs = pointsOf(bundle).map((mp) => mp.agreements[0].tariff_code as string);
      for (const t of bundle.transactions as Any[]) {
        types.add(t.type);
        expect(t.transaction_date <= today).toBe(true);
        if (t.type !== 'SUPPLY_CHARGE') continue;
        expect(tariffs.some((code) => code.includes(`-${String(t.product_code)}-`))).toBe(true);
        let net = new Decimal(0);
        for (const li of t.line_items) {
          expect(li.start_date).toBe(lastBilled);
          expect(li.end_date).toBe(t.transaction_date);
          expect(new Decimal(li.number_of_units).times(li.price_per_unit).equals(li.net_amount)).toBe(true);
          net = net.plus(li.net_amount);
        }
        const tax = t.tax_items.reduce((s: Decimal, x: Any) => s.plus(x.amount), new Decimal(0));
        expect(new Decimal(t.tax_items[0].value_taxed).equals(net)).toBe(true);
        expect(net.plus(tax).equals(t.amount)).toBe(true);
      }
      // Two in ten predate the open period (the service moves them into it on import).
      expect((bundle.transactions as Any[]).filter((t) => t.transaction_date < lastBilled)).toHaveLength(2);
    }
    expect(types).toEqual(new Set(['CHARGE', 'CREDIT', 'PAYMENT', 'REPAYMENT', 'SUPPLY_CHARGE']));
  });

  it('is deterministic for a seed and lazy, even with another cohort generated alongside', () => {
    const a = [...generateCohort({ count: 50, supplier: 'GEN', today, seed: 7, invalidRate: 0.2 })];
    // Interleaved with a different cohort, the same seed still gives the same accounts.
    const b = generateCohort({ count: 50, supplier: 'GEN', today, seed: 7, invalidRate: 0.2 });
    const other = generateCohort({ count: 1_000_000_000, supplier: 'OTHER', today, seed: 8 });
    const interleaved: GeneratedAccount[] = [];
    for (let r = b.next(); !r.done; r = b.next()) {
      other.next();
      interleaved.push(r.value);
    }
    expect(JSON.stringify(interleaved)).toBe(JSON.stringify(a));
    expect(JSON.stringify(a)).not.toBe(JSON.stringify([...generateCohort({ count: 50, supplier: 'GEN', today, seed: 8, invalidRate: 0.2 })]));
  });

  it('plants every kind of mistake in turn, each as the one problem it names, at one place', () => {
    const spoiled = cohort(300, { seed: 7, invalidRate: 0.2 }).filter((x) => x.mistake !== null);
    expect(spoiled.length).toBeGreaterThan(30);
    expect(spoiled.length).toBeLessThan(90);
    expect(spoiled.map((x) => x.mistake)).toEqual(spoiled.map((_, k) => MISTAKES[k % MISTAKES.length]));
    for (const { bundle, mistake } of spoiled) {
      const errors = accountErrors(bundle.account, today);
      const codes = errors.map((e) => e.split('@')[0]);
      expect(codes.sort(), `${String(bundle.account.external_account_number)} (${String(mistake)})`).toEqual([mistake!, ...(ALSO_REPORTED[mistake!] ?? [])].sort());
      // One place is spoiled.
      expect(new Set(errors.map((e) => e.split('@')[1])).size).toBe(1);
    }
  });

  it('gives different cohorts different meter points', () => {
    const mpan = (prefix: string) => pointsOf(cohort(1, { prefix })[0]!.bundle)[0].identifier;
    expect(mpan('A')).not.toBe(mpan('B'));
  });
});
