import { describe, expect, it } from 'vitest';
import { makeAccountDataSchema, meterPointIdentifiers, type AccountData } from '../../src/imports/accounts/account.schemas.js';
import { AppError, type ErrorItem } from '../../src/errors.js';
import {
  compareDatetimes,
  datetimeString,
  decimalString,
  isValidMpanCore,
  mpanCheckDigit,
} from '../../src/imports/shared/fields.js';
import { seededReferenceData } from '../../src/imports/reference/reference.service.js';
import { parseOrThrow } from '../../src/imports/shared/validation.js';
import { accountErrors } from '../contract/harness.js';
import { accountPayload } from '../helpers/fixtures.js';

const TODAY = '2026-11-22';
const schema = makeAccountDataSchema(() => TODAY, seededReferenceData());

const mpan = (first12: string): string => `${first12}${String(mpanCheckDigit(first12))}`;

// Checked by hand: digits 1,2,0,0,0,2,3,3,0,5,9,6 times primes 3,5,7,13,17,19,23,29,31,37,41,43
// sum to 1019; 1019 mod 11 = 7; 7 mod 10 = 7, the 13th digit.
const KNOWN_MPAN = '1200023305967';
// 1 × 3 = 3; 3 mod 11 mod 10 = 3.
const KNOWN_MPAN_2 = '1000000000003';
const MPAN_B = mpan('200000000001');
const MPAN_C = mpan('987654321098');

/* eslint-disable @typescript-eslint/no-explicit-any -- tests break payloads on purpose */
type Payload = Record<string, any>;

/**
 * The project's fixture account (a realistic, valid EnergyAccount that the contract tests keep valid
 * under every rule), with this file's hand-checked MPAN on its electricity meter point. Its meter
 * points are supply_addresses.0.meter_points.0 (ELECTRICITY) and .1 (GAS).
 */
function validPayload(): Payload {
  const p: Payload = accountPayload('TENTACLE_ENERGY', 'EXT-0001');
  p.supply_addresses[0].meter_points[0].identifier = KNOWN_MPAN;
  return p;
}

/**
 * Makes a payload a business account with billing options: the document lets only business
 * accounts carry account_billing_options, so tests of those fields use one.
 */
function asBusiness(p: Payload, billingOptions: Payload = { period_length: 'MONTHLY', period_start_day: 1 }): Payload {
  p.account_type = 'BUSINESS';
  p.account_billing_options = billingOptions;
  return p;
}

// Each meter gets its own serial number: the document allows one serial on several meter points
// only for twin-element meters.
let serialCounter = 0;
const serial = (prefix: string) => `${prefix}${String(++serialCounter).padStart(6, '0')}`;

/** An electricity meter point shaped like the fixture's, with one meter and one open agreement. */
function electricityPoint(identifier: string, supplyStart = '2024-03-01'): Payload {
  return {
    supply_type: 'ELECTRICITY',
    identifier,
    supply_start_date: supplyStart,
    mpid: 'TENT',
    meters: [
      {
        meter_serial_number: serial('E10BG'),
        registers: [{ register_id: '1', tpr: '00001', number_of_digits: 5 }],
        transfer_readings: [{ register_id: '1', reading_date: supplyStart, reading_value: '12345', reading_type: 'CUSTOMER' }],
      },
    ],
    agreements: [{ tariff_code: 'E-1R-VAR-22-11-01-C', effective_from: supplyStart }],
    eac_history: [{ effective_from: supplyStart, tpr: '00001', consumption: '2900' }],
  };
}

/** A gas meter point shaped like the fixture's, with one meter and one open agreement. */
function gasPoint(identifier: string, supplyStart = '2024-03-01'): Payload {
  return {
    supply_type: 'GAS',
    identifier,
    supply_start_date: supplyStart,
    mpid: 'TEN',
    shipper_mpid: 'TCL',
    meters: [{ meter_serial_number: serial('G4A'), gas_number_of_digits: 5, transfer_readings: [{ reading_date: supplyStart, reading_value: '4321', reading_type: 'CUSTOMER' }] }],
    agreements: [{ tariff_code: 'G-1R-VAR-22-11-01-C', effective_from: supplyStart }],
    aq_history: [{ effective_from: supplyStart, consumption: '11000' }],
  };
}

/** A business account using much of what the account data object allows. */
function fullPayload(): Payload {
  return {
    import_supplier: 'TENTACLE_ENERGY',
    external_account_number: 'EXT-0001',
    account_type: 'BUSINESS',
    billing_name: 'Bob Jabłoński',
    billing_address1: 'Flat 2',
    billing_address2: '1 High Street',
    billing_address3: '',
    billing_address4: 'London',
    billing_address5: 'Greater London',
    billing_postcode: ' sw1a1aa ',
    billing_email: 'bob@example.com',
    communication_preference: 'PRINT',
    date_of_sale: TODAY,
    transfer_balance: 12.5,
    last_statement_closing_date: '2026-10-31',
    // Quarterly billing run by the supplier itself needs the next bill's due date.
    account_billing_options: { period_length: 'QUARTERLY', period_start_day: 28, period_start_month: 2, use_industry_billing: false },
    next_bill_due_date: '2027-02-28',
    customers: [
      {
        title: 'Mr',
        given_name: 'Bob',
        family_name: 'Jabłoński',
        email: 'bob@example.com',
        mobile: '07400 123 456',
        landline: '020 7946 0018',
        date_of_birth: '1980-02-29',
        customer_preferences: { opted_into_offers: false, opted_into_updates: true },
      },
      { given_name: 'Alice', family_name: 'Jabłońska', mobile: '+33 6 12 34 56 78' },
    ],
    supply_addresses: [
      {
        supply_address1: 'Flat 2',
        supply_address2: '1 High Street',
        supply_postcode: 'ec1a 1bb',
        customer_at_supply_address_from_date: '2020-01-01',
        meter_points: [
          {
            supply_type: 'ELECTRICITY',
            identifier: KNOWN_MPAN,
            supply_start_date: '2020-01-01',
            mpid: 'TENT',
            meters: [
              {
                meter_serial_number: 'S95A012345',
                registers: [{ register_id: '1', tpr: '00001', number_of_digits: 5 }],
                transfer_readings: [{ register_id: '1', reading_date: '2020-01-01', reading_value: '100', reading_type: 'CUSTOMER' }],
              },
            ],
            agreements: [
              { tariff_code: 'E-1R-VAR-22-11-01-C', effective_from: '2020-01-01', effective_to: '2021-01-01' },
              { tariff_code: 'E-1R-VAR-22-11-01-C', effective_from: '2021-01-01' },
            ],
            eac_history: [{ effective_from: '2020-01-01', tpr: '00001', consumption: '3100' }],
          },
          gasPoint('1234567890', '2020-01-01'),
        ],
      },
      {
        supply_address1: '3 Low Road',
        supply_postcode: 'M1 1AE',
        customer_at_supply_address_from_date: '2022-05-01',
        meter_points: [electricityPoint(MPAN_B, '2022-05-01')],
      },
    ],
    metadata: [
      { key: 'legacy_id', value: '42' },
      { key: 'segment', value: '' },
      // The document lets a metadata value be any JSON value.
      { key: 'flags', value: { vip: true, tier: 2 } },
    ],
  };
}

/** The parsed account; the service's rules make external_account_number present, as in the service. */
function parse(input: unknown): AccountData {
  return parseOrThrow(schema, input, 'account_failed_validation', 'Could not validate account data.') as AccountData;
}

/** The items a payload fails with; fails the test if it passes. */
function errorsOf(input: unknown, s: typeof schema = schema): ErrorItem[] {
  try {
    parseOrThrow(s, input, 'account_failed_validation', 'Could not validate account data.');
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    const e = err as AppError;
    expect(e.status).toBe(400);
    expect(e.code).toBe('account_failed_validation');
    return e.errors;
  }
  throw new Error('expected the payload to fail validation');
}

const codesAndAttrs = (items: ErrorItem[]) => items.map(({ code, attr }) => ({ code, attr }));

/** The payload, changed by `edit`, fails with exactly these problems (in any order). */
function expectErrors(edit: (p: Payload) => void, expected: { code: string; attr: string | null }[], base = validPayload): void {
  const p = base();
  edit(p);
  const sort = (xs: { code: string; attr: string | null }[]) =>
    [...xs].sort((a, b) => `${a.attr ?? ''}|${a.code}`.localeCompare(`${b.attr ?? ''}|${b.code}`));
  expect(sort(codesAndAttrs(errorsOf(p)))).toEqual(sort(expected));
}

/** Every problem of the payload, changed by `edit`, as 'code@attr' ([] when valid). */
function problemsOf(edit: (p: Payload) => void): string[] {
  const p = validPayload();
  edit(p);
  return accountErrors(p, TODAY);
}

describe('account data: valid payloads', () => {
  it('accepts the fixture account', () => {
    expect(() => parse(validPayload())).not.toThrow();
  });

  it('accepts a full payload and normalises it', () => {
    const out = parse(fullPayload());
    expect(out.account_type).toBe('BUSINESS');
    expect(out.communication_preference).toBe('PRINT');
    expect(out.billing_postcode).toBe('SW1A 1AA');
    expect(out.billing_address3).toBe('');
    expect(out.transfer_balance).toBe('12.5');
    expect(out.date_of_sale).toBe(TODAY);
    expect(out.account_billing_options).toEqual({ period_length: 'QUARTERLY', period_start_day: 28, period_start_month: 2, use_industry_billing: false });
    expect(out.customers?.[0]).toEqual({
      title: 'Mr',
      given_name: 'Bob',
      family_name: 'Jabłoński',
      email: 'bob@example.com',
      mobile: '+447400123456',
      landline: '+442079460018',
      date_of_birth: '1980-02-29',
      customer_preferences: { opted_into_offers: false, opted_into_updates: true },
    });
    expect(out.customers?.[1]?.mobile).toBe('+33612345678');
    expect(out.supply_addresses?.[0]?.supply_postcode).toBe('EC1A 1BB');
    expect(out.supply_addresses?.[0]?.meter_points[0]?.agreements).toEqual([
      { tariff_code: 'E-1R-VAR-22-11-01-C', effective_from: '2020-01-01', effective_to: '2021-01-01' },
      { tariff_code: 'E-1R-VAR-22-11-01-C', effective_from: '2021-01-01' },
    ]);
    expect(out.metadata).toEqual([
      { key: 'legacy_id', value: '42' },
      { key: 'segment', value: '' },
      { key: 'flags', value: { vip: true, tier: 2 } },
    ]);
  });

  it('fills in no defaults and leaves omitted optional fields omitted', () => {
    // Contract change: the published EnergyAccount sets no defaults, so the parsed data keeps
    // account_type and communication_preference absent; DOMESTIC and ONLINE are applied only
    // when the account is stored (account-tree.repository).
    const p = validPayload();
    delete p.account_type;
    delete p.communication_preference;
    const out = parse(p);
    expect(Object.keys(out).sort()).toEqual(Object.keys(p).sort());
    expect(out).not.toHaveProperty('account_type');
    expect(out).not.toHaveProperty('communication_preference');
    expect(Object.keys(out.customers?.[0] ?? {}).sort()).toEqual(Object.keys(p.customers[0]).sort());
    expect(Object.keys(out.supply_addresses?.[0]?.meter_points[0] ?? {}).sort()).toEqual(Object.keys(p.supply_addresses[0].meter_points[0]).sort());
    expect(Object.keys(out.supply_addresses?.[0]?.meter_points[1] ?? {}).sort()).toEqual(Object.keys(p.supply_addresses[0].meter_points[1]).sort());
  });

  it('accepts boundary lengths and values', () => {
    const p = asBusiness(validPayload(), { period_length: 'MONTHLY', period_start_day: 1, period_start_month: 12 });
    p.external_account_number = 'x'.repeat(128);
    p.billing_name = 'n'.repeat(510);
    p.billing_address1 = 'a'.repeat(512);
    p.customers[0].title = 't'.repeat(20);
    p.customers[0].given_name = 'g'.repeat(255);
    p.supply_addresses[0].meter_points[1].meters[0].gas_number_of_digits = 15;
    p.metadata = [{ key: 'k'.repeat(1024), value: null }];
    p.transfer_balance = '-9999999999.9999999999';
    expect(parse(p).transfer_balance).toBe('-9999999999.9999999999');
  });

  it('accepts null where the document allows it', () => {
    const p = validPayload();
    p.customers[0].email = null;
    p.customers[0].mobile = null;
    p.customers[0].date_of_birth = null;
    p.billing_email = null;
    p.supply_addresses[0].meter_points[0].supply_end_date = null;
    expect(parse(p).customers?.[0]?.email).toBeNull();
  });

  it('lists meter point identifiers in payload order', () => {
    expect(meterPointIdentifiers(parse(fullPayload()))).toEqual([KNOWN_MPAN, '1234567890', MPAN_B]);
  });

  it('reads today at parse time, so one schema follows a moving clock', () => {
    let today = '2026-11-21';
    const moving = makeAccountDataSchema(() => today, seededReferenceData());
    const p = validPayload();
    p.date_of_sale = '2026-11-22';
    expect(codesAndAttrs(errorsOf(p, moving))).toEqual([{ code: 'date_in_future', attr: 'date_of_sale' }]);
    today = '2026-11-22';
    expect(moving.parse(p).date_of_sale).toBe('2026-11-22');
  });
});

describe('account data: basic codes', () => {
  it('required', () => {
    expectErrors(
      (p) => {
        delete p.import_supplier;
        delete p.external_account_number;
        delete p.supply_addresses[0].meter_points[0].identifier;
        delete p.supply_addresses[0].meter_points[0].mpid;
        delete p.supply_addresses[0].meter_points[1].shipper_mpid;
        delete p.supply_addresses[0].supply_postcode;
      },
      [
        { code: 'required', attr: 'import_supplier' },
        // The document leaves it optional; this service keys accounts by it.
        { code: 'required', attr: 'external_account_number' },
        { code: 'required', attr: 'supply_addresses.0.meter_points.0.identifier' },
        { code: 'required', attr: 'supply_addresses.0.meter_points.0.mpid' },
        { code: 'required', attr: 'supply_addresses.0.meter_points.1.shipper_mpid' },
        { code: 'required', attr: 'supply_addresses.0.supply_postcode' },
      ],
    );
  });

  it('no longer requires customers, supply addresses or a customer\'s names', () => {
    // Contract change: the published EnergyAccount makes these optional. (A domestic customer's
    // family name is the document's own rule, with its own code, not `required`.)
    const found = problemsOf((p) => {
      delete p.customers;
      delete p.supply_addresses;
    });
    expect(found).not.toContain('required@customers');
    expect(found).not.toContain('required@supply_addresses');
    expect(problemsOf((p) => delete p.customers[0].given_name)).toEqual([]);
  });

  it('required inside a supplied optional object', () => {
    expectErrors(
      (p) => {
        p.metadata = [{ key: 'k' }];
        p.supply_addresses[0].meter_points[0].agreements = [{ effective_from: '2024-03-01' }];
        // Each meter keeps its registers and readings; only the required field goes.
        delete p.supply_addresses[0].meter_points[0].meters[0].meter_serial_number;
        delete p.supply_addresses[0].meter_points[1].meters[0].gas_number_of_digits;
      },
      [
        { code: 'required', attr: 'metadata.0.value' },
        { code: 'required', attr: 'supply_addresses.0.meter_points.0.agreements.0.tariff_code' },
        { code: 'required', attr: 'supply_addresses.0.meter_points.0.meters.0.meter_serial_number' },
        { code: 'required', attr: 'supply_addresses.0.meter_points.1.meters.0.gas_number_of_digits' },
      ],
    );
  });

  it('null', () => {
    expectErrors(
      (p) => {
        p.billing_name = null;
        p.account_type = null;
        // Contract change: a customer's email may now be null; given_name may not.
        p.customers[0].given_name = null;
        p.supply_addresses[0].meter_points[0].supply_type = null;
      },
      [
        { code: 'null', attr: 'billing_name' },
        { code: 'null', attr: 'account_type' },
        { code: 'null', attr: 'customers.0.given_name' },
        { code: 'null', attr: 'supply_addresses.0.meter_points.0.supply_type' },
      ],
    );
  });

  it('invalid_type', () => {
    expectErrors(
      (p) => {
        asBusiness(p, { period_length: 'MONTHLY', period_start_day: 1.5 });
        p.external_account_number = 123;
        p.customers[0].customer_preferences = { opted_into_updates: 'yes' };
        p.supply_addresses[0].meter_points[0].identifier = 1200023305967;
        p.metadata = {};
      },
      [
        { code: 'invalid_type', attr: 'external_account_number' },
        { code: 'invalid_type', attr: 'customers.0.customer_preferences.opted_into_updates' },
        { code: 'invalid_type', attr: 'supply_addresses.0.meter_points.0.identifier' },
        { code: 'invalid_type', attr: 'account_billing_options.period_start_day' },
        { code: 'invalid_type', attr: 'metadata' },
      ],
    );
    expect(codesAndAttrs(errorsOf([]))).toEqual([{ code: 'invalid_type', attr: null }]);
  });

  it('invalid_choice', () => {
    expectErrors(
      (p) => {
        p.account_type = 'PERSONAL';
        p.communication_preference = 'EMAIL';
        p.account_billing_options = { period_length: 'WEEKLY', period_start_day: 1 };
        p.supply_addresses[0].meter_points[0].supply_type = 'WATER';
      },
      [
        { code: 'invalid_choice', attr: 'account_type' },
        { code: 'invalid_choice', attr: 'communication_preference' },
        { code: 'invalid_choice', attr: 'account_billing_options.period_length' },
        { code: 'invalid_choice', attr: 'supply_addresses.0.meter_points.0.supply_type' },
      ],
    );
  });

  it('max_length', () => {
    expectErrors(
      (p) => {
        p.external_account_number = 'x'.repeat(129);
        p.billing_name = 'n'.repeat(511);
        p.billing_address5 = 'a'.repeat(513);
        p.customers[0].title = 't'.repeat(21);
        p.customers[0].family_name = 'f'.repeat(256);
        p.supply_addresses[0].supply_address2 = 'a'.repeat(513);
        p.supply_addresses[0].meter_points[0].mpid = 'TENTX';
        p.metadata = [{ key: 'k'.repeat(1025), value: 'v' }];
      },
      [
        { code: 'max_length', attr: 'external_account_number' },
        { code: 'max_length', attr: 'billing_name' },
        { code: 'max_length', attr: 'billing_address5' },
        { code: 'max_length', attr: 'customers.0.title' },
        { code: 'max_length', attr: 'customers.0.family_name' },
        { code: 'max_length', attr: 'supply_addresses.0.supply_address2' },
        { code: 'max_length', attr: 'supply_addresses.0.meter_points.0.mpid' },
        { code: 'max_length', attr: 'metadata.0.key' },
      ],
    );
  });

  it('blank for an empty external account number, and only there', () => {
    // Contract change: the document gives no minimum length to import_supplier or a customer's
    // names, so "" is accepted there (an unknown supplier is then the service's
    // import_supplier_not_found); this service still needs an external account number.
    expectErrors(
      (p) => {
        p.import_supplier = '';
        p.external_account_number = '';
        p.customers[0].given_name = '';
        p.customers[0].title = '';
      },
      [{ code: 'blank', attr: 'external_account_number' }],
    );
  });

  it('min_items where the document sets a minimum, and nowhere else', () => {
    // Contract change: customers, supply addresses and meter points have no minimum count in the
    // document; a business's portfolio needs at least one reference.
    expectErrors(
      (p) => {
        asBusiness(p);
        p.business = { company_name: 'Jabłoński Ltd', portfolios: [{ portfolio_references: [] }] };
      },
      [{ code: 'min_items', attr: 'business.portfolios.0.portfolio_references' }],
    );
    const found = problemsOf((p) => {
      p.customers = [];
      p.supply_addresses[0].meter_points = [];
    });
    expect(found.filter((f) => f.startsWith('min_items@'))).toEqual([]);
    expect(problemsOf((p) => (p.supply_addresses = [])).filter((f) => f.startsWith('min_items@'))).toEqual([]);
  });

  it('min_value and max_value', () => {
    expectErrors((p) => asBusiness(p, { period_length: 'MONTHLY', period_start_day: 29 }), [
      { code: 'max_value', attr: 'account_billing_options.period_start_day' },
    ]);
    expectErrors((p) => asBusiness(p, { period_length: 'MONTHLY', period_start_day: 0 }), [
      { code: 'min_value', attr: 'account_billing_options.period_start_day' },
    ]);
    expectErrors((p) => asBusiness(p, { period_length: 'MONTHLY', period_start_day: 1, period_start_month: 13 }), [
      { code: 'max_value', attr: 'account_billing_options.period_start_month' },
    ]);
    expectErrors((p) => (p.supply_addresses[0].meter_points[1].meters[0].gas_number_of_digits = 0), [
      { code: 'min_value', attr: 'supply_addresses.0.meter_points.1.meters.0.gas_number_of_digits' },
    ]);
  });

  it('unknown_field anywhere, pointing at the key', () => {
    expectErrors(
      (p) => {
        asBusiness(p, { period_length: 'MONTHLY', period_start_day: 1, period_end_day: 2 });
        p.occupier_status = 'unknown';
        p.customers[0].middle_name = 'X';
        // Contract change: the document's preferences have no opted_into_marketing.
        p.customers[0].customer_preferences = { opted_into_marketing: true };
        p.metadata = [{ key: 'k', value: 'v', type: 'x' }];
        p.supply_addresses[0].country = 'GB';
        p.supply_addresses[0].meter_points[0].mpan = KNOWN_MPAN;
        p.supply_addresses[0].meter_points[0].meters[0].make = 'L';
        p.supply_addresses[0].meter_points[0].agreements = [{ tariff_code: 'E-1R-VAR-22-11-01-C', effective_from: '2024-03-01', rate: 1 }];
      },
      [
        { code: 'unknown_field', attr: 'occupier_status' },
        { code: 'unknown_field', attr: 'customers.0.middle_name' },
        { code: 'unknown_field', attr: 'customers.0.customer_preferences.opted_into_marketing' },
        { code: 'unknown_field', attr: 'account_billing_options.period_end_day' },
        { code: 'unknown_field', attr: 'metadata.0.type' },
        { code: 'unknown_field', attr: 'supply_addresses.0.country' },
        { code: 'unknown_field', attr: 'supply_addresses.0.meter_points.0.mpan' },
        { code: 'unknown_field', attr: 'supply_addresses.0.meter_points.0.meters.0.make' },
        { code: 'unknown_field', attr: 'supply_addresses.0.meter_points.0.agreements.0.rate' },
      ],
    );
  });
});

describe('account data: dates', () => {
  it.each(['2026-02-30', '2023-02-29', '2026-13-01', '2026-00-10', '2026-1-01', '20260101', '2026-01-01T00:00:00Z', '0000-01-01', ''])(
    'rejects %j as invalid_date',
    (bad) => {
      expectErrors((p) => (p.supply_addresses[0].customer_at_supply_address_from_date = bad), [
        { code: 'invalid_date', attr: 'supply_addresses.0.customer_at_supply_address_from_date' },
      ]);
    },
  );

  it('accepts a leap day', () => {
    const p = validPayload();
    p.supply_addresses[0].meter_points[0].supply_start_date = '2024-02-29';
    expect(parse(p).supply_addresses?.[0]?.meter_points[0]?.supply_start_date).toBe('2024-02-29');
  });

  it('a bad date is only invalid_date, never also date_in_future', () => {
    expectErrors((p) => (p.date_of_sale = '9999-02-30'), [{ code: 'invalid_date', attr: 'date_of_sale' }]);
  });

  it('date_in_future: date_of_sale and last_statement_closing_date may be today, not tomorrow', () => {
    expectErrors(
      (p) => {
        p.date_of_sale = '2026-11-23';
        p.last_statement_closing_date = '2027-01-01';
      },
      [
        { code: 'date_in_future', attr: 'date_of_sale' },
        { code: 'date_in_future', attr: 'last_statement_closing_date' },
        // Contract change: the document's own rule refuses a last statement closing after today.
        { code: 'historical_statement_period_end_in_future', attr: 'last_statement_closing_date' },
      ],
    );
    const p = validPayload();
    p.date_of_sale = TODAY;
    p.last_statement_closing_date = TODAY;
    expect(() => parse(p)).not.toThrow();
  });

  it('date_in_future: date_of_birth must be before today', () => {
    expectErrors((p) => (p.customers[0].date_of_birth = TODAY), [{ code: 'date_in_future', attr: 'customers.0.date_of_birth' }]);
    const p = validPayload();
    p.customers[0].date_of_birth = '2026-11-21';
    expect(() => parse(p)).not.toThrow();
  });

  it('start_date_later_than_end_date: effective_to must be after effective_from', () => {
    for (const effective_to of ['2025-02-28', '2025-03-01']) {
      expectErrors(
        (p) => {
          p.supply_addresses[0].meter_points[0].agreements = [
            { tariff_code: 'E-1R-VAR-22-11-01-C', effective_from: '2024-03-01', effective_to: '2025-03-01' },
            { tariff_code: 'E-1R-VAR-22-11-01-C', effective_from: '2025-03-01', effective_to },
          ];
        },
        [{ code: 'start_date_later_than_end_date', attr: 'supply_addresses.0.meter_points.0.agreements.1.effective_to' }],
      );
    }
  });

  it('does not compare agreement dates when one of them is not a date', () => {
    expectErrors(
      (p) => {
        p.supply_addresses[0].meter_points[0].agreements = [{ tariff_code: 'E-1R-VAR-22-11-01-C', effective_from: '2025-02-30', effective_to: '2024-06-01' }];
      },
      [{ code: 'invalid_date', attr: 'supply_addresses.0.meter_points.0.agreements.0.effective_from' }],
    );
  });
});

describe('account data: contact details', () => {
  it('invalid_postcode', () => {
    expectErrors(
      (p) => {
        p.billing_postcode = 'NOT A POSTCODE';
        p.supply_addresses[0].supply_postcode = 'SW1A';
      },
      [
        { code: 'invalid_postcode', attr: 'billing_postcode' },
        { code: 'invalid_postcode', attr: 'supply_addresses.0.supply_postcode' },
      ],
    );
  });

  it('invalid_email', () => {
    expectErrors(
      (p) => {
        p.billing_email = 'bob@';
        p.customers[0].email = 'bob.example.com';
      },
      [
        { code: 'invalid_email', attr: 'billing_email' },
        { code: 'invalid_email', attr: 'customers.0.email' },
      ],
    );
  });

  it('invalid_phone_number: garbage, a landline given as mobile, an incomplete number', () => {
    expectErrors(
      (p) => {
        p.customers[0].landline = 'abcde';
        p.customers[0].mobile = '020 7946 0018';
        p.customers.push({ given_name: 'A', family_name: 'B', landline: '12345' });
      },
      [
        { code: 'invalid_phone_number', attr: 'customers.0.landline' },
        { code: 'invalid_phone_number', attr: 'customers.0.mobile' },
        { code: 'invalid_phone_number', attr: 'customers.1.landline' },
      ],
    );
  });

  it('normalises phone numbers to E.164, UK numbers without country code included', () => {
    const p = validPayload();
    p.customers[0].mobile = '+44 (0) 7400 123456';
    p.customers[0].landline = '07400123456';
    const c = parse(p).customers?.[0];
    expect(c?.mobile).toBe('+447400123456');
    expect(c?.landline).toBe('+447400123456');
  });
});

describe('account data: meter points', () => {
  // Contract change: a bad identifier also raises the document's invalid_supply_point_identifier.
  it('invalid_mpan: bad check digit, wrong length, non-digits', () => {
    for (const bad of ['1200023305968', '120002330596', '12000233059670', '120002330596X']) {
      expectErrors((p) => (p.supply_addresses[0].meter_points[0].identifier = bad), [
        { code: 'invalid_mpan', attr: 'supply_addresses.0.meter_points.0.identifier' },
        { code: 'invalid_supply_point_identifier', attr: 'supply_addresses.0.meter_points.0.identifier' },
      ]);
    }
  });

  it('invalid_mprn: gas identifiers are 6-10 digits', () => {
    for (const bad of ['12345', '12345678901', '12345a7', KNOWN_MPAN]) {
      expectErrors((p) => p.supply_addresses[0].meter_points.push(gasPoint(bad)), [
        { code: 'invalid_mprn', attr: 'supply_addresses.0.meter_points.2.identifier' },
        { code: 'invalid_supply_point_identifier', attr: 'supply_addresses.0.meter_points.2.identifier' },
      ]);
    }
    const p = validPayload();
    p.supply_addresses[0].meter_points = [gasPoint('123456'), gasPoint('1234567890')];
    expect(() => parse(p)).not.toThrow();
  });

  it('duplicate_meter_point within one supply address and across addresses, on each repeat', () => {
    // Contract change: the document's own codes are reported beside decisions.md's
    // duplicate_meter_point, at the same repeat: duplicate_meter_points_provided for a repeat at
    // the same supply address, duplicate_meter_points_on_different_supply_addresses_provided for one
    // first seen at another address.
    expectErrors(
      (p) => {
        p.supply_addresses[0].meter_points = [electricityPoint(KNOWN_MPAN), electricityPoint(KNOWN_MPAN), electricityPoint(MPAN_B)];
        p.supply_addresses.push({
          supply_address1: '3 Low Road',
          supply_postcode: 'M1 1AE',
          customer_at_supply_address_from_date: '2022-05-01',
          meter_points: [electricityPoint(MPAN_C), electricityPoint(MPAN_B), electricityPoint(KNOWN_MPAN)],
        });
      },
      [
        { code: 'duplicate_meter_point', attr: 'supply_addresses.0.meter_points.1.identifier' },
        { code: 'duplicate_meter_points_provided', attr: 'supply_addresses.0.meter_points.1.identifier' },
        { code: 'duplicate_meter_point', attr: 'supply_addresses.1.meter_points.1.identifier' },
        { code: 'duplicate_meter_points_on_different_supply_addresses_provided', attr: 'supply_addresses.1.meter_points.1.identifier' },
        { code: 'duplicate_meter_point', attr: 'supply_addresses.1.meter_points.2.identifier' },
        { code: 'duplicate_meter_points_on_different_supply_addresses_provided', attr: 'supply_addresses.1.meter_points.2.identifier' },
      ],
    );
  });

  it('duplicate_key in metadata', () => {
    // Contract change: the document's metadata_has_duplicate_keys is reported beside duplicate_key.
    expectErrors(
      (p) => {
        p.metadata = [
          { key: 'a', value: '1' },
          { key: 'a', value: '2' },
          { key: 'b', value: '3' },
        ];
      },
      [
        { code: 'duplicate_key', attr: 'metadata.1.key' },
        { code: 'metadata_has_duplicate_keys', attr: 'metadata.1.key' },
      ],
    );
  });
});

describe('account data: every problem at once', () => {
  it('reports field and cross-field errors together', () => {
    expectErrors(
      (p) => {
        p.billing_postcode = 'XX';
        p.transfer_balance = 'abc';
        p.surprise = 1;
        delete p.supply_addresses[0].meter_points[1].mpid;
        p.customers[0].landline = 'abcde';
        p.customers[0].mobile = '07400';
        p.supply_addresses[0].supply_postcode = 'nope';
        p.supply_addresses[0].meter_points.push(
          { ...electricityPoint(KNOWN_MPAN), supply_start_date: '2026-02-30' },
          { ...gasPoint('1'), extra: true },
        );
        p.supply_addresses[0].meter_points[0].agreements = [
          { tariff_code: 'E-1R-VAR-22-11-01-C', effective_from: '2025-01-01', effective_to: '2024-06-01' },
        ];
        p.metadata = [
          { key: 'k', value: '1' },
          { key: 'k', value: '2' },
        ];
      },
      [
        { code: 'invalid_postcode', attr: 'billing_postcode' },
        { code: 'invalid_decimal', attr: 'transfer_balance' },
        { code: 'unknown_field', attr: 'surprise' },
        { code: 'required', attr: 'supply_addresses.0.meter_points.1.mpid' },
        { code: 'invalid_phone_number', attr: 'customers.0.landline' },
        { code: 'invalid_phone_number', attr: 'customers.0.mobile' },
        { code: 'invalid_postcode', attr: 'supply_addresses.0.supply_postcode' },
        { code: 'start_date_later_than_end_date', attr: 'supply_addresses.0.meter_points.0.agreements.0.effective_to' },
        { code: 'invalid_date', attr: 'supply_addresses.0.meter_points.2.supply_start_date' },
        { code: 'duplicate_meter_point', attr: 'supply_addresses.0.meter_points.2.identifier' },
        { code: 'duplicate_meter_points_provided', attr: 'supply_addresses.0.meter_points.2.identifier' },
        { code: 'invalid_mprn', attr: 'supply_addresses.0.meter_points.3.identifier' },
        { code: 'invalid_supply_point_identifier', attr: 'supply_addresses.0.meter_points.3.identifier' },
        { code: 'unknown_field', attr: 'supply_addresses.0.meter_points.3.extra' },
        { code: 'duplicate_key', attr: 'metadata.1.key' },
        { code: 'metadata_has_duplicate_keys', attr: 'metadata.1.key' },
      ],
    );
  });

  it('gives every item a detail', () => {
    const p = validPayload();
    p.billing_email = 'x';
    p.customers[0].landline = 'abcde';
    for (const item of errorsOf(p)) expect(item.detail).toMatch(/\S/);
  });
});

describe('decimals', () => {
  const tb = (value: unknown) => {
    const p = validPayload();
    p.transfer_balance = value;
    return p;
  };

  it.each<[unknown, string]>([
    [0.1, '0.1'],
    [12.5, '12.5'],
    ['12.50', '12.5'],
    [-3, '-3'],
    ['1234567890.0123456789', '1234567890.0123456789'],
    ['1e2', '100'],
    [1e-10, '0.0000000001'],
    ['-0', '0'],
    [-0, '0'],
    ['-0.000', '0'],
    ['0012.3400', '12.34'],
    ['+7.', '7'],
    ['.5', '0.5'],
    ['1.00000000000000', '1'],
  ])('canonicalises %j to %s', (input, expected) => {
    expect(parse(tb(input)).transfer_balance).toBe(expected);
  });

  it.each<[unknown, string]>([
    ['12345678901', 'invalid_decimal'],
    [12345678901, 'invalid_decimal'],
    ['1e10', 'invalid_decimal'],
    ['0.12345678901', 'invalid_decimal'],
    ['0.30000000000000004', 'invalid_decimal'],
    ['abc', 'invalid_decimal'],
    ['', 'invalid_decimal'],
    ['1,5', 'invalid_decimal'],
    ['0x10', 'invalid_decimal'],
    ['Infinity', 'invalid_decimal'],
    ['NaN', 'invalid_decimal'],
    [true, 'invalid_type'],
    [{}, 'invalid_type'],
    [[1], 'invalid_type'],
    [null, 'null'],
  ])('rejects %j with %s', (input, code) => {
    expect(codesAndAttrs(errorsOf(tb(input)))).toEqual([{ code, attr: 'transfer_balance' }]);
  });

  it('says which limit was broken', () => {
    expect(errorsOf(tb('12345678901'))[0]?.detail).toMatch(/max 10 integer digits/);
    expect(errorsOf(tb('0.12345678901'))[0]?.detail).toMatch(/max 10 fraction digits/);
  });

  it('never goes through float arithmetic', () => {
    const wide = decimalString({ maxIntegerDigits: 20, maxFractionDigits: 20 });
    expect(wide.parse('0.30000000000000004')).toBe('0.30000000000000004');
    expect(wide.parse(0.1 + 0.2)).toBe('0.30000000000000004');
    expect(wide.parse('12345678901234567890.12345678901234567891')).toBe('12345678901234567890.12345678901234567891');
    // String() gives exponent form for these; the output never does.
    expect(wide.parse(1e19)).toBe('10000000000000000000');
    expect(wide.parse(1e-7)).toBe('0.0000001');
  });

  it('honours the limits it is given', () => {
    const money = decimalString({ maxIntegerDigits: 2, maxFractionDigits: 2 });
    expect(money.parse('99.99')).toBe('99.99');
    expect(money.safeParse('100').success).toBe(false);
    expect(money.safeParse('0.001').success).toBe(false);
  });
});

describe('datetimes', () => {
  it.each([
    ['2026-01-01T10:00:00Z', '2026-01-01T10:00:00Z'],
    ['2026-01-01T10:00:00+01:00', '2026-01-01T09:00:00Z'],
    ['2026-06-30T23:30:00-02:30', '2026-07-01T02:00:00Z'],
    ['2026-01-01T10:00:00+0100', '2026-01-01T09:00:00Z'],
    ['2026-01-01T10:00Z', '2026-01-01T10:00:00Z'],
    ['2026-01-01T10:00:00.5Z', '2026-01-01T10:00:00.500Z'],
    ['2026-01-01T10:00:00.123456+00:00', '2026-01-01T10:00:00.123Z'],
    ['2024-02-29T00:30:00+01:00', '2024-02-28T23:30:00Z'],
    // decisions §1: a bare date means midnight UTC.
    ['2012-01-01', '2012-01-01T00:00:00Z'],
  ])('normalises %s to %s', (input, expected) => {
    expect(datetimeString.parse(input)).toBe(expected);
  });

  it.each(['2026-01-01T10:00:00', '2026-02-30', '2026-02-30T10:00:00Z', '2026-01-01T24:00:00Z', '2026-01-01 10:00:00Z', 'soon'])(
    'rejects %j as invalid_datetime',
    (bad) => {
      const result = datetimeString.safeParse(bad);
      expect(result.success).toBe(false);
      expect(result.error?.issues.map((i) => (i.code === 'custom' ? (i.params as { code?: string }).code : i.code))).toEqual([
        'invalid_datetime',
      ]);
    },
  );

  it('compares instants, not text', () => {
    expect(compareDatetimes('2026-01-01T10:00:00+01:00', '2026-01-01T09:30:00Z')).toBeLessThan(0);
    expect(compareDatetimes('2026-01-01T09:00:00Z', '2026-01-01T10:00:00+01:00')).toBe(0);
    expect(compareDatetimes('2026-01-01T09:00:00.001Z', '2026-01-01T09:00:00Z')).toBeGreaterThan(0);
    expect(() => compareDatetimes('2026-01-01', '2026-01-01T09:00:00Z')).toThrow(TypeError);
  });
});

describe('MPAN check digit', () => {
  it('accepts hand-checked MPAN cores', () => {
    expect(isValidMpanCore(KNOWN_MPAN)).toBe(true);
    expect(isValidMpanCore(KNOWN_MPAN_2)).toBe(true);
    expect(mpanCheckDigit(KNOWN_MPAN.slice(0, 12))).toBe(7);
  });

  it('makes valid MPAN cores, and every other final digit is invalid', () => {
    for (const first12 of ['200000000001', '987654321098', '000000000000', '999999999999']) {
      const valid = mpan(first12);
      expect(isValidMpanCore(valid)).toBe(true);
      for (let d = 0; d <= 9; d++) {
        const candidate = `${first12}${String(d)}`;
        if (candidate !== valid) expect(isValidMpanCore(candidate)).toBe(false);
      }
    }
  });

  it('needs exactly 12 digits to compute a check digit', () => {
    expect(() => mpanCheckDigit('12345')).toThrow(TypeError);
    expect(() => mpanCheckDigit('12000233059a')).toThrow(TypeError);
  });

  it('accepts generated MPAN cores in a payload', () => {
    const p = validPayload();
    p.supply_addresses[0].meter_points[0].identifier = MPAN_C;
    expect(parse(p).supply_addresses?.[0]?.meter_points[0]?.identifier).toBe(MPAN_C);
  });
});
