import type { RuleSpec } from '../../../contract/rules.js';
import { isRecord, normalisedMobile, normalisedPhone, normaliseUkPostcode } from '../../shared/fields.js';
import { parsedString, shown, stringRule } from './helpers.js';

// Phone numbers, postcodes, delivery point identifiers and e-mail addresses, wherever the document
// puts them. Numbers without a country code are read as UK numbers (fields.ts): the service migrates UK accounts.

function phoneRule(at: string, what: string, normalised: (s: string) => string | null): RuleSpec {
  return {
    at,
    codes: ['invalid_phone_number'],
    value: (v, report) => {
      // The document's default for a phone number is "": a blank number is one not given.
      if (typeof v !== 'string' || v === '') return v;
      const e164 = normalised(v);
      if (e164 === null) report('invalid_phone_number', `${shown(v)} is not a valid ${what}.`);
      return e164 ?? v;
    },
  };
}

/** A mobile number must be one (decisions §1). */
const mobile = (at: string) => phoneRule(at, 'mobile phone number', normalisedMobile);
const anyPhone = (at: string) => phoneRule(at, 'phone number', normalisedPhone);

const postcode = (at: string) => ({
  at,
  codes: ['invalid_postcode'],
  value: (v: unknown, report: (code: string, message: string) => void) => {
    if (typeof v !== 'string') return v;
    const normalised = normaliseUkPostcode(v);
    if (normalised === null) report('invalid_postcode', `${shown(v)} is not a valid UK postcode.`);
    return normalised ?? v;
  },
});

const deliveryPoint = (at: string) =>
  stringRule(at, 'invalid_delivery_point_identifier', (s) => `${shown(s)} may hold only capital letters and digits.`, (s) => /^[A-Z0-9]*$/.test(s));

const TEST_EMAIL = /^(?:test|xxx)@|@test\.com$|@test\.co\.uk$|\.xxx$|\.xx$/i;
const testEmail = (at: string) =>
  stringRule(at, 'possible_test_email_address', (s) => `${shown(s)} looks like a test address.`, (s) => !TEST_EMAIL.test(s));

export const contactRules: RuleSpec[] = [
  mobile('EnergyCustomer.mobile'),
  anyPhone('EnergyCustomer.landline'),
  mobile('BusinessUser.mobile'),
  anyPhone('BusinessUser.landline'),
  mobile('PropertyAdministrator.mobile'),
  anyPhone('PropertyAdministrator.landline'),
  anyPhone('CustomerAlternativeNumber.phone_number'),

  postcode('EnergyAccount.billing_postcode'),
  postcode('EnergyLegacySupplyAddress.supply_postcode'),
  postcode('EnergyAddress.postcode'),
  {
    // A structured address is checked as a UK one unless it names another country.
    at: 'Address',
    codes: ['invalid_postcode'],
    cross: (address, ctx) => {
      const code = parsedString(address, 'postal_code', ctx);
      const country = parsedString(address, 'country', ctx);
      // "" is the document's default: a postcode not given. Kept as sent (a cross-field check cannot rewrite it).
      if (code === undefined || code === '' || !isRecord(address) || (country !== undefined && country !== '' && country.toUpperCase() !== 'GB')) return;
      if (normaliseUkPostcode(code) === null) ctx.addIssue('invalid_postcode', `${shown(code)} is not a valid UK postcode.`, ['postal_code']);
    },
  },

  deliveryPoint('EnergyAccount.billing_delivery_point_identifier'),
  deliveryPoint('EnergyLegacySupplyAddress.supply_delivery_point_identifier'),
  deliveryPoint('Address.delivery_point_identifier'),

  testEmail('EnergyCustomer.email'),
  testEmail('BusinessUser.email'),
  testEmail('Complaint.complainant_email'),
  stringRule('EnergyAccount.billing_email', 'billing_email_not_valid', () => "A billing e-mail address may not contain 'blackhole+'.", (s) => !s.toLowerCase().includes('blackhole+')),
];
