import type { Faker } from '@faker-js/faker';
import { addDaysUtc } from '../clock.js';
import { mpanCheckDigit } from '../imports/shared/fields.js';
import { daysBetween, type Region } from './people.js';

/** Market participant ids of the gaining supplier (four letters for electricity, three for gas) and its gas shipper. */
const SUPPLIER_MPID = { ELECTRICITY: 'TENT', GAS: 'TEN' } as const;
const SHIPPER_MPID = 'TCL';

/**
 * Standard settlement configurations: the SSC and the time pattern regimes of its settlement
 * registers. A single-rate meter has one register, an Economy 7 meter a day and a night one.
 */
const CONFIGURATIONS = {
  single: { ssc: '0393', tprs: ['00001'] },
  economy7: { ssc: '0151', tprs: ['00206', '00210'] },
} as const;
export type RateStructure = keyof typeof CONFIGURATIONS;
/** A register that only displays (a boost or heating circuit): not settled, so it needs no reading or EAC. */
const DISPLAY_TPR = '00043';

/** Variable products, so an open-ended agreement is what a supplier would send. */
const PRODUCTS = { domestic: 'VAR-22-11-01', business: 'BUS-VAR-23-04-01' } as const;

/** What the account's dates are built around (all YYYY-MM-DD, in order). */
export interface SupplyDates {
  /** The gaining supplier's supply started here; the agreements start here too. */
  supplyStart: string;
  /** The old system billed up to here: every transfer reading is taken on it. */
  lastBilledTo: string;
}

export interface GeneratedPoint {
  point: Record<string, unknown>;
  /** The agreement's product code (what its supply charges name). */
  product: string;
  rates: RateStructure;
  /** Average consumption in kWh a day, for supply charges. */
  dailyKwh: number;
}

interface PointOptions {
  region: Region;
  business: boolean;
  dates: SupplyDates;
}

/** An MPAN core: the region's distributor, ten digits of serial, a valid check digit. */
export function mpanFor(serial: number, region: Region): string {
  const first12 = `${region.distributor}${String(serial % 10_000_000_000).padStart(10, '0')}`;
  return first12 + String(mpanCheckDigit(first12));
}

/** A ten-digit MPRN from the same serial (bench/ reads the serial back from it). */
export const mprnFor = (serial: number): string => String(1_000_000_000 + (serial % 8_999_999_999));

export function electricityPoint(f: Faker, identifier: string, o: PointOptions): GeneratedPoint {
  // Domestic meters are profile class 1 (unrestricted) or 2 (Economy 7); business ones 3 and 4,
  // and a few larger sites 5 to 8 (maximum demand, still read non-half-hourly).
  const profileClass = o.business
    ? f.helpers.weightedArrayElement([
        { weight: 11, value: 3 },
        { weight: 5, value: 4 },
        { weight: 1, value: 5 },
        { weight: 1, value: 6 },
        { weight: 1, value: 7 },
        { weight: 1, value: 8 },
      ])
    : f.helpers.weightedArrayElement([
        { weight: 3, value: 1 },
        { weight: 1, value: 2 },
      ]);
  const rates: RateStructure = profileClass === 2 || profileClass === 4 || (profileClass >= 5 && f.datatype.boolean()) ? 'economy7' : 'single';
  const config = CONFIGURATIONS[rates];
  const annual = o.business ? f.number.int({ min: 8_000, max: 40_000 }) : rates === 'economy7' ? f.number.int({ min: 3_500, max: 7_000 }) : f.number.int({ min: 1_800, max: 4_200 });
  // An Economy 7 home uses about 40% of its electricity in the night hours.
  const shares = rates === 'economy7' ? [0.6, 0.4] : [1];
  const smart = f.number.int(3) === 0;
  const installedOn = addDaysUtc(o.dates.supplyStart, -f.number.int({ min: 60, max: 4_000 }));
  const digits = f.helpers.weightedArrayElement([
    { weight: 3, value: 5 },
    { weight: 1, value: 6 },
  ]);

  const registers: Array<Record<string, unknown>> = config.tprs.map((tpr, r) => ({ register_id: String(r + 1), tpr, number_of_digits: digits }));
  if (f.number.int(6) === 0) registers.push({ register_id: 'X', tpr: DISPLAY_TPR, number_of_digits: digits, is_settlement: false });

  // One meter read covers every register: the same dates, a value per register.
  const readDates = historyDates(f, o.dates, installedOn);
  const transfer: Array<Record<string, unknown>> = [];
  const history: Array<Record<string, unknown>> = [];
  const readingType = smart ? 'SMART' : f.helpers.arrayElement(['CUSTOMER', 'ESTIMATE'] as const);
  const readTypes = readDates.map(() => (smart ? 'SMART' : historyType(f)));
  config.tprs.forEach((_, r) => {
    const values = meterValues(f, digits, (annual * shares[r]!) / 365, readDates, o.dates.lastBilledTo);
    transfer.push({ register_id: String(r + 1), reading_date: o.dates.lastBilledTo, reading_value: String(values.atLastBilled), reading_type: readingType });
    readDates.forEach((d, k) => history.push({ register_id: String(r + 1), reading_date: d, reading_value: String(values.history[k]), reading_type: readTypes[k], billed: true }));
  });
  // Settlement revises every TPR's EAC of a meter point at once.
  const eacFrom = addDaysUtc(o.dates.lastBilledTo, -f.number.int({ min: 30, max: 300 }));

  const tariffPrefix = rates === 'economy7' ? 'E-2R' : 'E-1R';
  const product = o.business ? PRODUCTS.business : PRODUCTS.domestic;
  const point: Record<string, unknown> = {
    supply_type: 'ELECTRICITY',
    identifier,
    mpid: SUPPLIER_MPID.ELECTRICITY,
    supply_start_date: o.dates.supplyStart,
    profile_class: profileClass,
    ssc: config.ssc,
    // Non-half-hourly metered: most suppliers send it, some leave it to the industry data.
    ...(f.number.int(4) > 0 ? { measurement_class: 'A' } : {}),
    meters: [
      {
        meter_serial_number: electricitySerial(f, installedOn),
        installed_on: installedOn,
        ...(smart ? { smart_type: 'SMETS2', smart_commissioned_on: installedOn } : {}),
        registers,
        transfer_readings: transfer,
        reading_history: history,
      },
    ],
    agreements: [{ tariff_code: `${tariffPrefix}-${product}-${o.region.gsp}`, effective_from: o.dates.supplyStart }],
    eac_history: config.tprs.flatMap((tpr, r) => eacHistory(f, tpr, Math.round(annual * shares[r]!), eacFrom)),
    et_in_progress: false,
    dr_in_progress: false,
    ...(!smart && f.number.int(8) === 0 ? { smart_refusal_interest: smartRefusal(f, o.dates) } : {}),
  };
  return { point, product, rates, dailyKwh: annual / 365 };
}

export function gasPoint(f: Faker, identifier: string, o: PointOptions): GeneratedPoint {
  const aq = o.business ? f.number.int({ min: 15_000, max: 60_000 }) : f.number.int({ min: 7_000, max: 16_000 });
  const smart = f.number.int(3) === 0;
  const installedOn = addDaysUtc(o.dates.supplyStart, -f.number.int({ min: 60, max: 5_000 }));
  const digits = f.helpers.weightedArrayElement([
    { weight: 3, value: 5 },
    { weight: 1, value: 4 },
  ]);
  // A metric meter reads cubic metres: about 11.2 kWh each.
  const dailyUnits = aq / 11.2 / 365;
  const readDates = historyDates(f, o.dates, installedOn);
  const values = meterValues(f, digits, dailyUnits, readDates, o.dates.lastBilledTo);
  const product = o.business ? PRODUCTS.business : PRODUCTS.domestic;
  const point: Record<string, unknown> = {
    supply_type: 'GAS',
    identifier,
    mpid: SUPPLIER_MPID.GAS,
    shipper_mpid: SHIPPER_MPID,
    supply_start_date: o.dates.supplyStart,
    ldz: o.region.ldz,
    meters: [
      {
        meter_serial_number: gasSerial(f, installedOn),
        installed_on: installedOn,
        gas_number_of_digits: digits,
        ...(smart ? { smart_type: 'SMETS2', smart_commissioned_on: installedOn } : {}),
        transfer_readings: [
          { reading_date: o.dates.lastBilledTo, reading_value: String(values.atLastBilled), reading_type: smart ? 'SMART' : f.helpers.arrayElement(['CUSTOMER', 'ESTIMATE']) },
        ],
        reading_history: readDates.map((d, k) => ({ reading_date: d, reading_value: String(values.history[k]), reading_type: smart ? 'SMART' : historyType(f), billed: true })),
      },
    ],
    agreements: [{ tariff_code: `G-1R-${product}-${o.region.gsp}`, effective_from: o.dates.supplyStart }],
    aq_history: aqHistory(f, aq, o.dates.lastBilledTo),
    et_in_progress: false,
    dr_in_progress: false,
  };
  return { point, product, rates: 'single', dailyKwh: aq / 365 };
}

/**
 * Two or three quarterly reads before the last billed to date, newest first (as the document's
 * example lists them), none before the supply started or the meter was fitted.
 */
function historyDates(f: Faker, dates: SupplyDates, installedOn: string): string[] {
  const floor = installedOn > dates.supplyStart ? installedOn : dates.supplyStart;
  const count = f.number.int({ min: 2, max: 3 });
  const out: string[] = [];
  for (let k = 1; k <= count; k++) {
    const d = addDaysUtc(dates.lastBilledTo, -91 * k + f.number.int({ min: -6, max: 6 }));
    if (d <= floor) break;
    out.push(d);
  }
  return out;
}

/** Readings that only go up, at `daily` units a day, and fit the dials without wrapping round. */
function meterValues(f: Faker, digits: number, daily: number, dates: readonly string[], lastBilledTo: string): { atLastBilled: number; history: number[] } {
  const earliest = dates.at(-1) ?? lastBilledTo;
  const used = (d: string) => Math.round(daily * daysBetween(earliest, d));
  const total = used(lastBilledTo);
  const start = f.number.int({ min: 100, max: Math.max(100, 10 ** digits - 1 - total - 100) });
  return { atLastBilled: start + total, history: dates.map((d) => start + used(d)) };
}

const historyType = (f: Faker) =>
  f.helpers.weightedArrayElement([
    { weight: 3, value: 'ROUTINE' },
    { weight: 2, value: 'CUSTOMER' },
    { weight: 1, value: 'ESTIMATE' },
  ] as const);

/** Two settlement EACs for a TPR a year apart, newest first, the recent one (before the last billed to date) first. */
function eacHistory(f: Faker, tpr: string, annual: number, recent: string): Array<Record<string, unknown>> {
  const drift = (v: number) => String(Math.max(1, Math.round(v * f.number.float({ min: 0.9, max: 1.1 }))));
  return [
    { effective_from: recent, tpr, consumption: String(annual), source: 'D0019' },
    { effective_from: addDaysUtc(recent, -365), tpr, consumption: drift(annual), source: 'D0019' },
  ];
}

/**
 * AQs change each 1 April: the current one is open-ended, each earlier one ends the day before its
 * successor starts (no gaps, no overlaps), newest first.
 */
function aqHistory(f: Faker, aq: number, lastBilledTo: string): Array<Record<string, unknown>> {
  const year = Number(lastBilledTo.slice(0, 4));
  const latest = `${lastBilledTo >= `${year}-04-01` ? year : year - 1}-04-01`;
  const count = f.number.int({ min: 2, max: 3 });
  const latestYear = Number(latest.slice(0, 4));
  return Array.from({ length: count }, (_, k) => {
    const from = `${latestYear - k}-04-01`;
    const consumption = k === 0 ? aq : Math.round(aq * f.number.float({ min: 0.92, max: 1.08 }));
    return { effective_from: from, ...(k === 0 ? {} : { effective_to: `${latestYear - k + 1}-03-31` }), consumption: String(consumption) };
  });
}

function smartRefusal(f: Faker, dates: SupplyDates): Record<string, unknown> {
  return {
    type: f.helpers.arrayElement(['NOT_INTERESTED', 'NOT_AT_THE_MOMENT']),
    date: addDaysUtc(dates.supplyStart, f.number.int({ min: 1, max: Math.max(1, daysBetween(dates.supplyStart, dates.lastBilledTo)) })),
    refusal_reason: f.helpers.arrayElement(['DO_NOT_OWN_HOME', 'TECHNOLOGY_SCEPTICAL', 'WORRIED_SECURITY', 'HOUSE_MOVE_IMMINENT', 'CANNOT_SEE_BENEFIT']),
    source: f.helpers.arrayElement(['WEBSITE', 'EMAIL', 'OTHER']),
  };
}

/** Manufacturer letter, year of manufacture, model letter, six digits: ten characters. */
function electricitySerial(f: Faker, installedOn: string): string {
  return `${f.helpers.arrayElement(['S', 'K', 'L', 'E', 'D'])}${installedOn.slice(2, 4)}${f.string.alpha({ length: 1, casing: 'upper' })}${f.string.numeric({ length: 6, allowLeadingZeros: true })}`;
}

/** Manufacturer and model code, eight digits, two-digit year: fourteen characters. */
function gasSerial(f: Faker, installedOn: string): string {
  return `${f.helpers.arrayElement(['E6S', 'G4K', 'U6W', 'M2A'])}${f.string.numeric({ length: 8, allowLeadingZeros: true })}${f.number.int(9)}${installedOn.slice(2, 4)}`;
}
