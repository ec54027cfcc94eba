import { describe, expect, it } from 'vitest';
import { accountErrors, parseAccount, published } from './harness.js';

// The rules of contact.ts, dates.ts and service.ts. Each case starts from the document's example
// account, which passes every rule, and changes one thing. Problems are compared as sorted 'code@attr'
// lists, so the order rules run in does not matter; where a change also (rightly) trips a rule of
// another part of the account, the full list is asserted and a comment says why.

const expectErrors = (payload: unknown, items: string[]) => expect(accountErrors(payload).sort()).toEqual([...items].sort());

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the cases reach into the example freely
type Account = any;
const account = (change: (a: Account) => void = () => {}): Account => {
  const a = published('account');
  change(a);
  return a;
};
/** The account as stored after parsing: shows what a rule normalised. */
const parsed = (change: (a: Account) => void): Account => parseAccount(account(change));

// Where the example's parts sit, as accountErrors names them.
const E = 'supply_addresses.0.meter_points.0';
const G = 'supply_addresses.0.meter_points.1';
const PA = 'supply_addresses.0.property_administrators.0';
const elec = (a: Account) => a.supply_addresses[0].meter_points[0];
const gas = (a: Account) => a.supply_addresses[0].meter_points[1];
const admin = (a: Account) => a.supply_addresses[0].property_administrators[0];

/** A business account with one business user (users are named on the business). */
const withUser = (user: Record<string, unknown>) =>
  account((a) => {
    a.account_type = 'BUSINESS';
    a.business = { company_name: 'Acme Ltd', users: [{ business_roles: ['ADMIN'], given_name: 'Ada', family_name: 'Byron', ...user }] };
  });

/**
 * A structured billing address. The example's legacy billing_address1… and billing_postcode go, since
 * giving both forms is a problem of its own (billing_address_new_style_and_legacy).
 */
const withBillingAddress = (address: Record<string, unknown>) =>
  account((a) => {
    for (const f of ['billing_address1', 'billing_address2', 'billing_address3', 'billing_address4', 'billing_address5', 'billing_postcode']) delete a[f];
    a.billing_address = address;
  });

/** A feed-in tariff block complete enough to pass its own rules (payment details included). */
const fit = (address: Record<string, unknown>, readingDate = '2026-01-15') => ({
  installations: [{ fit_id: 'FIT-1', address: { line1: '1 Station Road', ...address } }],
  meters: [{ extensions: ['EXT-1'], last_billed_to_date: '2019-08-01', serial_number: 'S1', type: 'GENERATION', transfer_reading: { reading_date: readingDate, reading_value: '1.0' } }],
  payment_method: 'BACS',
  vendor_name: 'STRIPE',
  instruction_reference: 'REF-1',
});

const complaint = (email: string) => ({
  complainant_email: email,
  complainant_name: 'Bob',
  complaint_contacts: [],
  created_at: '2020-01-01T00:00:00Z',
  has_chsr_letter_been_sent: false,
  has_eight_week_letter_been_sent: false,
  type_of_complaint: 'BILLING',
  subtype_of_complaint: 'BILL_ACCURACY',
});

describe('phone numbers', () => {
  it('EnergyCustomer.mobile invalid_phone_number: a landline is not a mobile, and a blank number is one not given', () => {
    expectErrors(account((a) => (a.customers[0].mobile = '02072343456')), ['invalid_phone_number@customers.0.mobile']);
    // A foreign fixed line is no mobile either, country code or not.
    expectErrors(account((a) => (a.customers[0].mobile = '+33 1 23 45 67 89')), ['invalid_phone_number@customers.0.mobile']);
    expectErrors(account((a) => (a.customers[0].mobile = '')), []);
    expectErrors(account((a) => (a.customers[0].mobile = null)), []);
    // A UK number without its country code is read as one and stored in international form.
    expect(parsed((a) => (a.customers[0].mobile = '07123 456789')).customers[0].mobile).toBe('+447123456789');
    expect(parsed((a) => (a.customers[0].mobile = '+33 6 12 34 56 78')).customers[0].mobile).toBe('+33612345678');
    expect(parsed((a) => (a.customers[0].mobile = '')).customers[0].mobile).toBe('');
  });

  it('EnergyCustomer.landline invalid_phone_number: a landline is any valid number, too short is not', () => {
    expectErrors(account((a) => (a.customers[0].landline = '0207')), ['invalid_phone_number@customers.0.landline']);
    expectErrors(account((a) => (a.customers[0].landline = 'call me')), ['invalid_phone_number@customers.0.landline']);
    expectErrors(account((a) => (a.customers[0].landline = '')), []);
    expect(parsed((a) => (a.customers[0].landline = '020 7234 3456')).customers[0].landline).toBe('+442072343456');
    expect(parsed((a) => (a.customers[0].landline = '+33 1 23 45 67 89')).customers[0].landline).toBe('+33123456789');
  });

  it('BusinessUser.mobile invalid_phone_number: a business user\'s mobile is a mobile number', () => {
    expectErrors(withUser({ mobile: '02072343456' }), ['invalid_phone_number@business.users.0.mobile']);
    expectErrors(withUser({ mobile: '' }), []);
    expectErrors(withUser({ mobile: null }), []);
    expect(parseAccount(withUser({ mobile: '07123 456789' }))).toMatchObject({ business: { users: [{ mobile: '+447123456789' }] } });
  });

  it('BusinessUser.landline invalid_phone_number: a business user\'s landline is a valid number', () => {
    expectErrors(withUser({ landline: '123' }), ['invalid_phone_number@business.users.0.landline']);
    expectErrors(withUser({ landline: '' }), []);
    expect(parseAccount(withUser({ landline: '020 7234 3456' }))).toMatchObject({ business: { users: [{ landline: '+442072343456' }] } });
  });

  it('PropertyAdministrator.mobile invalid_phone_number: an administrator\'s mobile is a mobile number', () => {
    expectErrors(account((a) => (admin(a).mobile = '02072343456')), [`invalid_phone_number@${PA}.mobile`]);
    expectErrors(account((a) => (admin(a).mobile = '')), []);
    expect(parsed((a) => (admin(a).mobile = '07712 354 321')).supply_addresses[0].property_administrators[0].mobile).toBe('+447712354321');
  });

  it('PropertyAdministrator.landline invalid_phone_number: an administrator\'s landline is a valid number', () => {
    expectErrors(account((a) => (admin(a).landline = '12')), [`invalid_phone_number@${PA}.landline`]);
    expectErrors(account((a) => (admin(a).landline = '')), []);
    // The example's number already carries its country code; it is kept as it is.
    expect(parsed(() => {}).supply_addresses[0].property_administrators[0].landline).toBe('+442076543210');
  });

  it('CustomerAlternativeNumber.phone_number invalid_phone_number: each alternative number is a valid one', () => {
    const numbers = (...phones: unknown[]) => account((a) => (a.customers[0].alternative_phone_numbers = phones.map((phone_number) => ({ phone_number }))));
    expectErrors(numbers('02072343456', '12345'), ['invalid_phone_number@customers.0.alternative_phone_numbers.1.phone_number']);
    expectErrors(numbers('', null, '+33 1 23 45 67 89'), []);
    expect(parseAccount(numbers('020 7234 3456', ''))).toMatchObject({
      customers: [{ alternative_phone_numbers: [{ phone_number: '+442072343456' }, { phone_number: '' }] }],
    });
  });
});

describe('postcodes and delivery point identifiers', () => {
  it('EnergyAccount.billing_postcode invalid_postcode: a billing postcode is a UK postcode, stored in its standard form', () => {
    expectErrors(account((a) => (a.billing_postcode = 'W1F')), ['invalid_postcode@billing_postcode']);
    expectErrors(account((a) => (a.billing_postcode = 'NOT A POSTCODE')), ['invalid_postcode@billing_postcode']);
    expect(parsed((a) => (a.billing_postcode = ' w1f9de ')).billing_postcode).toBe('W1F 9DE');
  });

  it('EnergyLegacySupplyAddress.supply_postcode invalid_postcode: a supply postcode is a UK postcode, stored in its standard form', () => {
    expectErrors(account((a) => (a.supply_addresses[0].supply_postcode = 'ABC')), ['invalid_postcode@supply_addresses.0.supply_postcode']);
    expect(parsed((a) => (a.supply_addresses[0].supply_postcode = 'w1f9de')).supply_addresses[0].supply_postcode).toBe('W1F 9DE');
  });

  it('EnergyAddress.postcode invalid_postcode: a feed-in installation\'s postcode is a UK postcode, stored in its standard form', () => {
    expectErrors(account((a) => (a.fit = fit({ postcode: 'SW1A' }))), ['invalid_postcode@fit.installations.0.address.postcode']);
    expectErrors(account((a) => (a.fit = fit({ postcode: 'SW1A 1AA' }))), []);
    expect(parsed((a) => (a.fit = fit({ postcode: 'sw1a1aa' }))).fit.installations[0].address.postcode).toBe('SW1A 1AA');
  });

  it('Address invalid_postcode: a structured address is checked as a UK one unless it names another country', () => {
    expectErrors(withBillingAddress({ country: 'GB', postal_code: 'NOT A CODE' }), ['invalid_postcode@billing_address.postal_code']);
    // The country code is read without regard to case.
    expectErrors(withBillingAddress({ country: 'gb', postal_code: '75001' }), ['invalid_postcode@billing_address.postal_code']);
    expectErrors(withBillingAddress({ country: 'GB', postal_code: 'SW1A 1AA', street_address: '10 Downing Street' }), []);
    expectErrors(withBillingAddress({ country: 'FR', postal_code: '75001', street_address: '1 rue de Rivoli' }), []);
    // No postcode given: nothing to check.
    expectErrors(withBillingAddress({ country: 'GB', street_address: '10 Downing Street' }), []);
  });

  it('EnergyAccount.billing_delivery_point_identifier invalid_delivery_point_identifier: capital letters and digits only', () => {
    expectErrors(account((a) => (a.billing_delivery_point_identifier = '1a')), ['invalid_delivery_point_identifier@billing_delivery_point_identifier']);
    expectErrors(account((a) => (a.billing_delivery_point_identifier = '1A-2')), ['invalid_delivery_point_identifier@billing_delivery_point_identifier']);
    expectErrors(account((a) => (a.billing_delivery_point_identifier = '1AB2')), []);
    expectErrors(account((a) => (a.billing_delivery_point_identifier = '')), []);
  });

  it('EnergyLegacySupplyAddress.supply_delivery_point_identifier invalid_delivery_point_identifier: capital letters and digits only', () => {
    expectErrors(account((a) => (a.supply_addresses[0].supply_delivery_point_identifier = 'a-1')), [
      'invalid_delivery_point_identifier@supply_addresses.0.supply_delivery_point_identifier',
    ]);
    expectErrors(account((a) => (a.supply_addresses[0].supply_delivery_point_identifier = '1AB2')), []);
  });

  it('Address.delivery_point_identifier invalid_delivery_point_identifier: capital letters and digits only', () => {
    expectErrors(withBillingAddress({ country: 'GB', postal_code: 'SW1A 1AA', delivery_point_identifier: 'ab12' }), [
      'invalid_delivery_point_identifier@billing_address.delivery_point_identifier',
    ]);
    expectErrors(withBillingAddress({ country: 'GB', postal_code: 'SW1A 1AA', delivery_point_identifier: 'AB12' }), []);
    expectErrors(withBillingAddress({ country: 'GB', postal_code: 'SW1A 1AA', delivery_point_identifier: '' }), []);
  });
});

describe('e-mail addresses', () => {
  it('EnergyCustomer.email possible_test_email_address: addresses that look made up for testing are refused', () => {
    for (const email of ['test@example.com', 'TEST@example.com', 'xxx@example.com', 'bob@test.com', 'bob@test.co.uk', 'bob@example.xxx', 'bob@example.xx']) {
      expectErrors(account((a) => (a.customers[0].email = email)), ['possible_test_email_address@customers.0.email']);
    }
    // "test" inside a real-looking address is not a sign of one.
    for (const email of ['contest@example.com', 'test.person@example.com', 'bob@latest.com', 'bob@test.example.com']) {
      expectErrors(account((a) => (a.customers[0].email = email)), []);
    }
  });

  it('BusinessUser.email possible_test_email_address: a business user\'s address is checked the same way', () => {
    expectErrors(withUser({ email: 'test@acme.co.uk' }), ['possible_test_email_address@business.users.0.email']);
    expectErrors(withUser({ email: 'ada@acme.co.uk' }), []);
    expectErrors(withUser({ email: null }), []);
  });

  it('Complaint.complainant_email possible_test_email_address: a complainant\'s address is checked the same way', () => {
    expectErrors(account((a) => (a.complaints = [complaint('test@example.com')])), ['possible_test_email_address@complaints.0.complainant_email']);
    expectErrors(account((a) => (a.complaints = [complaint('complaints@example.com')])), []);
  });

  it('EnergyAccount.billing_email billing_email_not_valid: a billing address may not be a "blackhole+" one', () => {
    expectErrors(account((a) => (a.billing_email = 'blackhole+1@example.com')), ['billing_email_not_valid@billing_email']);
    expectErrors(account((a) => (a.billing_email = 'BlackHole+x@example.com')), ['billing_email_not_valid@billing_email']);
    expectErrors(account((a) => (a.billing_email = 'blackhole@example.com')), []);
    expectErrors(account((a) => (a.billing_email = 'accounts+blackhole@example.com')), []);
  });
});

describe('periods: an end may not come before the start', () => {
  it('ElectricityAgreement start_date_later_than_end_date: an agreement ends after it starts (a same-day agreement is refused)', () => {
    const first = (effective_from: string, effective_to: string) =>
      account((a) => elec(a).agreements.unshift({ tariff_code: 'ELEC-1234-J', effective_from, effective_to }));
    // A zero-length agreement just before the example's one (which starts 2019-08-01).
    expectErrors(first('2019-08-01', '2019-08-01'), [`start_date_later_than_end_date@${E}.agreements.0.effective_to`]);
    // The reversed agreement also no longer leads on to the next one without a gap.
    expectErrors(first('2019-08-02', '2019-08-01'), [
      `gaps_or_overlaps_in_agreement_dates@${E}.agreements.0.effective_from`,
      `start_date_later_than_end_date@${E}.agreements.0.effective_to`,
    ]);
    // The example's own agreement ended before it starts leaves the meter point without a usable one.
    expectErrors(account((a) => (elec(a).agreements[0].effective_to = '2019-07-31')), [
      `meter_point_with_no_agreement@${E}.agreements`,
      `no_agreement_covering_last_billed_to_date@${E}.agreements`,
      `start_date_later_than_end_date@${E}.agreements.0.effective_to`,
    ]);
    expectErrors(first('2019-03-01', '2019-08-01'), []);
    expectErrors(account((a) => (elec(a).agreements[0].effective_to = '2019-08-02')), []);
  });

  it('GasAgreement start_date_later_than_end_date: an agreement ends after it starts (a same-day agreement is refused)', () => {
    const first = (effective_from: string, effective_to: string) =>
      account((a) => gas(a).agreements.unshift({ tariff_code: 'GAS-1234-J', effective_from, effective_to }));
    expectErrors(first('2019-08-01', '2019-08-01'), [`start_date_later_than_end_date@${G}.agreements.0.effective_to`]);
    // As for electricity: the example's agreement reversed leaves the meter point without one.
    expectErrors(account((a) => (gas(a).agreements[0].effective_to = '2019-08-01')), [
      `meter_point_with_no_agreement@${G}.agreements`,
      `no_agreement_covering_last_billed_to_date@${G}.agreements`,
      `start_date_later_than_end_date@${G}.agreements.0.effective_to`,
    ]);
    expectErrors(first('2019-04-10', '2019-08-01'), []);
    expectErrors(account((a) => (gas(a).agreements[0].effective_to = '2019-08-02')), []);
  });

  it('ElectricityCapacityValue start_date_later_than_end_date: a capacity value ends on or after its start', () => {
    const capacity = (from: string, to: string) => account((a) => (elec(a).capacity_values = [{ effective_from_date: from, effective_to_date: to, value: '10' }]));
    expectErrors(capacity('2019-02-01', '2019-01-31'), [`start_date_later_than_end_date@${E}.capacity_values.0.effective_to_date`]);
    expectErrors(capacity('2019-02-01', '2019-02-02'), []);
    // An equal end is allowed by this rule; the list's own rule refuses a zero-length period.
    expectErrors(capacity('2019-02-01', '2019-02-01'), [`zero_length_periods@${E}.capacity_values.0.effective_to_date`]);
  });

  it('ElectricityConfigurationPeriod start_date_later_than_end_date: a configuration period ends on or after its start', () => {
    // A single closed period is also not open-ended, which the list's own rule asks of the latest one.
    expectErrors(account((a) => (elec(a).configuration_periods = [{ effective_from_date: '2019-02-01', effective_to_date: '2019-01-31' }])), [
      `latest_configuration_period_not_open_ended@${E}.configuration_periods.0.effective_to_date`,
      `start_date_later_than_end_date@${E}.configuration_periods.0.effective_to_date`,
    ]);
    expectErrors(account((a) => (elec(a).configuration_periods = [
      { effective_from_date: '2019-02-01', effective_to_date: '2019-02-02' },
      { effective_from_date: '2019-02-02' },
    ])), []);
  });

  it('ElectricityMeterPoint start_date_later_than_end_date: supply ends on or after it starts', () => {
    // Moving the supply start past the agreement's start also puts that agreement before the supply.
    expectErrors(account((a) => {
      elec(a).supply_start_date = '2019-08-02';
      elec(a).supply_end_date = '2019-08-01';
    }), [`agreement_start_date_before_supply_start_date@${E}.agreements.0.effective_from`, `start_date_later_than_end_date@${E}.supply_end_date`]);
    expectErrors(account((a) => {
      elec(a).supply_start_date = '2019-08-01';
      elec(a).supply_end_date = '2019-08-01';
    }), []);
    expectErrors(account((a) => (elec(a).supply_end_date = '2019-08-01')), []);
  });

  it('GasMeterPoint start_date_later_than_end_date: supply ends on or after it starts', () => {
    // As for electricity: the agreement then starts before the supply.
    expectErrors(account((a) => {
      gas(a).supply_start_date = '2019-08-02';
      gas(a).supply_end_date = '2019-08-01';
    }), [`agreement_start_date_before_supply_start_date@${G}.agreements.0.effective_from`, `start_date_later_than_end_date@${G}.supply_end_date`]);
    expectErrors(account((a) => {
      gas(a).supply_start_date = '2019-08-01';
      gas(a).supply_end_date = '2019-08-01';
    }), []);
  });

  it('GasAnnualQuantity start_date_later_than_end_date: an annual quantity ends on or after its start', () => {
    // The 2018 entry ending in 2017 also leaves a gap before the 2019 entry, which the history's own rule reports.
    expectErrors(account((a) => (gas(a).aq_history[1].effective_to = '2017-12-31')), [
      `gaps_or_overlaps_in_aq_history@${G}.aq_history.0.effective_from`,
      `start_date_later_than_end_date@${G}.aq_history.1.effective_to`,
    ]);
    // The oldest entry may cover a single day: it starts and ends on 2017-12-31.
    expectErrors(account((a) => (gas(a).aq_history[2].effective_from = '2017-12-31')), []);
  });

  it('EnergyCommissionContract start_date_later_than_end_date: a commission contract ends on or after its start', () => {
    const contract = (effective_from: string, effective_to: string) =>
      account((a) => (a.commission_contracts = [{ affiliate_organisation_name: 'Affiliate Ltd', effective_from, effective_to, mpxn: '1200060176720', status: 'PAID' }]));
    expectErrors(contract('2020-02-01', '2020-01-31'), ['start_date_later_than_end_date@commission_contracts.0.effective_to']);
    expectErrors(contract('2020-02-01', '2020-02-01'), []);
  });

  it('PartnerOrganisation start_date_later_than_end_date: validity ends on or after it starts, compared as instants', () => {
    const partner = (valid_from: string, valid_to: string) =>
      account((a) => (a.partner_organisations = [{ organisation_number: 'P-1', role: 'BROKER', valid_from, valid_to }]));
    // 00:30 at +01:00 is 23:30 UTC the day before, although it sorts after as text.
    expectErrors(partner('2020-02-01T00:00:00Z', '2020-02-01T00:30:00+01:00'), ['start_date_later_than_end_date@partner_organisations.0.valid_to']);
    // The same instant written with two offsets.
    expectErrors(partner('2020-02-01T01:00:00+01:00', '2020-02-01T00:00:00Z'), []);
  });

  it('PropertyAdministrator start_date_later_than_end_date: an administrator\'s term ends on or after it starts', () => {
    const term = (from: string, to: string) =>
      account((a) => {
        admin(a).effective_from = from;
        admin(a).effective_to = to;
      });
    expectErrors(term('2020-02-01', '2020-01-31'), [`start_date_later_than_end_date@${PA}.effective_to`]);
    expectErrors(term('2020-02-01', '2020-02-01'), []);
  });

  it('AccountCampaign start_date_same_as_end_date: a campaign expires after it starts', () => {
    const campaign = (start: string, expiry: string) =>
      account((a) => {
        a.account_campaigns[0].start_date = start;
        a.account_campaigns[0].expiry_date = expiry;
      });
    expectErrors(campaign('2020-01-01', '2020-01-01'), ['start_date_same_as_end_date@account_campaigns.0.expiry_date']);
    expectErrors(campaign('2020-01-02', '2020-01-01'), ['start_date_same_as_end_date@account_campaigns.0.expiry_date']);
    expectErrors(campaign('2020-01-01', '2020-01-02'), []);
  });

  it('EnergyTaxExemption start_date_same_as_end_date: a tax exemption ends after it starts', () => {
    // Exemptions are for business accounts (their own rule), so the account is made one.
    const exemption = (effective_from: string, effective_to: string) =>
      account((a) => {
        a.account_type = 'BUSINESS';
        elec(a).ccl_exemptions = [{ effective_from, effective_to, rate: '0.5' }];
      });
    expectErrors(exemption('2019-01-01', '2019-01-01'), [`start_date_same_as_end_date@${E}.ccl_exemptions.0.effective_to`]);
    expectErrors(exemption('2019-01-01', '2018-12-31'), [`start_date_same_as_end_date@${E}.ccl_exemptions.0.effective_to`]);
    expectErrors(exemption('2019-01-01', '2019-01-02'), []);
  });
});

describe('dates that may not be in the future', () => {
  // TODAY is 2026-01-15: a date-time counts by its calendar day in UTC.
  it('AccountConsent.signed_at date_in_future: an account consent was signed by today', () => {
    const consent = (signed_at: string) => account((a) => (a.consents = [{ type: 'MARKETING', value: 'ACCEPTED', signed_at }]));
    expectErrors(consent('2026-01-16T00:00:00Z'), ['date_in_future@consents.0.signed_at']);
    // 23:30 at -01:00 is already the 16th in UTC; 00:30 at +01:00 on the 16th is still the 15th.
    expectErrors(consent('2026-01-15T23:30:00-01:00'), ['date_in_future@consents.0.signed_at']);
    expectErrors(consent('2026-01-16T00:30:00+01:00'), []);
    expectErrors(consent('2026-01-15T23:59:59Z'), []);
  });

  it('CustomerConsent.signed_at date_in_future: a customer consent was signed by today', () => {
    // A customer gives consents or customer_preferences, not both (its own rule): the preferences go.
    const consent = (signed_at: string) =>
      account((a) => {
        delete a.customers[0].customer_preferences;
        a.customers[0].consents = [{ type: 'MARKETING', value: 'ACCEPTED', signed_at }];
      });
    expectErrors(consent('2026-01-16T00:00:00Z'), ['date_in_future@customers.0.consents.0.signed_at']);
    expectErrors(consent('2026-01-15T12:00:00Z'), []);
  });

  it('ElectricityMeter.smart_commissioned_on future_smart_meter_commission_date: a smart meter was commissioned by today', () => {
    // The example's electricity meter is not smart; a commissioning date needs a smart type (its own rule).
    const commissioned = (on: string) =>
      account((a) => {
        elec(a).meters[0].smart_type = 'SMETS2';
        elec(a).meters[0].smart_commissioned_on = on;
      });
    expectErrors(commissioned('2026-01-16'), [`future_smart_meter_commission_date@${E}.meters.0.smart_commissioned_on`]);
    expectErrors(commissioned('2026-01-15'), []);
  });

  it('GasMeter.smart_commissioned_on future_smart_meter_commission_date: a smart meter was commissioned by today', () => {
    expectErrors(account((a) => (gas(a).meters[0].smart_commissioned_on = '2026-01-16')), [`future_smart_meter_commission_date@${G}.meters.0.smart_commissioned_on`]);
    expectErrors(account((a) => (gas(a).meters[0].smart_commissioned_on = '2026-01-15')), []);
  });
});

describe('duplicates', () => {
  // This service's own duplicate_meter_point (decisions §1) is reported beside the document's code,
  // so clients reading either keep working.
  it('EnergyLegacySupplyAddress.meter_points duplicate_meter_points_provided: a meter point appears once at its address', () => {
    expectErrors(account((a) => a.supply_addresses[0].meter_points.push(structuredClone(gas(a)))), [
      `duplicate_meter_point@supply_addresses.0.meter_points.2.identifier`,
      `duplicate_meter_points_provided@supply_addresses.0.meter_points.2.identifier`,
    ]);
    // Every repeat after the first is reported.
    expectErrors(account((a) => a.supply_addresses[0].meter_points.push(structuredClone(gas(a)), structuredClone(gas(a)))), [
      `duplicate_meter_point@supply_addresses.0.meter_points.2.identifier`,
      `duplicate_meter_point@supply_addresses.0.meter_points.3.identifier`,
      `duplicate_meter_points_provided@supply_addresses.0.meter_points.2.identifier`,
      `duplicate_meter_points_provided@supply_addresses.0.meter_points.3.identifier`,
    ]);
  });

  /** A second supply address holding a copy of the example's gas meter point, with `identifier`. */
  const secondAddress = (identifier: string) =>
    account((a) => {
      const sa = structuredClone(a.supply_addresses[0]);
      sa.supply_address1 = '1 Other Road';
      sa.meter_points = [{ ...sa.meter_points[1], identifier }];
      delete sa.property_administrators;
      a.supply_addresses.push(sa);
    });

  it('EnergyAccount.supply_addresses duplicate_meter_points_on_different_supply_addresses_provided: a meter point belongs to one address', () => {
    expectErrors(secondAddress('9353824109'), [
      'duplicate_meter_point@supply_addresses.1.meter_points.0.identifier',
      'duplicate_meter_points_on_different_supply_addresses_provided@supply_addresses.1.meter_points.0.identifier',
    ]);
    expectErrors(secondAddress('9353824100'), []);
  });

  it('EnergyAccount metadata_has_duplicate_keys: each metadata key of the account is given once (with duplicate_key)', () => {
    expectErrors(account((a) => a.metadata.push({ key: 'metadata_key', value: {} })), ['duplicate_key@metadata.1.key', 'metadata_has_duplicate_keys@metadata.1.key']);
    expectErrors(account((a) => a.metadata.push({ key: 'metadata_key', value: 1 }, { key: 'metadata_key', value: 2 })), [
      'duplicate_key@metadata.1.key',
      'duplicate_key@metadata.2.key',
      'metadata_has_duplicate_keys@metadata.1.key',
      'metadata_has_duplicate_keys@metadata.2.key',
    ]);
    // Keys differ by case.
    expectErrors(account((a) => a.metadata.push({ key: 'METADATA_KEY', value: {} })), []);
  });

  it('EnergyCustomer metadata_has_duplicate_keys: each metadata key of a customer is given once (with duplicate_key)', () => {
    const metadata = (...keys: string[]) => account((a) => (a.customers[0].metadata = keys.map((key, i) => ({ key, value: i }))));
    expectErrors(metadata('k', 'other', 'k'), ['duplicate_key@customers.0.metadata.2.key', 'metadata_has_duplicate_keys@customers.0.metadata.2.key']);
    // The account's key may recur on a customer: each list is its own namespace.
    expectErrors(metadata('metadata_key', 'other'), []);
  });
});

describe('this service\'s own rules (decisions §1, not in the document)', () => {
  it('ElectricityMeterPoint.identifier invalid_mpan: an MPAN core is 13 digits with a valid check digit', () => {
    // The document's identifier rule refuses the same values with its own code.
    expectErrors(account((a) => (elec(a).identifier = '1200060176721')), [`invalid_mpan@${E}.identifier`, `invalid_supply_point_identifier@${E}.identifier`]);
    expectErrors(account((a) => (elec(a).identifier = '120006017672')), [`invalid_mpan@${E}.identifier`, `invalid_supply_point_identifier@${E}.identifier`]);
    expectErrors(account(() => {}), []);
  });

  it('GasMeterPoint.identifier invalid_mprn: an MPRN is 6 to 10 digits', () => {
    expectErrors(account((a) => (gas(a).identifier = '12345')), [`invalid_mprn@${G}.identifier`, `invalid_supply_point_identifier@${G}.identifier`]);
    expectErrors(account((a) => (gas(a).identifier = '12345678901')), [`invalid_mprn@${G}.identifier`, `invalid_supply_point_identifier@${G}.identifier`]);
    expectErrors(account((a) => (gas(a).identifier = '123456')), []);
  });

  it('EnergyAccount.external_account_number required / blank: the account\'s external number is given and not blank', () => {
    expectErrors(account((a) => delete a.external_account_number), ['required@external_account_number']);
    expectErrors(account((a) => (a.external_account_number = '')), ['blank@external_account_number']);
    // null is refused by the document's structure already, not by this rule.
    expectErrors(account((a) => (a.external_account_number = null)), ['null@external_account_number']);
    expectErrors(account((a) => (a.external_account_number = 'A')), []);
  });

  it('EnergyAccount.date_of_sale date_in_future: a sale happened by today', () => {
    expectErrors(account((a) => (a.date_of_sale = '2026-01-16')), ['date_in_future@date_of_sale']);
    expectErrors(account((a) => (a.date_of_sale = '2026-01-15')), []);
  });

  it('EnergyAccount.last_statement_closing_date date_in_future: the last statement closed by today', () => {
    // The document's statements rule says the same with its own code.
    expectErrors(account((a) => (a.last_statement_closing_date = '2026-01-16')), [
      'date_in_future@last_statement_closing_date',
      'historical_statement_period_end_in_future@last_statement_closing_date',
    ]);
    expectErrors(account((a) => (a.last_statement_closing_date = '2026-01-15')), []);
  });

  it('Reading / HistoricalReading / EnergyReading reading_date date_in_future: a reading was taken by today', () => {
    expectErrors(account((a) => (elec(a).meters[0].transfer_readings[0].reading_date = '2026-01-16')), [`date_in_future@${E}.meters.0.transfer_readings.0.reading_date`]);
    expectErrors(account((a) => (gas(a).meters[0].transfer_readings[0].reading_date = '2026-01-16')), [`date_in_future@${G}.meters.0.transfer_readings.0.reading_date`]);
    expectErrors(account((a) => (elec(a).meters[0].reading_history[0].reading_date = '2026-01-16')), [`date_in_future@${E}.meters.0.reading_history.0.reading_date`]);
    expectErrors(account((a) => (a.fit = fit({ postcode: 'SW1A 1AA' }, '2026-01-16'))), ['date_in_future@fit.meters.0.transfer_reading.reading_date']);
    expectErrors(account((a) => (a.fit = fit({ postcode: 'SW1A 1AA' }, '2026-01-15'))), []);
  });

  it('EnergyCustomer / BusinessUser / PropertyAdministrator date_of_birth date_in_future: a date of birth is before today', () => {
    // Unlike the other dates, today itself is refused: nobody on the account was born today.
    expectErrors(account((a) => (a.customers[0].date_of_birth = '2026-01-15')), ['date_in_future@customers.0.date_of_birth']);
    expectErrors(account((a) => (a.customers[0].date_of_birth = '2026-01-14')), []);
    expectErrors(withUser({ date_of_birth: '2026-01-15' }), ['date_in_future@business.users.0.date_of_birth']);
    expectErrors(withUser({ date_of_birth: '2026-01-14' }), []);
    expectErrors(account((a) => (admin(a).date_of_birth = '2026-01-16')), [`date_in_future@${PA}.date_of_birth`]);
    expectErrors(account((a) => (admin(a).date_of_birth = '2026-01-14')), []);
  });
});
