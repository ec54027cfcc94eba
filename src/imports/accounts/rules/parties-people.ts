import type { RuleSpec } from '../../../contract/rules.js';
import type { CrossFieldContext } from '../../shared/fields.js';
import { isRecord, isValidMpanCore, isValidMprn } from '../../shared/fields.js';
import { entryKey, parsedString, shown, stringRule, uniqueInList } from './helpers.js';
import { provided } from './parties-shared.js';

// Customers and business users, the business and its portfolios, campaigns, consents, complaints,
// PSR entries, warm home discount and commission contracts: the rules the payload alone decides.

/* People ------------------------------------------------------------------------------------- */

/**
 * Whether a person is recorded as "The Occupier": the placeholder name suppliers use for an unknown
 * occupant, whether it sits in one name field or is split over given and family name. Spacing and
 * case are ignored, since they do not make the placeholder a real name.
 */
function namedTheOccupier(person: Record<string, unknown>): boolean {
  const part = (v: unknown) => (typeof v === 'string' ? v.trim() : '');
  const full = `${part(person.given_name)} ${part(person.family_name)}`.trim().replace(/\s+/g, ' ');
  return full.toLowerCase() === 'the occupier';
}

/** The ways to reach a person; any of them means the person is known, so not an unknown occupier. */
const CONTACT_FIELDS = ['email', 'mobile', 'landline', 'contact_emails', 'alternative_phone_numbers'] as const;

/** The rules EnergyCustomer and BusinessUser share; problems sit on the person as a whole. */
function personRules(schema: 'EnergyCustomer' | 'BusinessUser'): RuleSpec[] {
  return [
    {
      at: schema,
      codes: ['customer_details_and_user_details_both_provided'],
      // details (a map) and user_details (a list) are two spellings of the same thing.
      cross: (person, ctx) => {
        if (!isRecord(person) || !provided(person.details) || !provided(person.user_details)) return;
        ctx.addIssue('customer_details_and_user_details_both_provided', 'Give either details or user_details, not both.', []);
      },
    },
    {
      at: schema,
      codes: ['contact_details_for_occupier'],
      cross: (person, ctx) => {
        if (!isRecord(person) || !namedTheOccupier(person)) return;
        const given = CONTACT_FIELDS.filter((f) => provided(person[f]));
        if (given.length > 0) {
          ctx.addIssue('contact_details_for_occupier', `A person named "The Occupier" is unknown, so cannot have contact details (${given.join(', ')}).`, []);
        }
      },
    },
    {
      at: schema,
      codes: ['customer_may_not_be_named_the_occupier'],
      cross: (person, ctx) => {
        if (!isRecord(person) || !namedTheOccupier(person)) return;
        ctx.addIssue('customer_may_not_be_named_the_occupier', 'A customer may not be named "The Occupier": set unknown_occupier on the account instead.', []);
      },
    },
  ];
}

/** Every customer's value for external_user_id, the one customer detail namespace that must be unique. */
function externalUserIds(customer: unknown, i: number, ctx: CrossFieldContext): { key: string; path: PropertyKey[] }[] {
  const found: { key: string; path: PropertyKey[] }[] = [];
  if (!isRecord(customer)) return found;
  if (Array.isArray(customer.user_details)) {
    customer.user_details.forEach((d: unknown, j) => {
      const path = [i, 'user_details', j];
      if (!isRecord(d) || !ctx.parsed(path) || d.namespace !== 'external_user_id' || !provided(d.value)) return;
      found.push({ key: JSON.stringify(d.value), path: [...path, 'value'] });
    });
  }
  if (isRecord(customer.details) && ctx.parsed([i, 'details']) && provided(customer.details.external_user_id)) {
    found.push({ key: JSON.stringify(customer.details.external_user_id), path: [i, 'details', 'external_user_id'] });
  }
  return found;
}

const customers: RuleSpec[] = [
  ...personRules('EnergyCustomer'),
  ...personRules('BusinessUser'),
  {
    at: 'EnergyCustomer',
    codes: ['fields_are_mutually_exclusive'],
    // customer_preferences is the older way to record what consents now record.
    cross: (customer, ctx) => {
      if (!isRecord(customer) || !provided(customer.customer_preferences) || !provided(customer.consents)) return;
      ctx.addIssue('fields_are_mutually_exclusive', 'Give either customer_preferences or consents, not both.', []);
    },
  },
  {
    at: 'EnergyAccount.customers',
    codes: ['repeated_values_for_unique_customer_detail_namespace'],
    cross: (list, ctx) => {
      if (!Array.isArray(list)) return;
      const holder = new Map<string, number>();
      list.forEach((customer: unknown, i) => {
        for (const { key, path } of externalUserIds(customer, i, ctx)) {
          const first = holder.get(key);
          if (first === undefined) holder.set(key, i);
          else if (first !== i) {
            ctx.addIssue('repeated_values_for_unique_customer_detail_namespace', `external_user_id ${shown(JSON.parse(key))} is also given for customer ${String(first)}.`, path);
          }
        }
      });
    },
  },
  uniqueInList('EnergyCustomer.consents', 'children_with_duplicate_values', consentType, (t) => `Consent type ${t} is given more than once.`, (i) => [i, 'type']),
  uniqueInList('EnergyAccount.consents', 'children_with_duplicate_values', consentType, (t) => `Consent type ${t} is given more than once.`, (i) => [i, 'type']),
];

/** A consent's type (the document leaves it untyped, so it is compared as JSON). */
function consentType(entry: unknown, i: number, ctx: CrossFieldContext): string | undefined {
  if (!isRecord(entry) || entry.type === undefined || !ctx.parsed([i, 'type'])) return undefined;
  return JSON.stringify(entry.type);
}

/* The business ------------------------------------------------------------------------------- */

/**
 * A Companies House number in its standard eight-character form: eight digits (leading zeros may be
 * left off), or a one- or two-letter register prefix (SC, NI, OC, R…) padded with zeros to eight, or
 * a society number such as IP12345R. Spaces and case are not significant. Null when it is none of these.
 */
export function standardCompanyNumber(s: string): string | null {
  const n = s.replace(/\s+/g, '').toUpperCase();
  let m: RegExpMatchArray | null;
  if (/^\d{1,8}$/.test(n)) return n.padStart(8, '0');
  if ((m = /^([A-Z]{1,2})(\d{1,7})$/.exec(n)) && m[1] && m[2] && m[1].length + m[2].length <= 8) return m[1] + m[2].padStart(8 - m[1].length, '0');
  if (/^[A-Z]{2}\d{5}[A-Z]$/.test(n)) return n;
  return null;
}

/** A company number field: blank means none was given (the fields are optional), otherwise standardised. */
const companyNumber = (at: string) =>
  stringRule(at, 'invalid_company_number', (s) => `${shown(s)} is not a valid company number.`, (s) => s.trim() === '' || standardCompanyNumber(s) !== null, {
    normalise: (s) => (s.trim() === '' ? s : (standardCompanyNumber(s) ?? s)),
  });

/**
 * Settings for a portfolio need a reference naming it (read as the document states it). Applied to
 * the account's portfolio only: a business portfolio must list a reference anyway (min_items).
 */
const portfolioReferencesMissing: RuleSpec = {
  at: 'AccountPortfolio',
  codes: ['portfolio_references_missing'],
  cross: (portfolio, ctx) => {
    if (!isRecord(portfolio) || !provided(portfolio.portfolio_settings) || provided(portfolio.portfolio_references)) return;
    ctx.addIssue('portfolio_references_missing', 'Portfolio settings need a portfolio reference naming the portfolio.', ['portfolio_references']);
  },
};

/** One namespace identifies a portfolio only once. */
const duplicatePortfolioReferences = (at: 'AccountPortfolio' | 'BusinessPortfolio'): RuleSpec => ({
  at,
  codes: ['duplicate_portfolio_references'],
  cross: (portfolio, ctx) => {
    if (!isRecord(portfolio) || !Array.isArray(portfolio.portfolio_references)) return;
    const seen = new Set<string>();
    portfolio.portfolio_references.forEach((ref: unknown, i) => {
      const ns = parsedString(ref, 'namespace', ctx, ['portfolio_references', i]);
      if (ns === undefined) return;
      if (seen.has(ns)) ctx.addIssue('duplicate_portfolio_references', `Portfolio reference namespace ${shown(ns)} is given more than once.`, ['portfolio_references', i, 'namespace']);
      seen.add(ns);
    });
  },
});

const business: RuleSpec[] = [
  companyNumber('EnergyAccount.company_number'),
  companyNumber('BaseBusiness.company_number'),
  companyNumber('BusinessWithExistingContracts.company_number'),
  uniqueInList('BaseBusiness.details', 'children_with_duplicate_values', entryKey('key'), (k) => `Business detail ${shown(k)} is given more than once.`, (i) => [i, 'key']),
  uniqueInList('BusinessWithExistingContracts.details', 'children_with_duplicate_values', entryKey('key'), (k) => `Business detail ${shown(k)} is given more than once.`, (i) => [i, 'key']),
  {
    at: 'BusinessWithExistingContracts',
    codes: ['missing_contract_identifier'],
    cross: (b, ctx) => {
      if (!isRecord(b)) return;
      const many = Array.isArray(b.business_contract_identifiers) && b.business_contract_identifiers.some((id) => provided(id));
      if (many || provided(b.business_contract_identifier)) return;
      ctx.addIssue('missing_contract_identifier', 'Give the business contract identifiers (business_contract_identifiers) to link the account with.', ['business_contract_identifiers']);
    },
  },
  portfolioReferencesMissing,
  duplicatePortfolioReferences('AccountPortfolio'),
  duplicatePortfolioReferences('BusinessPortfolio'),
];

/* Campaigns ---------------------------------------------------------------------------------- */

/** How a campaign entry names its campaign: by name, by slug, or (undefined) not exactly one of them. */
function campaignIdentifier(entry: unknown): { by: 'campaign_name' | 'slug'; value: string } | undefined {
  if (!isRecord(entry)) return undefined;
  const name = provided(entry.campaign_name);
  const slug = provided(entry.slug);
  if (name === slug) return undefined;
  const by = name ? 'campaign_name' : 'slug';
  return typeof entry[by] === 'string' ? { by, value: entry[by] } : undefined;
}

const campaigns: RuleSpec[] = [
  {
    at: 'AccountCampaign',
    codes: ['campaign_name_and_slug_provided', 'campaign_name_or_slug_not_provided'],
    cross: (c, ctx) => {
      if (!isRecord(c)) return;
      const name = provided(c.campaign_name);
      const slug = provided(c.slug);
      if (name && slug) ctx.addIssue('campaign_name_and_slug_provided', 'Name the campaign by campaign_name or by slug, not both.', []);
      if (!name && !slug) ctx.addIssue('campaign_name_or_slug_not_provided', 'Name the campaign by campaign_name or by slug.', []);
    },
  },
  {
    at: 'EnergyAccount.account_campaigns',
    codes: ['inconsistent_campaign_identifiers'],
    // The first campaign that names itself one way sets the way for the rest.
    cross: (list, ctx) => {
      if (!Array.isArray(list)) return;
      let way: string | undefined;
      list.forEach((entry: unknown, i) => {
        const id = campaignIdentifier(entry);
        if (!id) return;
        way ??= id.by;
        if (id.by !== way) ctx.addIssue('inconsistent_campaign_identifiers', `Campaigns are named by ${way} in this account; name this one the same way.`, [i, id.by]);
      });
    },
  },
  {
    at: 'EnergyAccount.account_campaigns',
    codes: ['duplicate_account_campaigns'],
    cross: (list, ctx) => {
      if (!Array.isArray(list)) return;
      const seen = new Set<string>();
      list.forEach((entry: unknown, i) => {
        const id = campaignIdentifier(entry);
        if (!id || !ctx.parsed([i, id.by])) return;
        const key = `${id.by}:${id.value}`;
        if (seen.has(key)) ctx.addIssue('duplicate_account_campaigns', `Campaign ${shown(id.value)} is given more than once.`, [i, id.by]);
        seen.add(key);
      });
    },
  },
];

/* Complaints, PSR, warm home discount, commission contracts ----------------------------------- */

const OFFICIAL_FIELDS = ['official_entity', 'official_reference_number', 'official_status'] as const;

const others: RuleSpec[] = [
  {
    at: 'Complaint',
    codes: ['official_complaint_field_missing'],
    // Any one of the official fields makes the complaint an official one, which then needs all three.
    cross: (complaint, ctx) => {
      if (!isRecord(complaint) || !OFFICIAL_FIELDS.some((f) => provided(complaint[f]))) return;
      for (const f of OFFICIAL_FIELDS) {
        if (!provided(complaint[f])) ctx.addIssue('official_complaint_field_missing', `An official complaint needs ${f} as well.`, [f]);
      }
    },
  },
  {
    at: 'Complaint',
    codes: ['chsr_letter_not_sent'],
    cross: (complaint, ctx) => {
      if (!isRecord(complaint) || !ctx.parsed(['has_eight_week_letter_been_sent']) || !ctx.parsed(['has_chsr_letter_been_sent'])) return;
      if (complaint.has_eight_week_letter_been_sent === true && complaint.has_chsr_letter_been_sent === false) {
        ctx.addIssue('chsr_letter_not_sent', 'An eight-week letter was sent, so a CHSR letter must have been sent too.', ['has_chsr_letter_been_sent']);
      }
    },
  },
  {
    at: 'EnergyPSR',
    codes: ['psr_industry_code_not_provided'],
    cross: (psr, ctx) => {
      if (!isRecord(psr) || provided(psr.elec_industry_code) || provided(psr.gas_industry_code)) return;
      ctx.addIssue('psr_industry_code_not_provided', 'A PSR entry needs an electricity or a gas industry code.', []);
    },
  },
  // A tax year runs across two calendar years: "2018/19".
  stringRule('EnergyWarmHomeDiscount.tax_year', 'incorrect_format_for_tax_year', (s) => `${shown(s)} is not a tax year such as 2018/19.`, (s) => {
    const m = /^(\d{4})\/(\d{2})$/.exec(s);
    return m !== null && (Number(m[1]) + 1) % 100 === Number(m[2]);
  }),
  // Commission is paid per supply point: an MPAN core or an MPRN, checked as the meter points' own are.
  stringRule('EnergyCommissionContract.mpxn', 'invalid_supply_point_identifier', (s) => `${shown(s)} is neither a valid MPAN core nor a valid MPRN.`, (s) => isValidMpanCore(s) || isValidMprn(s)),
];

export const peopleRules: RuleSpec[] = [...customers, ...business, ...campaigns, ...others];
