import { addDaysUtc } from '../clock.js';

/**
 * The realistic mistakes a cohort can carry, one per spoiled account, each named by the error code
 * the account rules answer with. The first six are the service's own checks; the rest are rules of
 * the published document.
 */
export const MISTAKES = [
  'invalid_postcode',
  'invalid_phone_number',
  'invalid_mpan',
  'required',
  'date_in_future',
  'unknown_field',
  'customer_family_name_required',
  'registers_have_duplicate_tprs',
  'meter_with_duplicate_register_ids',
  'account_billing_options_provided_for_domestic_accounts',
  'transfer_reading_dates_must_match_last_billed_to_date',
  'billed_reading_after_last_billed_to_date',
  'missing_eacs_for_active_register_tpr',
  'psr_industry_code_not_provided',
] as const;
export type Mistake = (typeof MISTAKES)[number];

/**
 * Codes reported beside a mistake's own for the same fault at the same place: a bad MPAN check digit
 * is both the service's invalid_mpan and the document's invalid_supply_point_identifier.
 */
export const ALSO_REPORTED: Readonly<Partial<Record<Mistake, readonly string[]>>> = { invalid_mpan: ['invalid_supply_point_identifier'] };

/** Mistakes that are only mistakes on a domestic account: the generator makes such an account domestic. */
export const NEEDS_DOMESTIC: ReadonlySet<Mistake> = new Set(['customer_family_name_required', 'account_billing_options_provided_for_domestic_accounts']);

type Obj = Record<string, unknown>;
const list = (v: unknown) => v as Obj[];

/**
 * Spoils a valid account in one place. Every change stays inside the account's own dates (nothing
 * lands in the future except where that is the mistake), so each spoiled account breaks one rule.
 * The electricity meter point is always the first and the gas one the second.
 */
export function plantMistake(account: Obj, mistake: Mistake, today: string): void {
  const customer = list(account.customers)[0]!;
  const address = list(account.supply_addresses)[0]!;
  const [electricity, gas] = list(address.meter_points) as [Obj, Obj];
  const elecMeter = list(electricity.meters)[0]!;
  const gasMeter = list(gas.meters)[0]!;
  const lastBilledTo = account.last_billed_to_date as string;
  switch (mistake) {
    case 'invalid_postcode':
      account.billing_postcode = 'XX1 1XXX';
      break;
    case 'invalid_phone_number':
      customer.landline = '0123';
      break;
    case 'invalid_mpan': {
      // A slip in the last digit: the check digit no longer matches.
      const id = String(electricity.identifier);
      electricity.identifier = id.slice(0, 12) + String((Number(id[12]) + 1) % 10);
      break;
    }
    case 'required':
      delete address.supply_postcode;
      break;
    case 'date_in_future':
      customer.date_of_birth = addDaysUtc(today, 30);
      break;
    case 'unknown_field':
      account.loyalty_points = 120;
      break;
    case 'customer_family_name_required':
      delete customer.family_name;
      break;
    case 'registers_have_duplicate_tprs': {
      // A display register keyed in with the first register's TPR, placed second.
      const registers = list(elecMeter.registers);
      const first = registers[0]!;
      registers.splice(1, 0, { register_id: 'D', tpr: first.tpr, number_of_digits: first.number_of_digits, is_settlement: false });
      break;
    }
    case 'meter_with_duplicate_register_ids': {
      // A display register given the first register's id, placed second.
      const registers = list(elecMeter.registers);
      const first = registers[0]!;
      registers.splice(1, 0, { register_id: first.register_id, tpr: '00044', number_of_digits: first.number_of_digits, is_settlement: false });
      break;
    }
    case 'account_billing_options_provided_for_domestic_accounts':
      account.account_billing_options = { period_length: 'MONTHLY', period_start_day: 1 };
      break;
    case 'transfer_reading_dates_must_match_last_billed_to_date':
      // The gas read taken the day before billing stopped.
      list(gasMeter.transfer_readings)[0]!.reading_date = addDaysUtc(lastBilledTo, -1);
      break;
    case 'billed_reading_after_last_billed_to_date': {
      // A read after billing stopped, marked billed (still not in the future: the last billed to
      // date is weeks before today).
      const transfer = list(gasMeter.transfer_readings)[0]!;
      list(gasMeter.reading_history).unshift({
        reading_date: addDaysUtc(lastBilledTo, 7),
        reading_value: String(Number(transfer.reading_value) + 20),
        reading_type: 'CUSTOMER',
        billed: true,
      });
      break;
    }
    case 'missing_eacs_for_active_register_tpr': {
      const tpr = list(elecMeter.registers)[0]!.tpr;
      electricity.eac_history = list(electricity.eac_history).filter((e) => e.tpr !== tpr);
      break;
    }
    case 'psr_industry_code_not_provided':
      // A need recorded in words only, with neither fuel's industry code.
      customer.psr = [{ effective_from: `${lastBilledTo}T00:00:00Z`, additional_information: 'Uses a stairlift' }];
      break;
  }
}
