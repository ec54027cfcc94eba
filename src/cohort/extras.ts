import type { Faker } from '@faker-js/faker';
import { addDaysUtc } from '../clock.js';
import { daysBetween } from './people.js';
import type { GeneratedPoint } from './supply.js';

/** Decimal strings from whole pennies: never a float in the money. */
export function pounds(pence: number): string {
  const sign = pence < 0 ? '-' : '';
  const abs = Math.abs(pence);
  return `${sign}${Math.floor(abs / 100)}.${String(abs % 100).padStart(2, '0')}`;
}

export const money = (f: Faker, min: number, max: number): string => pounds(f.number.int({ min: min * 100, max: max * 100 }));

/**
 * Unit prices in ten-thousandths of a pound (24.75p a kWh is 2475). Consumption prices are
 * multiples of 25, so a whole number of kWh that is a multiple of 4 costs a whole number of pence:
 * the line's net amount is then exactly units × price, however a reader rounds.
 */
const PRICES = {
  ELECTRICITY: { CONSUMPTION_STANDARD: 2475, CONSUMPTION_DAY: 2850, CONSUMPTION_NIGHT: 1425, STANDING_CHARGE: 5300 },
  GAS: { CONSUMPTION_STANDARD: 625, STANDING_CHARGE: 3100 },
} as const;
const VAT_PERCENT = 5;

export interface TransactionContext {
  ext: string;
  /** First day of the open statement (the day after the last closing, also the last billed to date). */
  openStart: string;
  today: string;
  electricity: GeneratedPoint;
  gas: GeneratedPoint;
}

/**
 * The bundle's transactions (posted through the transactions endpoint after the account exists):
 * supply charges for the open period, the customer's payments, fees, credits and a refund, with the
 * document's reasons and payment types. Two in ten predate the open period, as a supplier's export
 * often has; the service moves them into it on import.
 */
export function transaction(f: Faker, t: number, c: TransactionContext): Record<string, unknown> {
  const id = `${c.ext}-T${String(t + 1).padStart(3, '0')}`;
  const openDays = Math.max(0, daysBetween(c.openStart, c.today));
  const within = (min: number) => addDaysUtc(c.openStart, f.number.int({ min: Math.min(min, openDays), max: openDays }));
  const predating = addDaysUtc(c.openStart, -10);
  switch (t % 10) {
    case 0:
      return supplyCharge(f, id, 'ELECTRICITY', c.electricity, c.openStart, within(14));
    case 3:
      return supplyCharge(f, id, 'GAS', c.gas, c.openStart, within(14));
    case 1:
    case 9: {
      const date = t % 10 === 9 ? predating : within(0);
      return { transaction_id: id, transaction_date: date, amount: money(f, 40, 160), type: 'PAYMENT', reason: 'ACCOUNT_CHARGE_PAYMENT', payment_type: 'DD_REGULAR_COLLECTION', reference: `DD-${id}` };
    }
    case 5:
      return {
        transaction_id: id,
        transaction_date: within(0),
        amount: money(f, 10, 80),
        type: 'PAYMENT',
        reason: 'ACCOUNT_CHARGE_PAYMENT',
        payment_type: f.helpers.arrayElement(['DEBIT_CARD', 'CREDIT_CARD', 'PAYPOINT_CASH', 'CHEQUE']),
        reference: `PAY-${id}`,
      };
    case 2:
      return { transaction_id: id, transaction_date: within(0), amount: money(f, 5, 60), type: 'CHARGE', reason: 'IMPORTED_CHARGE', display_note: 'Balance brought forward from your previous account' };
    case 6:
      return { transaction_id: id, transaction_date: within(0), amount: '10.00', type: 'CHARGE', reason: 'LATE_PAYMENT_FEE_CHARGE', display_note: 'Late payment fee', note: 'Second reminder unanswered' };
    case 4:
      return {
        transaction_id: id,
        transaction_date: predating,
        amount: money(f, 5, 30),
        type: 'CREDIT',
        reason: f.helpers.arrayElement(['GOODWILL_PAYMENT', 'CUSTOMER_SERVICE_GESTURE']),
        display_note: 'With our apologies',
        note: 'Goodwill for a delayed bill',
      };
    case 8:
      return { transaction_id: id, transaction_date: within(0), amount: money(f, 5, 50), type: 'CREDIT', reason: f.helpers.arrayElement(['IMPORTED_CREDIT', 'LOYALTY_REWARD']), display_note: 'Credit' };
    default:
      return {
        transaction_id: id,
        transaction_date: within(0),
        amount: money(f, 20, 120),
        type: 'REPAYMENT',
        reason: f.helpers.arrayElement(['PARTIAL_CREDIT_REFUND', 'FULL_CREDIT_REFUND']),
        payment_type: f.helpers.arrayElement(['DIRECT_CREDIT', 'BACS']),
        reference: `REF-${id}`,
      };
  }
}

/**
 * A supply charge for the open period up to its date: consumption by rate band plus the standing
 * charge, 5% VAT on the total rounded to the penny; the amount is the net plus the tax, exactly.
 * Its product code is the meter point's agreement's, which covers the whole period.
 */
function supplyCharge(f: Faker, id: string, fuel: 'ELECTRICITY' | 'GAS', point: GeneratedPoint, start: string, end: string): Record<string, unknown> {
  const days = daysBetween(start, end) + 1;
  const kwh = Math.max(4, Math.round((point.dailyKwh * days * f.number.float({ min: 0.8, max: 1.2 })) / 4) * 4);
  const prices: Record<string, number> = PRICES[fuel];
  const bands: Array<[string, number]> =
    point.rates === 'economy7' ? [['CONSUMPTION_DAY', Math.round((kwh * 0.6) / 4) * 4], ['CONSUMPTION_NIGHT', Math.max(4, kwh - Math.round((kwh * 0.6) / 4) * 4)]] : [['CONSUMPTION_STANDARD', kwh]];
  bands.push(['STANDING_CHARGE', days]);
  const lines = bands.map(([band, units]) => {
    const price = prices[band]!;
    const netPence = (units * price) / 100; // whole pence by the choice of prices and units
    return { band, units, price, netPence };
  });
  const netPence = lines.reduce((s, l) => s + l.netPence, 0);
  const taxPence = Math.round((netPence * VAT_PERCENT) / 100);
  return {
    transaction_id: id,
    transaction_date: end,
    amount: pounds(netPence + taxPence),
    type: 'SUPPLY_CHARGE',
    product_code: point.product,
    display_note: fuel === 'ELECTRICITY' ? 'Electricity' : 'Gas',
    line_items: lines.map((l) => ({
      rate_band: l.band,
      start_date: start,
      end_date: end,
      number_of_units: String(l.units),
      net_amount: pounds(l.netPence),
      price_per_unit: `${Math.floor(l.price / 10_000)}.${String(l.price % 10_000).padStart(4, '0')}`,
    })),
    tax_items: [{ amount: pounds(taxPence), tax_type: 'VAT', value_taxed: pounds(netPence), rate: '0.05', unit_type: 'PROPORTION' }],
  };
}
