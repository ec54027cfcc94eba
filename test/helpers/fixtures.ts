import { randomInt } from 'node:crypto';

const MPAN_PRIMES = [3, 5, 7, 13, 17, 19, 23, 29, 31, 37, 41, 43];

/** A 13-digit MPAN core with a valid check digit, unique per call within a run. */
let mpanCounter = randomInt(1, 1_000_000_000);
export function validMpan(): string {
  const first12 = `12${String(++mpanCounter).padStart(10, '0')}`;
  const sum = [...first12].reduce((acc, d, i) => acc + Number(d) * MPAN_PRIMES[i]!, 0);
  return first12 + String((sum % 11) % 10);
}

let mprnCounter = randomInt(100_000, 9_000_000);
export const validMprn = (): string => String(++mprnCounter).padStart(8, '1');

export interface AccountOverrides {
  [key: string]: unknown;
}

/** A complete, valid account data object (decisions §1) for supplier `supplier`. */
export function accountPayload(supplier: string, ext: string, overrides: AccountOverrides = {}): Record<string, unknown> {
  return {
    import_supplier: supplier,
    external_account_number: ext,
    account_type: 'DOMESTIC',
    billing_name: 'Ada Lovelace',
    billing_address1: '12 Analytical Row',
    billing_address2: 'Marylebone',
    billing_postcode: 'nw1 6xe',
    billing_email: 'ada@example.com',
    communication_preference: 'ONLINE',
    date_of_sale: '2024-03-01',
    transfer_balance: '-12.50',
    last_statement_closing_date: '2025-10-31',
    customers: [
      {
        title: 'Ms',
        given_name: 'Ada',
        family_name: 'Lovelace',
        email: 'ada@example.com',
        mobile: '07911 123456',
        landline: '020 7123 4567',
        date_of_birth: '1985-12-10',
        customer_preferences: { opted_into_offers: false, opted_into_updates: true },
      },
    ],
    supply_addresses: [
      {
        supply_address1: '12 Analytical Row',
        supply_postcode: 'NW1 6XE',
        customer_at_supply_address_from_date: '2020-01-01',
        meter_points: [
          {
            supply_type: 'ELECTRICITY',
            identifier: validMpan(),
            supply_start_date: '2024-03-01',
            mpid: 'TENT',
            meters: [
              {
                meter_serial_number: 'E10BG12345',
                registers: [{ register_id: '1', tpr: '00001', number_of_digits: 5 }],
                // Never billed before the switch: the supply start reading is the transfer reading.
                transfer_readings: [{ register_id: '1', reading_date: '2024-03-01', reading_value: '12345', reading_type: 'CUSTOMER' }],
              },
            ],
            agreements: [{ tariff_code: 'E-1R-VAR-22-11-01-C', effective_from: '2024-03-01' }],
            eac_history: [{ effective_from: '2024-03-01', tpr: '00001', consumption: '2900' }],
          },
          {
            supply_type: 'GAS',
            identifier: validMprn(),
            supply_start_date: '2024-03-01',
            mpid: 'TEN',
            shipper_mpid: 'TCL',
            meters: [
              {
                meter_serial_number: 'G4A00012345',
                gas_number_of_digits: 5,
                transfer_readings: [{ reading_date: '2024-03-01', reading_value: '4321', reading_type: 'CUSTOMER' }],
              },
            ],
            agreements: [{ tariff_code: 'G-1R-VAR-22-11-01-C', effective_from: '2024-03-01' }],
            aq_history: [{ effective_from: '2024-03-01', consumption: '11000' }],
          },
        ],
      },
    ],
    metadata: [{ key: 'legacy_tariff', value: 'Fixed 12M' }],
    ...overrides,
  };
}
