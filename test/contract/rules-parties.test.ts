import { describe, expect, it } from 'vitest';
import { accountErrors, parseAccount, published } from './harness.js';

// Each case starts from the document's example account, which passes every rule, and changes one
// thing. Problems are compared as sorted 'code@attr' lists, so the order rules run in does not matter.

const errors = (payload: unknown) => accountErrors(payload).sort();
const expectErrors = (payload: unknown, items: string[]) => expect(errors(payload)).toEqual([...items].sort());
/** Where the change a case makes would also trip rules of other parts of the account, only this code is compared. */
const withCode = (payload: unknown, code: string) => accountErrors(payload).filter((e) => e.startsWith(`${code}@`));

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the cases reach into the example freely
type Account = any;
const account = (change: (a: Account) => void = () => {}): Account => {
  const a = published('account');
  change(a);
  return a;
};
const business = (change: (a: Account) => void = () => {}) =>
  account((a) => {
    a.account_type = 'BUSINESS';
    change(a);
  });
/** A business linked through existing contracts: the discriminator itself is refused as an unknown field (see the note in the report). */
const UNKNOWN_DISCRIMINATOR = 'unknown_field@business.enforce_business_contracts_exist';

describe('the account type', () => {
  it('EnergyAccount multiple_account_types_selected: account_type and the deprecated is_managed / is_portfolio_lead flags may not name different types', () => {
    expectErrors(account((a) => (a.is_managed = true)), ['multiple_account_types_selected@account_type']);
    // A portfolio lead has rules of its own (no supply address): only this rule's code is compared.
    expect(withCode(account((a) => (a.is_portfolio_lead = true)), 'multiple_account_types_selected')).toEqual(['multiple_account_types_selected@account_type']);
    expectErrors(account((a) => {
      a.account_type = 'MANAGED';
      a.is_managed = true;
    }), []);
    expectErrors(account((a) => {
      a.is_managed = false;
      a.is_portfolio_lead = null;
    }), []);
  });

  it('EnergyAccount business_fields_provided_for_domestic_accounts: a domestic account has no business type or company number', () => {
    expectErrors(account((a) => {
      a.business_type = 'LTD';
      a.company_number = '01234567';
    }), ['business_fields_provided_for_domestic_accounts@business_type', 'business_fields_provided_for_domestic_accounts@company_number']);
    // An absent account_type means DOMESTIC.
    expectErrors(account((a) => {
      delete a.account_type;
      a.company_number = '01234567';
    }), ['business_fields_provided_for_domestic_accounts@company_number']);
    expectErrors(account((a) => (a.business_type = '')), []);
    expectErrors(business((a) => {
      a.business_type = 'LTD';
      a.company_number = '01234567';
    }), []);
  });

  it('EnergyAccount.company_number invalid_company_number: a company number is a Companies House number, stored in its standard form', () => {
    expectErrors(business((a) => (a.company_number = 'ABC')), ['invalid_company_number@company_number']);
    expectErrors(business((a) => (a.company_number = '123456789')), ['invalid_company_number@company_number']);
    const parsed = parseAccount(business((a) => (a.company_number = '1234567'))) as Account;
    expect(parsed.company_number).toBe('01234567');
  });
});

describe('customers', () => {
  it('EnergyAccount customer_family_name_required: every customer of a domestic account has a family name', () => {
    expectErrors(account((a) => (a.customers[0].family_name = '')), ['customer_family_name_required@customers.0.family_name']);
    expectErrors(account((a) => delete a.customers[0].family_name), ['customer_family_name_required@customers.0.family_name']);
    expectErrors(account((a) => {
      a.account_type = 'DOMESTIC_THIRD_PARTY_BILLED';
      a.customers[0].family_name = '  ';
    }), ['customer_family_name_required@customers.0.family_name']);
    // A business customer without one is named "Business" by Kraken.
    expectErrors(business((a) => (a.customers[0].family_name = '')), []);
  });

  it('EnergyAccount customer_with_unknown_occupier: an account for an unknown occupier names no customer', () => {
    expectErrors(account((a) => (a.unknown_occupier = true)), ['customer_with_unknown_occupier@customers']);
    expectErrors(account((a) => {
      a.unknown_occupier = true;
      delete a.customers;
    }), []);
    expectErrors(account((a) => {
      a.unknown_occupier = true;
      a.customers = [];
    }), []);
  });

  it('EnergyAccount business_account_missing_customers: a business account names at least one customer', () => {
    expectErrors(business((a) => delete a.customers), ['business_account_missing_customers@customers']);
    expectErrors(business((a) => (a.customers = [])), ['business_account_missing_customers@customers']);
    expectErrors(business((a) => {
      a.account_type = 'BUSINESS_VACANT';
      delete a.customers;
    }), []);
    expectErrors(account((a) => delete a.customers), []);
  });

  it('EnergyCustomer customer_may_not_be_named_the_occupier: "The Occupier" is not a customer name, in one field or split over two', () => {
    const unnamed = (given: string, family: string) =>
      account((a) => {
        const c = a.customers[0];
        Object.assign(c, { given_name: given, family_name: family });
        for (const f of ['email', 'mobile', 'landline']) delete c[f];
      });
    expectErrors(unnamed('The', 'Occupier'), ['customer_may_not_be_named_the_occupier@customers.0']);
    expectErrors(unnamed('', 'the  OCCUPIER'), ['customer_may_not_be_named_the_occupier@customers.0']);
    expectErrors(unnamed('Theo', 'Occupier'), []);
  });

  it('EnergyCustomer contact_details_for_occupier: a customer named "The Occupier" has no contact details', () => {
    expectErrors(account((a) => Object.assign(a.customers[0], { given_name: 'The', family_name: 'Occupier' })), [
      'contact_details_for_occupier@customers.0',
      'customer_may_not_be_named_the_occupier@customers.0',
    ]);
    expectErrors(account((a) => {
      const c = a.customers[0];
      Object.assign(c, { given_name: 'The', family_name: 'Occupier', email: null });
      delete c.mobile;
      delete c.landline;
      c.alternative_phone_numbers = [{ phone_number: '02072343456' }];
    }), ['contact_details_for_occupier@customers.0', 'customer_may_not_be_named_the_occupier@customers.0']);
  });

  it('EnergyCustomer customer_details_and_user_details_both_provided: a customer gives details or user_details, not both', () => {
    expectErrors(account((a) => {
      a.customers[0].details = { external_user_id: 'U1' };
      a.customers[0].user_details = [{ namespace: 'external_user_id', value: 'U1' }];
    }), ['customer_details_and_user_details_both_provided@customers.0']);
    expectErrors(account((a) => (a.customers[0].details = { external_user_id: 'U1' })), []);
    expectErrors(account((a) => (a.customers[0].user_details = [{ namespace: 'external_user_id', value: 'U1' }])), []);
    expectErrors(account((a) => {
      a.customers[0].details = null;
      a.customers[0].user_details = [{ namespace: 'external_user_id', value: 'U1' }];
    }), []);
  });

  it('EnergyCustomer fields_are_mutually_exclusive: a customer gives customer_preferences or consents, not both', () => {
    expectErrors(account((a) => (a.customers[0].consents = [{ type: 'MARKETING', value: 'ACCEPTED' }])), ['fields_are_mutually_exclusive@customers.0']);
    expectErrors(account((a) => {
      delete a.customers[0].customer_preferences;
      a.customers[0].consents = [{ type: 'MARKETING', value: 'ACCEPTED' }];
    }), []);
  });

  it('EnergyCustomer.consents children_with_duplicate_values: a customer gives each consent type once', () => {
    const consents = (...types: unknown[]) =>
      account((a) => {
        delete a.customers[0].customer_preferences;
        a.customers[0].consents = types.map((type) => ({ type, value: 'ACCEPTED' }));
      });
    expectErrors(consents('MARKETING', 'SMS', 'MARKETING'), ['children_with_duplicate_values@customers.0.consents.2.type']);
    expectErrors(consents('MARKETING', 'SMS'), []);
  });

  it('EnergyAccount.customers repeated_values_for_unique_customer_detail_namespace: no two customers share an external_user_id', () => {
    const two = (second: (c: Account) => void) =>
      account((a) => {
        const first = a.customers[0];
        first.user_details = [{ namespace: 'external_user_id', value: 'U1' }];
        const other = { ...structuredClone(first), given_name: 'Alice', user_details: undefined };
        delete other.user_details;
        second(other);
        a.customers.push(other);
      });
    expectErrors(two((c) => (c.user_details = [{ namespace: 'external_user_id', value: 'U1' }])), [
      'repeated_values_for_unique_customer_detail_namespace@customers.1.user_details.0.value',
    ]);
    expectErrors(two((c) => (c.details = { external_user_id: 'U1' })), ['repeated_values_for_unique_customer_detail_namespace@customers.1.details.external_user_id']);
    expectErrors(two((c) => (c.user_details = [{ namespace: 'external_user_id', value: 'U2' }])), []);
  });

  it('EnergyPSR psr_industry_code_not_provided: a PSR entry names an electricity or a gas need', () => {
    expectErrors(account((a) => (a.customers[0].psr[1] = { effective_from: '2012-01-01' })), ['psr_industry_code_not_provided@customers.0.psr.1']);
    expectErrors(account((a) => (a.customers[0].psr[0] = { elec_industry_code: '', gas_industry_code: null, effective_from: '2012-01-01' })), [
      'psr_industry_code_not_provided@customers.0.psr.0',
    ]);
    expectErrors(account((a) => (a.customers[0].psr[0] = { elec_industry_code: '01', gas_industry_code: '01', effective_from: '2012-01-01' })), []);
  });
});

describe('business users and the business', () => {
  const withUser = (user: Record<string, unknown>) =>
    business((a) => (a.business = { company_name: 'Acme Ltd', users: [{ business_roles: ['ADMIN'], given_name: 'Ada', family_name: 'Byron', ...user }] }));

  it('BusinessUser customer_may_not_be_named_the_occupier: a business user is not "The Occupier" either', () => {
    expectErrors(withUser({ given_name: '', family_name: 'The Occupier' }), ['customer_may_not_be_named_the_occupier@business.users.0']);
    expectErrors(withUser({}), []);
  });

  it('BusinessUser contact_details_for_occupier: a business user named "The Occupier" has no contact details', () => {
    expectErrors(withUser({ given_name: 'The', family_name: 'Occupier', email: 'someone@example.com' }), [
      'contact_details_for_occupier@business.users.0',
      'customer_may_not_be_named_the_occupier@business.users.0',
    ]);
    expectErrors(withUser({ email: 'someone@example.com', contact_emails: ['other@example.com'] }), []);
  });

  it('BusinessUser customer_details_and_user_details_both_provided: a business user gives details or user_details, not both', () => {
    expectErrors(withUser({ details: { external_user_id: 'U1' }, user_details: [{ namespace: 'external_user_id', value: 'U1' }] }), [
      'customer_details_and_user_details_both_provided@business.users.0',
    ]);
    expectErrors(withUser({ user_details: [{ namespace: 'external_user_id', value: 'U1' }] }), []);
  });

  it('BaseBusiness.company_number invalid_company_number: the business company number is checked and standardised', () => {
    const withNumber = (n: string) => business((a) => (a.business = { company_name: 'Acme Ltd', company_number: n }));
    expectErrors(withNumber('12-345'), ['invalid_company_number@business.company_number']);
    expectErrors(withNumber('SCX12345'), ['invalid_company_number@business.company_number']);
    for (const [given, standard] of [
      ['sc 12345', 'SC012345'],
      ['1234567', '01234567'],
      ['OC301234', 'OC301234'],
      ['R0000123', 'R0000123'],
      ['ip28888r', 'IP28888R'],
    ] as const) {
      expectErrors(withNumber(given), []);
      expect((parseAccount(withNumber(given)) as Account).business.company_number).toBe(standard);
    }
  });

  it('BaseBusiness.details children_with_duplicate_values: each business detail key is given once', () => {
    const details = (...keys: string[]) => business((a) => (a.business = { company_name: 'Acme Ltd', details: keys.map((key, i) => ({ key, value: `V${String(i)}` })) }));
    expectErrors(details('vat_number', 'sic_codes', 'vat_number'), ['children_with_duplicate_values@business.details.2.key']);
    expectErrors(details('vat_number', 'sic_codes'), []);
  });

  describe('a business linked through existing contracts', () => {
    const linked = (fields: Record<string, unknown>) => business((a) => (a.business = { enforce_business_contracts_exist: true, ...fields }));

    it('BusinessWithExistingContracts missing_contract_identifier: at least one business contract identifier is given', () => {
      expectErrors(linked({}), [UNKNOWN_DISCRIMINATOR, 'missing_contract_identifier@business.business_contract_identifiers']);
      expectErrors(linked({ business_contract_identifiers: [] }), [UNKNOWN_DISCRIMINATOR, 'missing_contract_identifier@business.business_contract_identifiers']);
      expectErrors(linked({ business_contract_identifiers: ['C-1'] }), [UNKNOWN_DISCRIMINATOR]);
      expectErrors(linked({ business_contract_identifier: 'C-1' }), [UNKNOWN_DISCRIMINATOR]);
    });

    it('BusinessWithExistingContracts.company_number invalid_company_number: checked as on any business', () => {
      expectErrors(linked({ business_contract_identifiers: ['C-1'], company_number: 'X' }), [UNKNOWN_DISCRIMINATOR, 'invalid_company_number@business.company_number']);
      expectErrors(linked({ business_contract_identifiers: ['C-1'], company_number: '01234567' }), [UNKNOWN_DISCRIMINATOR]);
    });

    it('BusinessWithExistingContracts.details children_with_duplicate_values: each business detail key is given once', () => {
      const details = [
        { key: 'sic_codes', value: ['35140'] },
        { key: 'sic_codes', value: ['35230'] },
      ];
      expectErrors(linked({ business_contract_identifiers: ['C-1'], details }), [UNKNOWN_DISCRIMINATOR, 'children_with_duplicate_values@business.details.1.key']);
      expectErrors(linked({ business_contract_identifiers: ['C-1'], details: details.slice(0, 1) }), [UNKNOWN_DISCRIMINATOR]);
    });
  });
});

describe('portfolios', () => {
  const settings = { collective_billing: true };
  const refs = (...namespaces: string[]) => namespaces.map((namespace, i) => ({ namespace, value: `P${String(i)}` }));

  it('EnergyAccount portfolio_settings_included_when_not_lead: only a portfolio lead account carries portfolio settings', () => {
    expectErrors(account((a) => (a.portfolio = { portfolio_references: refs('portfolio-label'), portfolio_settings: settings })), [
      'portfolio_settings_included_when_not_lead@portfolio.portfolio_settings',
    ]);
    expectErrors(account((a) => (a.portfolio = { portfolio_references: refs('portfolio-label'), portfolio_settings: null })), []);
    // A lead account has other rules of its own (no supply address…): only this rule's code is compared.
    const lead = account((a) => {
      a.account_type = 'PORTFOLIO_LEAD';
      a.portfolio = { portfolio_references: refs('portfolio-label'), portfolio_settings: settings };
    });
    expect(withCode(lead, 'portfolio_settings_included_when_not_lead')).toEqual([]);
  });

  it('AccountPortfolio portfolio_references_missing: portfolio settings come with a reference naming the portfolio', () => {
    expectErrors(account((a) => (a.portfolio = { portfolio_settings: settings })), [
      'portfolio_references_missing@portfolio.portfolio_references',
      'portfolio_settings_included_when_not_lead@portfolio.portfolio_settings',
    ]);
    expectErrors(account((a) => (a.portfolio = { billing_name: 'Acme portfolio' })), []);
  });

  it('AccountPortfolio duplicate_portfolio_references: each reference namespace is used once', () => {
    expectErrors(account((a) => (a.portfolio = { portfolio_references: refs('portfolio-label', 'portfolio-label') })), [
      'duplicate_portfolio_references@portfolio.portfolio_references.1.namespace',
    ]);
    expectErrors(account((a) => (a.portfolio = { portfolio_references: refs('portfolio-label', 'external-portfolio-reference-id') })), []);
  });

  it('a business portfolio always names itself: the structure requires a reference, so no rule has to', () => {
    const withPortfolio = (p: Record<string, unknown>) => business((a) => (a.business = { company_name: 'Acme Ltd', portfolios: [p] }));
    expectErrors(withPortfolio({ portfolio_references: [], portfolio_settings: settings }), ['min_items@business.portfolios.0.portfolio_references']);
    expectErrors(withPortfolio({ portfolio_references: refs('portfolio-label'), portfolio_settings: settings }), []);
  });

  it('BusinessPortfolio duplicate_portfolio_references: each reference namespace is used once', () => {
    const withRefs = (...ns: string[]) => business((a) => (a.business = { company_name: 'Acme Ltd', portfolios: [{ portfolio_references: refs(...ns) }] }));
    expectErrors(withRefs('external-portfolio-reference-id', 'external-portfolio-reference-id'), [
      'duplicate_portfolio_references@business.portfolios.0.portfolio_references.1.namespace',
    ]);
    expectErrors(withRefs('external-portfolio-reference-id'), []);
  });
});

describe('the billing address', () => {
  const structured = { country: 'GB', street_address: '123 Fake Street', locality: 'London', postal_code: 'W1F 9DE' };
  const LEGACY = ['billing_address1', 'billing_address2', 'billing_address3', 'billing_address4', 'billing_address5', 'billing_postcode'];

  it('EnergyAccount billing_address_new_style_and_legacy: the billing address is given one way, not both', () => {
    expectErrors(account((a) => (a.billing_address = structured)), ['billing_address_new_style_and_legacy@billing_address']);
    expectErrors(account((a) => {
      a.billing_address = structured;
      for (const f of LEGACY) delete a[f];
    }), []);
    // Blank legacy lines carry no address (a blank postcode is refused by the postcode rule of its own).
    expectErrors(account((a) => {
      a.billing_address = structured;
      for (const f of LEGACY) a[f] = '';
      delete a.billing_postcode;
    }), []);
  });

  it('EnergyAccount billing_address_not_provided: an account that is not an occupier account has a billing line 1 and postcode', () => {
    expectErrors(account((a) => delete a.billing_address1), ['billing_address_not_provided@billing_address1']);
    expectErrors(account((a) => delete a.billing_postcode), ['billing_address_not_provided@billing_postcode']);
    expectErrors(account((a) => (a.billing_address1 = '  ')), ['billing_address_not_provided@billing_address1']);
    const noAddress = (change: (a: Account) => void) =>
      account((a) => {
        for (const f of LEGACY) delete a[f];
        change(a);
      });
    expectErrors(noAddress(() => {}), ['billing_address_not_provided@billing_address1', 'billing_address_not_provided@billing_postcode']);
    // An occupier account's billing address comes from its supply address.
    expectErrors(noAddress((a) => {
      a.unknown_occupier = true;
      delete a.customers;
    }), []);
    expectErrors(noAddress((a) => (a.account_type = 'DOMESTIC_OCCUPIER')), []);
  });
});

describe('billing options', () => {
  const withOptions = (options: Record<string, unknown>, type = 'BUSINESS') =>
    account((a) => {
      a.account_type = type;
      a.account_billing_options = options;
    });

  it('EnergyAccount account_billing_options_provided_for_domestic_accounts: billing options are for business accounts', () => {
    expectErrors(withOptions({ period_length: 'MONTHLY', period_start_day: 1 }, 'DOMESTIC'), ['account_billing_options_provided_for_domestic_accounts@account_billing_options']);
    expectErrors(account((a) => {
      delete a.account_type;
      a.account_billing_options = { period_length: 'MONTHLY', period_start_day: 1 };
    }), ['account_billing_options_provided_for_domestic_accounts@account_billing_options']);
    expectErrors(withOptions({ period_length: 'MONTHLY', period_start_day: 1 }), []);
  });

  it('EnergyAccountBillingOptions account_billing_options_industry_billing_with_period_data: industry billing comes without a period', () => {
    expectErrors(withOptions({ use_industry_billing: true, period_length: 'MONTHLY' }), [
      'account_billing_options_industry_billing_with_period_data@account_billing_options.period_length',
    ]);
    expectErrors(withOptions({ use_industry_billing: true, period_length: null, period_start_day: null }), []);
  });

  it('EnergyAccountBillingOptions account_billing_options_period_data_required: without industry billing, the period start day and length are given', () => {
    expectErrors(withOptions({ use_industry_billing: false, period_start_day: 5 }), [
      'account_billing_options_period_data_required@account_billing_options.period_length',
      'business_account_missing_billing_options@account_billing_options.period_length',
    ]);
    expectErrors(withOptions({ use_industry_billing: false, period_start_day: 5, period_length: 'MONTHLY' }), []);
  });

  it('EnergyAccount business_account_missing_billing_options: a business account giving billing options gives the period start day and length', () => {
    expectErrors(withOptions({ period_length: 'MONTHLY' }), [
      'account_billing_options_period_data_required@account_billing_options.period_start_day',
      'business_account_missing_billing_options@account_billing_options.period_start_day',
    ]);
    // No options at all: Kraken's defaults apply.
    expectErrors(business(), []);
  });

  it('EnergyAccount next_bill_to_date_not_provided_for_quarterly_billing: quarterly billing by Kraken needs the next bill due date', () => {
    const quarterly = (change: (a: Account) => void) =>
      account((a) => {
        a.account_type = 'BUSINESS';
        a.account_billing_options = { use_industry_billing: false, period_length: 'QUARTERLY', period_start_day: 1 };
        change(a);
      });
    expectErrors(quarterly((a) => delete a.next_bill_due_date), ['next_bill_to_date_not_provided_for_quarterly_billing@next_bill_due_date']);
    expectErrors(quarterly((a) => (a.next_bill_due_date = null)), ['next_bill_to_date_not_provided_for_quarterly_billing@next_bill_due_date']);
    expectErrors(quarterly(() => {}), []);
    expectErrors(withOptions({ period_length: 'MONTHLY', period_start_day: 1 }), []);
  });

  it('EnergyAccount.smart_read_cycle_day invalid_day_of_month: the smart read day is a day from 1 to 28', () => {
    expectErrors(account((a) => (a.smart_read_cycle_day = 29)), ['invalid_day_of_month@smart_read_cycle_day']);
    expectErrors(account((a) => (a.smart_read_cycle_day = 0)), ['invalid_day_of_month@smart_read_cycle_day']);
    expectErrors(account((a) => (a.smart_read_cycle_day = 1)), []);
    expectErrors(account((a) => (a.smart_read_cycle_day = 28)), []);
  });
});

describe('campaigns', () => {
  it('AccountCampaign campaign_name_and_slug_provided: a campaign is named by campaign_name or by slug, not both', () => {
    expectErrors(account((a) => (a.account_campaigns[0].campaign_name = 'Abusive Customer')), ['campaign_name_and_slug_provided@account_campaigns.0']);
    expectErrors(account((a) => (a.account_campaigns[0].campaign_name = '')), []);
  });

  it('AccountCampaign campaign_name_or_slug_not_provided: a campaign is named one way or the other', () => {
    expectErrors(account((a) => delete a.account_campaigns[0].slug), ['campaign_name_or_slug_not_provided@account_campaigns.0']);
    expectErrors(account((a) => (a.account_campaigns[0].slug = null)), ['campaign_name_or_slug_not_provided@account_campaigns.0']);
    expectErrors(account((a) => (a.account_campaigns[0] = { campaign_name: 'Abusive Customer' })), []);
  });

  it('EnergyAccount.account_campaigns inconsistent_campaign_identifiers: the campaigns of an account are all named by name or all by slug', () => {
    expectErrors(account((a) => a.account_campaigns.push({ campaign_name: 'Abusive Customer' })), ['inconsistent_campaign_identifiers@account_campaigns.1.campaign_name']);
    expectErrors(account((a) => a.account_campaigns.push({ slug: 'abusivecustomer' })), []);
  });

  it('EnergyAccount.account_campaigns duplicate_account_campaigns: each campaign is given once', () => {
    expectErrors(account((a) => a.account_campaigns.push({ slug: 'super_account', start_date: '2021-01-01' })), ['duplicate_account_campaigns@account_campaigns.1.slug']);
    expectErrors(account((a) => (a.account_campaigns = [{ campaign_name: 'Abusive Customer' }, { campaign_name: 'Abusive Customer' }])), [
      'duplicate_account_campaigns@account_campaigns.1.campaign_name',
    ]);
    expectErrors(account((a) => (a.account_campaigns = [{ campaign_name: 'Abusive Customer' }, { campaign_name: 'AMR' }])), []);
  });
});

describe('consents, complaints, warm home discount, commission contracts', () => {
  it('EnergyAccount.consents children_with_duplicate_values: the account gives each consent type once', () => {
    expectErrors(account((a) => (a.consents = [{ type: 'PAPERLESS', value: 'ACCEPTED' }, { type: 'PAPERLESS', value: 'REJECTED' }])), ['children_with_duplicate_values@consents.1.type']);
    expectErrors(account((a) => (a.consents = [{ type: 'PAPERLESS', value: 'ACCEPTED' }, { type: 'MARKETING', value: 'REJECTED' }])), []);
  });

  const complaint = (fields: Record<string, unknown>) =>
    account((a) => {
      a.complaints = [
        {
          complainant_email: 'bob@jablonski.com',
          complainant_name: 'Bob Jabłoński',
          complaint_contacts: [{ body: 'Called about a bill', communication_method: 'LANDLINE', communication_source: 'PHONE', created_at: '2019-05-01T10:00:00Z', status: 'OPEN' }],
          created_at: '2019-05-01T10:00:00Z',
          has_chsr_letter_been_sent: false,
          has_eight_week_letter_been_sent: false,
          type_of_complaint: 'BILLING',
          subtype_of_complaint: 'HIGH_BILL',
          ...fields,
        },
      ];
    });

  it('Complaint official_complaint_field_missing: an official complaint gives its reference number, organisation and status', () => {
    expectErrors(complaint({ official_entity: 'ENERGY_OMBUDSMAN' }), [
      'official_complaint_field_missing@complaints.0.official_reference_number',
      'official_complaint_field_missing@complaints.0.official_status',
    ]);
    expectErrors(complaint({ official_entity: 'ENERGY_OMBUDSMAN', official_reference_number: 'EO-1', official_status: 'OPEN' }), []);
    expectErrors(complaint({}), []);
  });

  it('Complaint chsr_letter_not_sent: once an eight-week letter is sent, a CHSR letter has been sent too', () => {
    expectErrors(complaint({ has_eight_week_letter_been_sent: true }), ['chsr_letter_not_sent@complaints.0.has_chsr_letter_been_sent']);
    expectErrors(complaint({ has_eight_week_letter_been_sent: true, has_chsr_letter_been_sent: true }), []);
    expectErrors(complaint({ has_chsr_letter_been_sent: true }), []);
  });

  it('EnergyWarmHomeDiscount.tax_year incorrect_format_for_tax_year: a tax year reads like 2018/19', () => {
    for (const bad of ['2017-18', '17/18', '2017/2018', '2017/19']) {
      expectErrors(account((a) => (a.warm_home_discount[0].tax_year = bad)), ['incorrect_format_for_tax_year@warm_home_discount.0.tax_year']);
    }
    expectErrors(account((a) => (a.warm_home_discount[0].tax_year = '1999/00')), []);
  });

  it('EnergyCommissionContract.mpxn invalid_supply_point_identifier: a commission contract names a valid MPAN core or MPRN', () => {
    const contract = (mpxn: string) =>
      account((a) => (a.commission_contracts = [{ affiliate_organisation_name: 'Broker Ltd', effective_from: '2019-01-01', effective_to: '2020-01-01', mpxn, status: 'PAID' }]));
    expectErrors(contract('1200060176721'), ['invalid_supply_point_identifier@commission_contracts.0.mpxn']);
    expectErrors(contract('ABC'), ['invalid_supply_point_identifier@commission_contracts.0.mpxn']);
    expectErrors(contract('1200060176720'), []);
    expectErrors(contract('9353824109'), []);
  });
});

describe('supply addresses, ledgers and when billing starts', () => {
  it('EnergyAccount duplicate_property_external_identifiers: each supply address names its own property', () => {
    // The example's two meter points split over two supply addresses, each naming a property.
    const split = (first: string, second: string) =>
      account((a) => {
        const sa = a.supply_addresses[0];
        const gas = sa.meter_points.pop();
        a.supply_addresses.push({ ...structuredClone(sa), supply_address1: '125 Fake Street', meter_points: [gas], property_external_identifier: second });
        sa.property_external_identifier = first;
      });
    expectErrors(split('PROP-1', 'PROP-1'), ['duplicate_property_external_identifiers@supply_addresses.1.property_external_identifier']);
    expectErrors(split('PROP-1', 'PROP-2'), []);
  });

  it('EnergyAccount duplicate_identifiers_entries_found: no two ledgers declare the same identifier', () => {
    // A second ledger changes what other rules (balances, ledger codes) see: only this rule's code is compared.
    const ledgers = (first: string, second: string) =>
      account((a) => {
        a.ledgers[0].ledger_identifier = first;
        a.ledgers.push({ ledger_code: 'SECOND', ledger_identifier: second });
      });
    expect(withCode(ledgers('1200060176720', '1200060176720'), 'duplicate_identifiers_entries_found')).toEqual([
      'duplicate_identifiers_entries_found@ledgers.1.ledger_identifier',
    ]);
    expect(withCode(ledgers('1200060176720', '9353824109'), 'duplicate_identifiers_entries_found')).toEqual([]);
  });

  it('EnergyAccount cannot_determine_responsible_for_billing_from_date: a last billed to date, a last statement closing date or an agreement tells Kraken when to bill from', () => {
    // Taking these away trips the statement and meter rules too: only this rule's code is compared.
    const code = 'cannot_determine_responsible_for_billing_from_date';
    const bare = (change: (a: Account) => void = () => {}) =>
      account((a) => {
        delete a.last_billed_to_date;
        delete a.ledgers[0].last_statement_closing_date;
        for (const mp of a.supply_addresses[0].meter_points) delete mp.agreements;
        change(a);
      });
    expect(withCode(bare(), code)).toEqual([`${code}@last_billed_to_date`]);
    expect(withCode(bare((a) => (a.last_statement_closing_date = '2019-07-31')), code)).toEqual([]);
    expect(withCode(bare((a) => (a.ledgers[0].last_statement_closing_date = '2019-07-31')), code)).toEqual([]);
    expect(withCode(bare((a) => (a.supply_addresses[0].meter_points[0].last_billed_to_date = '2019-08-01')), code)).toEqual([]);
    expect(withCode(bare((a) => (a.supply_addresses[0].meter_points[1].agreements = published('account').supply_addresses[0].meter_points[1].agreements)), code)).toEqual([]);
    expectErrors(account(), []);
  });
});
