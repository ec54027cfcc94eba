import { parsePhoneNumberFromString, type PhoneNumber } from 'libphonenumber-js/max';
import { parsePhoneNumberFromString as parseWithMobileMetadata } from 'libphonenumber-js/mobile';
import { isValid as isValidPostcode, toNormalised as normalisePostcode } from 'postcode';
import type { RuleSpec } from '../../../contract/rules.js';
import { isRecord } from '../../shared/fields.js';
import { parsedString, shown, stringRule } from './helpers.js';

// Phone numbers, postcodes, delivery point identifiers and e-mail addresses, wherever the document
// puts them. Numbers without a country code are read as UK numbers: the service migrates UK accounts.

const DEFAULT_COUNTRY = 'GB';

function phoneRule(at: string, what: string, valid: (p: PhoneNumber) => boolean, parse = parsePhoneNumberFromString): RuleSpec {
  return {
    at,
    codes: ['invalid_phone_number'],
    value: (v, report) => {
      // The document's default for a phone number is "": a blank number is one not given.
      if (typeof v !== 'string' || v === '') return v;
      const phone = parse(v, DEFAULT_COUNTRY);
      if (!phone || !valid(phone)) {
        report('invalid_phone_number', `${shown(v)} is not a valid ${what}.`);
        return v;
      }
      return phone.number;
    },
  };
}

/**
 * A mobile number must be one (decisions §1). Read with libphonenumber's "mobile" metadata, which holds
 * only mobile patterns: the same answer as the full metadata's getType() at a quarter of the cost.
 */
const mobile = (at: string) =>
  phoneRule(
    at,
    'mobile phone number',
    (p) => {
      const type = p.getType();
      return type === 'MOBILE' || type === 'FIXED_LINE_OR_MOBILE';
    },
    parseWithMobileMetadata,
  );
const anyPhone = (at: string) => phoneRule(at, 'phone number', (p) => p.isValid());

/** A UK postcode, normalised to upper case with one space (`SW1A 1AA`). */
function ukPostcode(s: string): string | null {
  const trimmed = s.trim();
  return isValidPostcode(trimmed) ? normalisePostcode(trimmed) : null;
}

const postcode = (at: string) =>
  stringRule(at, 'invalid_postcode', (s) => `${shown(s)} is not a valid UK postcode.`, (s) => ukPostcode(s) !== null, {
    normalise: (s) => ukPostcode(s) ?? s,
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
      if (ukPostcode(code) === null) ctx.addIssue('invalid_postcode', `${shown(code)} is not a valid UK postcode.`, ['postal_code']);
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
