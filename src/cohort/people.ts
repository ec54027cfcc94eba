import type { Faker } from '@faker-js/faker';
import { isValidPhoneNumber } from 'libphonenumber-js/max';
import { addDaysUtc } from '../clock.js';

/**
 * Where a generated account lives. The postcode's outward code, the town, the electricity
 * distributor (the MPAN's first two digits), its GSP group letter (the tariff code's last letter)
 * and the gas local distribution zone all agree, as they do for a real address.
 */
export interface Region {
  outward: string;
  town: string;
  distributor: number;
  gsp: string;
  ldz: string;
}

const REGIONS: readonly Region[] = [
  { outward: 'NW1', town: 'London', distributor: 12, gsp: 'C', ldz: 'NT' },
  { outward: 'SW1A', town: 'London', distributor: 12, gsp: 'C', ldz: 'NT' },
  { outward: 'EC1A', town: 'London', distributor: 12, gsp: 'C', ldz: 'NT' },
  { outward: 'M1', town: 'Manchester', distributor: 16, gsp: 'G', ldz: 'NW' },
  { outward: 'M14', town: 'Manchester', distributor: 16, gsp: 'G', ldz: 'NW' },
  { outward: 'B3', town: 'Birmingham', distributor: 14, gsp: 'E', ldz: 'WM' },
  { outward: 'LS1', town: 'Leeds', distributor: 23, gsp: 'M', ldz: 'NE' },
  { outward: 'L1', town: 'Liverpool', distributor: 13, gsp: 'D', ldz: 'NW' },
  { outward: 'BS1', town: 'Bristol', distributor: 22, gsp: 'L', ldz: 'SW' },
  { outward: 'CF10', town: 'Cardiff', distributor: 21, gsp: 'K', ldz: 'WS' },
  { outward: 'EH1', town: 'Edinburgh', distributor: 18, gsp: 'N', ldz: 'SC' },
  { outward: 'G2', town: 'Glasgow', distributor: 18, gsp: 'N', ldz: 'SC' },
  { outward: 'NE1', town: 'Newcastle upon Tyne', distributor: 15, gsp: 'F', ldz: 'NO' },
  { outward: 'S1', town: 'Sheffield', distributor: 23, gsp: 'M', ldz: 'NE' },
  { outward: 'NG1', town: 'Nottingham', distributor: 11, gsp: 'B', ldz: 'EM' },
  { outward: 'OX1', town: 'Oxford', distributor: 20, gsp: 'H', ldz: 'SO' },
  { outward: 'CB2', town: 'Cambridge', distributor: 10, gsp: 'A', ldz: 'EA' },
  { outward: 'BN1', town: 'Brighton', distributor: 19, gsp: 'J', ldz: 'SE' },
  { outward: 'PL1', town: 'Plymouth', distributor: 22, gsp: 'L', ldz: 'SW' },
  { outward: 'YO1', town: 'York', distributor: 23, gsp: 'M', ldz: 'NE' },
];
// Inward codes are a digit and two letters from the set Royal Mail uses.
const INWARD_LETTERS = [...'ABDEFGHJLNPQRSTUWXYZ'];

export interface Address {
  line1: string;
  town: string;
  postcode: string;
  region: Region;
}

export function ukAddress(f: Faker): Address {
  const region = f.helpers.arrayElement(REGIONS);
  const inward = `${f.number.int(9)}${f.helpers.arrayElement(INWARD_LETTERS)}${f.helpers.arrayElement(INWARD_LETTERS)}`;
  return { line1: f.location.streetAddress(), town: region.town, postcode: `${region.outward} ${inward}`, region };
}

export function ukMobile(f: Faker): string {
  for (;;) {
    const n = `07${f.helpers.arrayElement(['4', '5', '7', '8', '9'])}${f.string.numeric(8)}`;
    // 07700 900xxx is Ofcom's range for drama: never a customer's number.
    if (!n.startsWith('07700900') && isValidPhoneNumber(n, 'GB')) return `${n.slice(0, 5)} ${n.slice(5)}`;
  }
}

export function ukLandline(f: Faker): string {
  for (;;) {
    const n = `0161${f.helpers.arrayElement(['2', '3', '4', '5', '8'])}${f.string.numeric(6)}`;
    if (isValidPhoneNumber(n, 'GB')) return `${n.slice(0, 4)} ${n.slice(4, 7)} ${n.slice(7)}`;
  }
}

/**
 * Priority Services Register needs with a permanent industry code (J1699): ones that last, so an
 * entry needs no end date. The temporary needs (recovering from hospital, young householder, life
 * changes) are left out for that reason.
 */
const PSR_NEEDS = ['06', '07', '08', '12', '14', '17', '18', '20', '22', '23'] as const;

export interface CustomerOptions {
  today: string;
  /** Dual-fuel accounts record each need for both fuels, as the document's example does. */
  fuels: ReadonlyArray<'ELECTRICITY' | 'GAS'>;
  /** The customer lived at the supply address from this date: PSR needs are recorded after it. */
  since: string;
  /** Recorded up to this date (the supplier's export): never in the future. */
  until: string;
  withPsr: boolean;
  landline: boolean;
  familyName?: string;
}

/** One customer as the document's EnergyCustomer, with the preference flags it lists. */
export function customer(f: Faker, o: CustomerOptions): Record<string, unknown> {
  const title = f.helpers.arrayElement(['Mr', 'Mrs', 'Ms', 'Miss', 'Mx', 'Dr']);
  const given = f.person.firstName();
  const family = o.familyName ?? f.person.lastName();
  const psr = o.withPsr ? psrEntries(f, o) : [];
  const salutation = f.number.int(9);
  return {
    title,
    given_name: given,
    family_name: family,
    ...(salutation < 2 ? { salutation: salutation === 0 ? `Dear ${title} ${family}` : `Hi ${given}` } : {}),
    email: f.internet.email({ firstName: given, lastName: family, provider: 'example.org' }).toLowerCase(),
    mobile: ukMobile(f),
    ...(o.landline ? { landline: ukLandline(f) } : {}),
    date_of_birth: addDaysUtc(o.today, -f.number.int({ min: 18 * 366, max: 90 * 365 })),
    ...(psr.length > 0 ? { psr } : {}),
    customer_preferences: {
      opted_into_sms: f.datatype.boolean({ probability: 0.6 }),
      opted_into_recommended: f.datatype.boolean({ probability: 0.7 }),
      opted_into_updates: true,
      opted_into_third_parties: f.datatype.boolean({ probability: 0.1 }),
      opted_into_offers: f.datatype.boolean(),
      // Asked only of those on the register.
      ...(psr.length > 0 ? { is_user_psr_consent_obtained: true } : {}),
    },
  };
}

function psrEntries(f: Faker, o: CustomerOptions): Array<Record<string, unknown>> {
  const needs = f.helpers.arrayElements(PSR_NEEDS, { min: 1, max: 2 });
  return needs.flatMap((code) => {
    // Recorded on a day between moving in and the export, at midnight UTC (the field is a date-time).
    const span = Math.max(0, daysBetween(o.since, o.until));
    const effectiveFrom = `${addDaysUtc(o.since, f.number.int(span))}T00:00:00Z`;
    return o.fuels.map((fuel) => (fuel === 'ELECTRICITY' ? { elec_industry_code: code, effective_from: effectiveFrom } : { gas_industry_code: code, effective_from: effectiveFrom }));
  });
}

const BUSINESS_TRADES = ['Joinery', 'Bakery', 'Dental Practice', 'Garage', 'Print Works', 'Florists', 'Pharmacy', 'Accountants', 'Café', 'Hair Studio', 'Engineering', 'Veterinary Surgery'];

/** A small business: its name, legal form and, for a registered company, its Companies House number. */
export function business(f: Faker): { name: string; details: Record<string, unknown> } {
  const type = f.helpers.weightedArrayElement([
    { weight: 6, value: 'LTD' },
    { weight: 2, value: 'SOLE_TRADER' },
    { weight: 1, value: 'PARTNERSHIP' },
    { weight: 1, value: 'LLP' },
  ] as const);
  const trade = f.helpers.arrayElement(BUSINESS_TRADES);
  const name = `${f.person.lastName()} ${trade}${type === 'LTD' ? ' Ltd' : type === 'LLP' ? ' LLP' : ''}`;
  // England and Wales companies are eight digits; LLPs carry the OC prefix.
  const number = type === 'LTD' ? f.string.numeric({ length: 8, allowLeadingZeros: true }) : type === 'LLP' ? `OC${f.string.numeric({ length: 6, allowLeadingZeros: true })}` : null;
  return { name, details: { company_name: name, business_type: type, ...(number ? { company_number: number } : {}) } };
}

/** Whole days from a to b (both YYYY-MM-DD). */
export function daysBetween(a: string, b: string): number {
  return Math.round((Date.parse(`${b}T00:00:00Z`) - Date.parse(`${a}T00:00:00Z`)) / 86_400_000);
}
