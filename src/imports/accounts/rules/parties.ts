import type { CrossFieldContext } from '../../shared/fields.js';
import { isRecord } from '../../shared/fields.js';
import type { NotImplemented, RuleSpec } from '../../../contract/rules.js';
import { parsedString, shown } from './helpers.js';
import { partyRulesNotImplemented as notImplemented } from './parties-not-implemented.js';
import { peopleRules } from './parties-people.js';
import { accountTypeOf, isBusiness, isDomestic, isOccupierType, parsedBoolean, provided } from './parties-shared.js';

// The account as a whole: its type, who it is for, where its bills go, how it is billed.
// Customers, the business, campaigns, consents, complaints and the rest are in parties-people.ts.

/** The legacy billing address fields, which the billing_address object replaces. */
const LEGACY_BILLING = ['billing_address1', 'billing_address2', 'billing_address3', 'billing_address4', 'billing_address5', 'billing_postcode'] as const;
/** What a fixed billing period is made of. */
const PERIOD_FIELDS = ['period_start_day', 'period_length'] as const;

/** An account-level rule: `check` sees the account only when it is an object. */
function accountRule(code: string, check: (account: Record<string, unknown>, ctx: CrossFieldContext) => void): RuleSpec {
  return { at: 'EnergyAccount', codes: [code], cross: (account, ctx) => (isRecord(account) ? check(account, ctx) : undefined) };
}

const given = (v: unknown) => v !== undefined && v !== null;

/** Whether the account is for an unknown occupier, by its flag or by its type. Undefined when the type did not parse. */
function isOccupierAccount(account: Record<string, unknown>, ctx: CrossFieldContext): boolean | undefined {
  const type = accountTypeOf(account, ctx);
  if (type === undefined) return undefined;
  return parsedBoolean(account, 'unknown_occupier', ctx) === true || isOccupierType(type);
}

/** The account's billing options and whether they leave billing to industry data (absent means not). */
function billingOptions(account: Record<string, unknown>, ctx: CrossFieldContext): { options: Record<string, unknown>; industry: boolean } | undefined {
  const options = account.account_billing_options;
  if (!isRecord(options)) return undefined;
  if (options.use_industry_billing !== undefined && !ctx.parsed(['account_billing_options', 'use_industry_billing'])) return undefined;
  return { options, industry: options.use_industry_billing === true };
}

/**
 * Whether anything in the account fixes when Kraken starts billing it: a last billed to date (on the
 * account, a meter point, a meter or a register), a last statement closing date (on the account or a
 * ledger) or an agreement on any meter point.
 */
function hasBillingStart(v: unknown, depth = 0): boolean {
  if (depth > 8) return false;
  if (Array.isArray(v)) return v.some((x) => hasBillingStart(x, depth + 1));
  if (!isRecord(v)) return false;
  if (provided(v.last_billed_to_date) || provided(v.last_statement_closing_date)) return true;
  if (Array.isArray(v.agreements) && v.agreements.length > 0) return true;
  return [v.supply_addresses, v.meter_points, v.meters, v.registers, v.ledgers].some((x) => hasBillingStart(x, depth + 1));
}

const accountRules: RuleSpec[] = [
  accountRule('multiple_account_types_selected', (account, ctx) => {
    // account_type and the deprecated flags it replaced must not name different types.
    const selected = new Set<string>();
    const type = parsedString(account, 'account_type', ctx);
    if (type !== undefined) selected.add(type);
    if (parsedBoolean(account, 'is_managed', ctx) === true) selected.add('MANAGED');
    if (parsedBoolean(account, 'is_portfolio_lead', ctx) === true) selected.add('PORTFOLIO_LEAD');
    if (selected.size > 1) {
      ctx.addIssue('multiple_account_types_selected', `Choose one account type: the payload selects ${[...selected].join(' and ')}.`, [type !== undefined ? 'account_type' : 'is_portfolio_lead']);
    }
  }),
  accountRule('customer_family_name_required', (account, ctx) => {
    if (!isDomestic(accountTypeOf(account, ctx)) || !Array.isArray(account.customers)) return;
    account.customers.forEach((c: unknown, i) => {
      if (isRecord(c) && !provided(c.family_name)) ctx.addIssue('customer_family_name_required', 'A customer of a domestic account needs a family name.', ['customers', i, 'family_name']);
    });
  }),
  accountRule('duplicate_property_external_identifiers', (account, ctx) => {
    if (!Array.isArray(account.supply_addresses)) return;
    const seen = new Set<string>();
    account.supply_addresses.forEach((sa: unknown, i) => {
      const id = parsedString(sa, 'property_external_identifier', ctx, ['supply_addresses', i]);
      if (id === undefined || id.trim() === '') return;
      if (seen.has(id)) ctx.addIssue('duplicate_property_external_identifiers', `Property ${shown(id)} is given for more than one supply address.`, ['supply_addresses', i, 'property_external_identifier']);
      seen.add(id);
    });
  }),
  accountRule('portfolio_settings_included_when_not_lead', (account, ctx) => {
    // Settings shape how a whole portfolio is billed; only its lead account may carry them.
    if (!isRecord(account.portfolio) || !provided(account.portfolio.portfolio_settings)) return;
    const type = accountTypeOf(account, ctx);
    if (type === undefined || type === 'PORTFOLIO_LEAD' || parsedBoolean(account, 'is_portfolio_lead', ctx) === true) return;
    ctx.addIssue('portfolio_settings_included_when_not_lead', 'Only a portfolio lead account may give portfolio settings.', ['portfolio', 'portfolio_settings']);
  }),
  accountRule('business_fields_provided_for_domestic_accounts', (account, ctx) => {
    if (!isDomestic(accountTypeOf(account, ctx))) return;
    for (const f of ['business_type', 'company_number']) {
      if (provided(account[f])) ctx.addIssue('business_fields_provided_for_domestic_accounts', `A domestic account has no ${f}.`, [f]);
    }
  }),
  accountRule('customer_with_unknown_occupier', (account, ctx) => {
    if (parsedBoolean(account, 'unknown_occupier', ctx) !== true || !provided(account.customers)) return;
    ctx.addIssue('customer_with_unknown_occupier', 'An account for an unknown occupier has no customers.', ['customers']);
  }),
  accountRule('billing_address_new_style_and_legacy', (account, ctx) => {
    if (!given(account.billing_address)) return;
    const legacy = LEGACY_BILLING.filter((f) => provided(account[f]));
    if (legacy.length > 0) {
      ctx.addIssue('billing_address_new_style_and_legacy', `Give the billing address either as billing_address or as ${legacy.join(', ')}, not both.`, ['billing_address']);
    }
  }),
  accountRule('billing_address_not_provided', (account, ctx) => {
    // An occupier account's billing address may come from its supply address; any other needs one.
    if (isOccupierAccount(account, ctx) !== false || given(account.billing_address)) return;
    for (const f of ['billing_address1', 'billing_postcode']) {
      if (!provided(account[f])) ctx.addIssue('billing_address_not_provided', `The account needs a billing address: ${f} is missing.`, [f]);
    }
  }),
  accountRule('cannot_determine_responsible_for_billing_from_date', (account, ctx) => {
    if (hasBillingStart(account)) return;
    ctx.addIssue(
      'cannot_determine_responsible_for_billing_from_date',
      'Kraken cannot tell when to start billing: give last_billed_to_date, last_statement_closing_date or an agreement.',
      ['last_billed_to_date'],
    );
  }),
  accountRule('duplicate_identifiers_entries_found', (account, ctx) => {
    if (!Array.isArray(account.ledgers)) return;
    const seen = new Set<string>();
    account.ledgers.forEach((ledger: unknown, i) => {
      const id = parsedString(ledger, 'ledger_identifier', ctx, ['ledgers', i]);
      if (id === undefined || id === '') return;
      if (seen.has(id)) ctx.addIssue('duplicate_identifiers_entries_found', `Ledger identifier ${shown(id)} is declared by more than one ledger.`, ['ledgers', i, 'ledger_identifier']);
      seen.add(id);
    });
  }),
  accountRule('next_bill_to_date_not_provided_for_quarterly_billing', (account, ctx) => {
    // Kraken cannot place a quarter it bills itself without the next due date.
    const billing = billingOptions(account, ctx);
    if (!billing || billing.industry || parsedString(billing.options, 'period_length', ctx, ['account_billing_options']) !== 'QUARTERLY') return;
    if (!given(account.next_bill_due_date)) {
      ctx.addIssue('next_bill_to_date_not_provided_for_quarterly_billing', 'Quarterly billing by Kraken needs next_bill_due_date.', ['next_bill_due_date']);
    }
  }),
  accountRule('account_billing_options_provided_for_domestic_accounts', (account, ctx) => {
    if (!isDomestic(accountTypeOf(account, ctx)) || !given(account.account_billing_options)) return;
    ctx.addIssue('account_billing_options_provided_for_domestic_accounts', 'Billing options are for business accounts only.', ['account_billing_options']);
  }),
  accountRule('business_account_missing_billing_options', (account, ctx) => {
    // Industry billing needs no period (EnergyAccountBillingOptions forbids one), so it is exempt.
    if (!isBusiness(accountTypeOf(account, ctx))) return;
    const billing = billingOptions(account, ctx);
    if (!billing || billing.industry) return;
    for (const f of PERIOD_FIELDS) {
      if (!given(billing.options[f])) ctx.addIssue('business_account_missing_billing_options', `A business account's billing options need ${f}.`, ['account_billing_options', f]);
    }
  }),
  accountRule('business_account_missing_customers', (account, ctx) => {
    // Vacant and occupier business accounts have nobody to name; the rest need a customer to register supply.
    const type = accountTypeOf(account, ctx);
    if (type !== 'BUSINESS' && type !== 'BUSINESS_THIRD_PARTY_BILLED') return;
    if (parsedBoolean(account, 'unknown_occupier', ctx) === true || provided(account.customers)) return;
    ctx.addIssue('business_account_missing_customers', 'A business account needs at least one customer.', ['customers']);
  }),
  {
    at: 'EnergyAccountBillingOptions',
    codes: ['account_billing_options_industry_billing_with_period_data', 'account_billing_options_period_data_required'],
    cross: (options, ctx) => {
      if (!isRecord(options)) return;
      if (options.use_industry_billing !== undefined && !ctx.parsed(['use_industry_billing'])) return;
      for (const f of PERIOD_FIELDS) {
        if (options.use_industry_billing === true && given(options[f])) {
          ctx.addIssue('account_billing_options_industry_billing_with_period_data', `With industry billing there is no ${f}.`, [f]);
        } else if (options.use_industry_billing !== true && !given(options[f])) {
          ctx.addIssue('account_billing_options_period_data_required', `Without industry billing, ${f} is required.`, [f]);
        }
      }
    },
  },
  {
    at: 'EnergyAccount.smart_read_cycle_day',
    codes: ['invalid_day_of_month'],
    // The document bounds the day to 1–28, so every month has it.
    value: (v, report) => {
      if (typeof v === 'number' && (v < 1 || v > 28)) report('invalid_day_of_month', `${String(v)} is not a day of the month from 1 to 28.`);
      return v;
    },
  },
];

/** Rules of the document for this part of the account (see index.ts). */
export function partyRules(_today: () => string): RuleSpec[] {
  return [...accountRules, ...peopleRules];
}

/** Rules of the document for this part of the account that are not applied, each with its reason. */
export const partyRulesNotImplemented: NotImplemented[] = notImplemented;
